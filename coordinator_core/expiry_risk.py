"""Per group, what an expiration plan means for it: offsets already expired, offsets about to expire.

The plan (:func:`~offsetops.coordinator_core.expiration.plan_expiration`, GroupMetadataManager's
cleanupGroupMetadata) lists tombstones and forecast entries one offset at a time; operators think in
groups. :func:`group_risks` folds the plan per group, and each group's :class:`GroupRisk` is a
finding of the one findings model: CRITICAL when offsets are past retention (the next cleanup deletes
them, or the group itself), DEGRADED when some expire within the forecast window. They are ranked
by :func:`offsetops.coordinator_core.findings.finding_key`: lost first, then the soonest expiry.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from offsetops.coordinator_core.expiration import ExpirationPlan
from offsetops.coordinator_core.findings import CRITICAL, DEGRADED, Finding, finding_key

__all__ = ["GroupRisk", "group_risks", "risk_findings"]

EXPIRED_REMEDY = (
    "if the group is still in use, stop it and reset its offsets to a known position "
    "(kafka-consumer-groups --reset-offsets) before it resumes; raise offsets.retention.minutes if idle "
    "groups must survive longer"
)
EXPIRING_REMEDY = (
    "restart (or commit from) the group before the offsets expire if it is still needed; otherwise "
    "cleanup deletes them (offsets.retention.minutes)"
)


@dataclass(frozen=True, slots=True)
class GroupRisk:
    """One group's expiry risk under the plan's retention and clock."""

    group_id: str
    offsets_partition: int | None
    expired_offsets: int  # offset tombstones the plan holds for it (past retention now)
    dead: bool  # the plan deletes the group itself
    expiring_offsets: int  # alive now, expire within the forecast window
    first_expires_at: int | None  # the soonest expiry among the expiring offsets
    first_expires_in_ms: int | None

    @property
    def severity(self) -> str:
        return CRITICAL if self.expired_offsets or self.dead else DEGRADED

    @property
    def code(self) -> str:
        if self.expired_offsets:
            return "offsets_expired"
        return "group_deleted" if self.dead else "offsets_expiring"

    def finding(self) -> Finding:
        if self.severity == CRITICAL:
            what = f"{self.expired_offsets} committed offset(s) past retention" + (
                "; the group itself is deleted" if self.dead else ""
            )
            remedy = EXPIRED_REMEDY
        else:
            what = f"{self.expiring_offsets} committed offset(s) expire within the forecast window"
            remedy = EXPIRING_REMEDY
        return Finding(
            self.severity,
            self.code,
            what,
            remedy,
            partition=self.offsets_partition,
            groups=(self.group_id,),
            expires_at_ms=None if self.severity == CRITICAL else self.first_expires_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "code": self.code,
            "expired_offsets": self.expired_offsets,
            "group_deleted": self.dead,
            "expiring_offsets": self.expiring_offsets,
            "first_expires_at": self.first_expires_at,
            "first_expires_in_ms": self.first_expires_in_ms,
        }


def group_risks(plan: ExpirationPlan) -> list[GroupRisk]:
    """Every group the plan touches, worst first (lost, then the soonest expiry)."""
    expired: dict[tuple[int | None, str], int] = {}
    for t in plan.tombstones:
        if t.kind == "offset_commit":
            expired[(t.offsets_partition, t.group_id)] = expired.get((t.offsets_partition, t.group_id), 0) + 1
    dead = {(d.offsets_partition, d.group_id) for d in plan.dead_groups}
    expiring: dict[tuple[int | None, str], list[Any]] = {}
    for f in plan.forecast:
        expiring.setdefault((f.offsets_partition, f.group_id), []).append(f)
    out = []
    for key in {*expired, *dead, *expiring}:
        soon = min(expiring.get(key, []), key=lambda f: f.expires_at, default=None)
        out.append(
            GroupRisk(
                key[1],
                key[0],
                expired.get(key, 0),
                key in dead,
                len(expiring.get(key, [])),
                None if soon is None else soon.expires_at,
                None if soon is None else soon.expires_in_ms,
            )
        )
    return sorted(out, key=lambda r: finding_key(r.finding()))


def risk_findings(risks: Iterable[GroupRisk]) -> list[Finding]:
    return [r.finding() for r in risks]
