"""Coordinator failover forecast: what a new coordinator must replay per offsets partition, and how long.

When the leader of ``__consumer_offsets-N`` moves, the new leader replays the whole partition from the
log start before it serves the partition's groups (``GroupMetadataManager.loadGroupsAndOffsets``, or
``CoordinatorRuntime`` scheduling a load in 3.6+); until then every JoinGroup, OffsetCommit and
OffsetFetch of those groups gets COORDINATOR_LOAD_IN_PROGRESS. The replay reads every byte of the
partition, so its time scales with the partition's size.

The rate is calibrated from the broker's own log lines when they are given:

- ``Finished loading offsets and group metadata from __consumer_offsets-N in X milliseconds`` (the
  Scala ``GroupMetadataManager``, up to 3.x);
- ``Finished loading of metadata from __consumer_offsets-N with epoch E in Xms ... Loaded R records
  which total to B bytes.`` and the ``LoadSummary(...)`` form (the Java ``CoordinatorRuntime``, 3.6+).

The Java lines carry the bytes loaded then; the Scala lines do not, so the partition's current size
stands in for it (it is a fair proxy only when the partition has not grown or been cleaned much since).
Without log lines a stated default rate is used. Loads under a few hundred milliseconds or a few
hundred KiB are dominated by fixed costs and are not used for calibration.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.cleaner.broker_log import _entries as log4j_entries
from offsetops.coordinator_core.timefmt import format_duration
from offsetops.coordinator_core.untrusted import iter_lines

OFFSETS_TOPIC = "__consumer_offsets"
# Assumed replay rate when no broker log calibrates it: 20 MiB/s. It is a conservative figure for a
# broker replaying uncompressed offsets records from page cache; a cold disk or compressed batches are
# slower, which is why calibrating with the broker's own log lines is better.
DEFAULT_BYTES_PER_SECOND = 20 * 1024 * 1024
DEFAULT_SLOW_MS = 10_000  # a 10 s COORDINATOR_LOAD_IN_PROGRESS stall is what consumers notice
_MIN_SAMPLE_MS = 200
_MIN_SAMPLE_BYTES = 256 * 1024

_SCALA = re.compile(r"Finished loading offsets and group metadata from (\S+?)-(\d+) in (\d+) milliseconds")
_JAVA = re.compile(
    r"Finished loading of metadata from (\S+?)-(\d+) with epoch (-?\d+) in (\d+)\s*ms"
    r"(?:.*?Loaded (\d+) records which total to (\d+) bytes)?"
)
_JAVA_SUMMARY = re.compile(
    r"Finished loading of metadata from (\S+?)-(\d+) with epoch (-?\d+) and LoadSummary=.*?"
    r"startTimeMs=(\d+).*?endTimeMs=(\d+).*?numRecords=(\d+).*?numBytes=(\d+)"
)


def format_load_time(ms: int) -> str:
    """``480 ms`` under a second, ``1.9 s`` under a minute (the scale of coordinator loads), else
    ``3 min``."""
    if ms < 1000:
        return f"{int(ms)} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return format_duration(ms)


@dataclass(frozen=True, slots=True)
class PartitionLoad:
    """What a new coordinator replays for one partition: the whole log, log start to log end."""

    partition: int
    bytes: int
    batches: int
    records: int  # data records (control records left out), the same count from a reload or an audit
    live_keys: int  # keys the cache ends up holding (groups, offsets, KIP-848 records)

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "bytes": self.bytes,
            "batches": self.batches,
            "data_records": self.records,
            "live_keys": self.live_keys,
        }


@dataclass(frozen=True, slots=True)
class ObservedLoad:
    """One "Finished loading" line of a broker log."""

    partition: int
    load_ms: int
    timestamp_ms: int | None
    records: int | None = None
    bytes: int | None = None
    source: str | None = None


def parse_load_lines(lines: Iterable[str], *, source: str | None = None) -> list[ObservedLoad]:
    """Every coordinator "Finished loading" entry for ``__consumer_offsets`` in log4j lines."""
    out: list[ObservedLoad] = []
    for ts, _level, text in log4j_entries(lines):
        first = text.split("\n", 1)[0]
        m = _JAVA_SUMMARY.search(first)
        if m and m.group(1) == OFFSETS_TOPIC:
            ms = int(m.group(5)) - int(m.group(4))
            out.append(ObservedLoad(int(m.group(2)), ms, ts, int(m.group(6)), int(m.group(7)), source))
            continue
        m = _JAVA.search(first)
        if m and m.group(1) == OFFSETS_TOPIC:
            rec = int(m.group(5)) if m.group(5) else None
            nbytes = int(m.group(6)) if m.group(6) else None
            out.append(ObservedLoad(int(m.group(2)), int(m.group(4)), ts, rec, nbytes, source))
            continue
        m = _SCALA.search(first)
        if m and m.group(1) == OFFSETS_TOPIC:
            out.append(ObservedLoad(int(m.group(2)), int(m.group(3)), ts, None, None, source))
    return out


def read_load_logs(paths: Iterable[str | os.PathLike[str]]) -> list[ObservedLoad]:
    """Parse broker logs (``server.log``); an unreadable file raises OSError naming it."""
    out: list[ObservedLoad] = []
    for path in paths:
        out.extend(parse_load_lines(iter_lines(path, kind="broker log"), source=str(path)))
    return out


@dataclass(frozen=True, slots=True)
class Calibration:
    bytes_per_second: float
    source: str  # "default" | "broker_log"
    samples: int
    note: str

    def to_json(self) -> dict[str, Any]:
        return {
            "bytes_per_second": round(self.bytes_per_second, 1),
            "source": self.source,
            "samples": self.samples,
            "note": self.note,
        }


def calibrate(loads: Iterable[PartitionLoad], observed: Iterable[ObservedLoad]) -> Calibration:
    """Bytes per second from the latest observed load of each partition (sum of bytes / sum of time)."""
    sizes = {pl.partition: pl.bytes for pl in loads}
    latest: dict[int, ObservedLoad] = {}
    for ob in observed:
        prev = latest.get(ob.partition)
        if prev is None or (ob.timestamp_ms or 0) >= (prev.timestamp_ms or 0):
            latest[ob.partition] = ob
    total_bytes = total_ms = samples = proxied = 0
    for part, ob in sorted(latest.items()):
        nbytes = ob.bytes if ob.bytes is not None else sizes.get(part)
        if nbytes is None or ob.load_ms < _MIN_SAMPLE_MS or nbytes < _MIN_SAMPLE_BYTES:
            continue
        proxied += ob.bytes is None
        total_bytes += nbytes
        total_ms += ob.load_ms
        samples += 1
    if not samples:
        why = (
            f"{len(latest)} partition load(s) in the broker log, none long enough to calibrate with "
            f"(at least {_MIN_SAMPLE_MS} ms and {_MIN_SAMPLE_BYTES // 1024} KiB)"
            if latest
            else "no broker log given"
        )
        return Calibration(
            DEFAULT_BYTES_PER_SECOND,
            "default",
            0,
            f"assumed {DEFAULT_BYTES_PER_SECOND / 2**20:.0f} MiB/s ({why}); give --broker-log to calibrate",
        )
    rate = total_bytes / (total_ms / 1000)
    note = f"{rate / 2**20:.1f} MiB/s measured from {samples} load(s) in the broker log"
    if proxied:
        note += f"; {proxied} of them give no byte count, so the partition's current size stands in"
    return Calibration(rate, "broker_log", samples, note)


@dataclass(frozen=True, slots=True)
class PartitionForecast:
    load: PartitionLoad
    estimated_ms: int
    observed_ms: int | None
    slow: bool

    def to_json(self) -> dict[str, Any]:
        return {
            **self.load.to_json(),
            "estimated_load_ms": self.estimated_ms,
            "observed_load_ms": self.observed_ms,
            "slow": self.slow,
        }


@dataclass(slots=True)
class FailoverForecast:
    """Per partition, worst first; :meth:`to_json` is the ``failover`` section of the audit JSON."""

    calibration: Calibration
    threshold_ms: int
    partitions: list[PartitionForecast] = field(default_factory=list)

    @property
    def slow(self) -> list[PartitionForecast]:
        return [p for p in self.partitions if p.slow]

    @property
    def worst(self) -> PartitionForecast | None:
        return self.partitions[0] if self.partitions else None

    def to_json(self) -> dict[str, Any]:
        worst = self.worst
        return {
            "calibration": self.calibration.to_json(),
            "threshold_ms": self.threshold_ms,
            "slow_partitions": [p.load.partition for p in self.slow],
            "worst_partition": None if worst is None else worst.load.partition,
            "worst_estimated_load_ms": None if worst is None else worst.estimated_ms,
            "partitions": [p.to_json() for p in self.partitions],
        }


def forecast_failover(
    loads: Iterable[PartitionLoad],
    *,
    observed: Iterable[ObservedLoad] = (),
    threshold_ms: int = DEFAULT_SLOW_MS,
) -> FailoverForecast:
    """Estimate each partition's load time after a failover and flag those above ``threshold_ms``.

    A partition counts as slow when its estimate, or its latest observed load, exceeds the threshold.
    """
    loads = list(loads)
    observed = list(observed)
    cal = calibrate(loads, observed)
    last_seen: dict[int, ObservedLoad] = {}
    for ob in observed:
        prev = last_seen.get(ob.partition)
        if prev is None or (ob.timestamp_ms or 0) >= (prev.timestamp_ms or 0):
            last_seen[ob.partition] = ob
    out = []
    for pl in loads:
        est = round(pl.bytes / cal.bytes_per_second * 1000)
        seen = last_seen.get(pl.partition)
        obs_ms = seen.load_ms if seen is not None else None
        out.append(PartitionForecast(pl, est, obs_ms, max(est, obs_ms or 0) > threshold_ms))
    out.sort(key=lambda p: (-max(p.estimated_ms, p.observed_ms or 0), p.load.partition))
    return FailoverForecast(cal, threshold_ms, out)


def loads_from_caches(caches: Iterable[Any]) -> list[PartitionLoad]:
    """From reloaded :class:`CoordinatorCache` s: what was read, and the keys the cache holds."""
    out = []
    for c in caches:
        if c.partition is None:
            continue
        keys = sum(1 + len(g.offsets) + len(g.members) for g in c.groups.values())
        s = c.stats
        out.append(PartitionLoad(c.partition, s.bytes, s.batches, s.records - s.control_records, keys))
    return out


def _field_reader(p: Any) -> Callable[[str], Any]:
    """``name -> value`` of a JSON object or of an object's attributes."""
    return p.get if isinstance(p, Mapping) else lambda name: getattr(p, name, None)


def loads_from_audit(partitions: Iterable[Any]) -> list[PartitionLoad]:
    """From the cleaner audit's partitions (``PartitionAudit`` s, or their JSON as in
    ``cleaner_audit.json``), which already scanned every batch (no second pass); live keys are the
    distinct keys the scan saw, tombstoned ones included (an upper bound)."""
    out = []
    for p in partitions:
        get = _field_reader(p)
        out.append(
            PartitionLoad(
                int(get("partition")),
                int(get("size_bytes")),
                int(get("batches")),
                int(get("data_records") if get("data_records") is not None else get("records")),
                int(get("distinct_keys")),
            )
        )
    return out
