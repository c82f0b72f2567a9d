"""Is the clock an expiration pass runs at plausible? (``offsets.retention.ms`` counts from it.)

Every offset older than ``now - offsets.retention.ms`` expires, so a mistyped ``--now`` (one digit too
many is the year 2508) turns a cleanup pass into a tombstone for every offset of the cluster. Before
anything destructive, the clock is compared with what can be known independently: the wall clock of
this host (a clock in the future beyond :data:`FUTURE_TOLERANCE_MS` is a mistake or a skewed host) and
the newest record time in the source (commit and group state timestamps are written by the group
coordinator, ``OffsetAndMetadata.commitTimestamp`` / ``GroupMetadata.currentStateTimestamp``): a clock
more than :data:`DATA_GAP_TOLERANCE_MS` beyond the point where every offset of the source has expired is
far from the data, and a clock before the newest record is behind it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.timefmt import iso_utc

__all__ = [
    "DATA_GAP_TOLERANCE_MS",
    "FUTURE_TOLERANCE_MS",
    "ClockFinding",
    "clock_findings",
    "newest_record_ms",
]

#: How far ahead of this host's wall clock an expiration clock may be (clock skew between hosts).
FUTURE_TOLERANCE_MS = 5 * 60 * 1000
#: How long after the point where every offset of the source has expired (the newest record plus the
#: retention) a clock may still be: a source idle for a month past its retention is plausible, years are
#: a typo or a wrong clock file.
DATA_GAP_TOLERANCE_MS = 30 * 24 * 60 * 60 * 1000


@dataclass(frozen=True, slots=True)
class ClockFinding:
    """One reason the clock looks wrong: a stable ``kind`` and a sentence for people."""

    kind: str  # clock_in_future | clock_past_all_data | clock_before_data
    message: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message}


def newest_record_ms(caches: Iterable[CoordinatorCache]) -> int | None:
    """The newest commit or group-state timestamp the coordinator wrote into the source (None if none)."""
    newest: int | None = None
    for cache in caches:
        for group in cache.groups.values():
            stamps = [om.commit_timestamp for om in group.offsets.values()]
            if group.current_state_timestamp is not None:
                stamps.append(group.current_state_timestamp)
            for ts in stamps:
                if ts is not None and ts >= 0 and (newest is None or ts > newest):
                    newest = ts
    return newest


def _span(ms: int) -> str:
    hours = ms / 3_600_000
    return f"{hours / 24:,.1f} days" if hours >= 48 else f"{hours:,.1f} hours"


def clock_findings(
    now_ms: int, *, wall_ms: int, newest_ms: int | None, retention_ms: int
) -> list[ClockFinding]:
    """What is implausible about expiring at ``now_ms`` (empty when nothing is)."""
    out: list[ClockFinding] = []
    when = iso_utc(now_ms) or str(now_ms)
    if now_ms > wall_ms + FUTURE_TOLERANCE_MS:
        out.append(
            ClockFinding(
                "clock_in_future",
                f"the clock {when} is {_span(now_ms - wall_ms)} ahead of this host's clock "
                f"(tolerance {FUTURE_TOLERANCE_MS // 60_000} minutes)",
            )
        )
    if newest_ms is None:
        return out
    newest = iso_utc(newest_ms) or str(newest_ms)
    if now_ms - newest_ms > retention_ms + DATA_GAP_TOLERANCE_MS:
        out.append(
            ClockFinding(
                "clock_past_all_data",
                f"the clock {when} is {_span(now_ms - newest_ms)} after the newest record in the source "
                f"({newest}), far beyond the retention of {_span(retention_ms)}: every offset would expire",
            )
        )
    elif newest_ms - now_ms > FUTURE_TOLERANCE_MS:
        out.append(
            ClockFinding(
                "clock_before_data",
                f"the clock {when} is {_span(newest_ms - now_ms)} before the newest record in the "
                f"source ({newest})",
            )
        )
    return out
