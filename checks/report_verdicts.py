"""What the operator report says: the JSON reports of one run, and the verdict of each section.

Each section's verdict is HEALTHY, DEGRADED, CRITICAL, or NOT RUN when its asset did not run; the
page's overall verdict is the worst of them (:func:`worst_verdict`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.findings import CRITICAL, DEGRADED, HEALTHY, rank, worst_first
from offsetops.coordinator_core.untrusted import read_regular_file

VERDICTS = (HEALTHY, DEGRADED, CRITICAL)
NOT_RUN = "NOT RUN"


def worst_verdict(*verdicts: str) -> str:
    """The worst of HEALTHY < DEGRADED < CRITICAL; sections that did not run are ignored."""
    ranked = [v for v in verdicts if v in VERDICTS]
    return max(ranked, key=rank) if ranked else NOT_RUN


@dataclass(frozen=True)
class ReportInputs:
    """The JSON documents of one run (None when that asset did not run)."""

    audit: dict[str, Any] | None
    plan: dict[str, Any] | None
    reload: dict[str, Any] | None
    validation: dict[str, Any] | None

    @classmethod
    def from_reports_dir(cls, reports_dir: str | Path) -> ReportInputs:
        d = Path(reports_dir)

        def load(name: str) -> dict[str, Any] | None:
            path = d / name
            if not path.exists():
                return None
            try:
                return json.loads(read_regular_file(path, kind="report"))
            except (OSError, ValueError) as exc:
                raise ReportInputError(f"{path}: not a readable JSON report ({exc})") from exc

        return cls(
            load("cleaner_audit.json"),
            load("expiration_plan.json"),
            load("reload.json"),
            load("validation.json"),
        )


class ReportInputError(ValueError):
    """A report file exists but cannot be read; the message names it."""


def audit_verdict(audit: Mapping[str, Any] | None) -> str:
    return str(audit["verdict"]) if audit else NOT_RUN


def plan_verdict(plan: Mapping[str, Any] | None) -> str:
    """CRITICAL when committed offsets have already expired (groups lost them), DEGRADED when some
    expire within the forecast window, else HEALTHY."""
    if not plan:
        return NOT_RUN
    s = plan.get("summary", {})
    if s.get("offset_tombstones", 0) or s.get("dead_groups", 0):
        return CRITICAL
    if s.get("forecast_offsets", 0):
        return DEGRADED
    return HEALTHY


def failover_verdict(audit: Mapping[str, Any] | None) -> str:
    """DEGRADED when a partition's replay after a coordinator failover would exceed the threshold (its
    groups would see COORDINATOR_LOAD_IN_PROGRESS that long); the forecast rides on the audit."""
    failover = (audit or {}).get("failover")
    if not isinstance(failover, Mapping) or "partitions" not in failover:
        return NOT_RUN
    return DEGRADED if failover.get("slow_partitions") else HEALTHY


def failover_load_ms(partition: Mapping[str, Any]) -> int:
    """A partition's expected load: its estimate, or its last observed load when that was longer."""
    return max(int(partition["estimated_load_ms"]), int(partition.get("observed_load_ms") or 0))


def validation_verdict(validation: Mapping[str, Any] | None) -> str:
    """CRITICAL when an error-level expectation failed, DEGRADED for a warning, else HEALTHY."""
    if not validation:
        return NOT_RUN
    if not validation.get("success_error_level", False):
        return CRITICAL
    return HEALTHY if validation.get("success", False) else DEGRADED


def reload_verdict(reload: Mapping[str, Any] | None) -> str:
    """CRITICAL when records could not be decoded: the cache may not be what the coordinator holds."""
    if not reload:
        return NOT_RUN
    return CRITICAL if reload.get("counts", {}).get("decode_errors", 0) else HEALTHY


def section_verdicts(inputs: ReportInputs) -> dict[str, str]:
    """The verdict of each section, in page order."""
    return {
        "cleaner audit": audit_verdict(inputs.audit),
        "failover": failover_verdict(inputs.audit),
        "expiration": plan_verdict(inputs.plan),
        "reload": reload_verdict(inputs.reload),
        "validation": validation_verdict(inputs.validation),
    }


def sorted_partitions(audit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Audited partitions in the one worst-first order (:mod:`offsetops.coordinator_core.findings`)."""
    return worst_first(audit.get("partitions", []))
