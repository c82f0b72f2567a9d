"""The findings about the broker scans themselves: a file that cannot be used, two files of one broker,
a scan dated in the future. Each is a DEGRADED topic reason; the other brokers are judged all the same."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from offsetops.coordinator_core.cleaner.model import DEGRADED, Reason
from offsetops.coordinator_core.timefmt import format_duration

if TYPE_CHECKING:
    from offsetops.coordinator_core.cleaner.collect import BrokerScan

__all__ = ["duplicate_scan_reason", "future_scan_reason", "unusable_scan_reason"]


def duplicate_scan_reason(broker_id: int, chosen: Path, files: Sequence[Path]) -> Reason:
    others = ", ".join(f.name for f in files if f != chosen)
    return Reason(
        DEGRADED,
        "duplicate_broker_scan",
        f"broker {broker_id} has {len(files)} scans: {chosen.name} is used, {others} ignored",
        f"remove the extra files of broker {broker_id} from the scans volume; collectors write "
        f"broker-<id>.json with the id as the broker writes it (broker-{broker_id}.json)",
    )


def unusable_scan_reason(problems: Sequence[str]) -> Reason:
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    return Reason(
        DEGRADED,
        "unusable_broker_scan",
        f"{len(problems)} broker scan(s) could not be used, so those brokers are not judged: {shown}",
        "check the collector beside each broker named (its CronJob or sidecar logs) and what else writes "
        "to the shared scans volume; only regular files written by `offsetops broker-scan` are read",
    )


def future_scan_reason(scan: BrokerScan, ahead_ms: int, skew_ms: int) -> Reason:
    return Reason(
        DEGRADED,
        "future_broker_scan",
        f"broker {scan.broker_id}'s scan ({scan.source}) is dated {format_duration(ahead_ms)} after this "
        f"audit's clock (tolerance {format_duration(skew_ms)}), so its age, and whether its collector "
        "has stopped, cannot be told",
        f"check the clock (NTP) of the node running the collector beside broker {scan.broker_id}, or the "
        "audit's --now",
    )
