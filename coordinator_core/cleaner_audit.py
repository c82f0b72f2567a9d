"""Log Cleaner health of ``__consumer_offsets``, per partition and for the topic (``LogCleanerManager``).

For each partition of a broker log dir this computes what ``LogCleanerManager.cleanableOffsets`` and
``LogToClean`` would (clean bytes, cleanable bytes, dirty ratio, first dirty and first uncleanable
offsets, with the checkpoint reset rules), why cleaning stops where it does (active segment, last
stable offset held by an open transaction, high watermark, ``min.compaction.lag.ms``), whether
``grabFilthiestCompactedLog`` would pick the partition, and what a full clean would reclaim, measured
by scanning every record. History (earlier audits), broker logs and JMX metrics add progress and
thread-health signals. Every finding becomes a :class:`Reason` with a remedy, and the worst one sets
the verdict: HEALTHY, DEGRADED or CRITICAL. The operator's guide is ``docs/cleaner-audit.md``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from offsetops.coordinator_core.cleaner.broker_log import BrokerLogReport, CleanerEvent
from offsetops.coordinator_core.cleaner.config import CleanerConfig, ClusterConfig
from offsetops.coordinator_core.cleaner.history import AuditHistory, PartitionSnapshot, Progress
from offsetops.coordinator_core.cleaner.metrics import CleanerMetrics
from offsetops.coordinator_core.errors import DecodeError, OffsetsDecodeException
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.schema.control import decode_control_key
from offsetops.coordinator_core.schema.types import SchemaError
from offsetops.coordinator_core.sources.logdir import (
    OFFSETS_TOPIC,
    REPLICATION_CHECKPOINT,
    LogDir,
    LogDirError,
    PartitionDir,
    open_log_dir,
    read_offset_checkpoint,
)
from offsetops.coordinator_core.timefmt import format_duration

__all__ = [
    "CRITICAL",
    "DEGRADED",
    "HEALTHY",
    "CleanerAudit",
    "OffsetsToClean",
    "OpenTransaction",
    "PartitionAudit",
    "PartitionFailure",
    "Reason",
    "SegmentInfo",
    "Thresholds",
    "audit_log_dir",
    "audit_partition",
    "audit_partition_isolated",
    "calculate_cleanable_bytes",
    "cleanable_offsets",
    "format_duration",
    "log_to_clean",
    "max_compaction_delay",
    "max_dirty_ratio",
]

HEALTHY, DEGRADED, CRITICAL = "HEALTHY", "DEGRADED", "CRITICAL"
_RANK = {HEALTHY: 0, DEGRADED: 1, CRITICAL: 2}


@dataclass(frozen=True)
class Thresholds:
    """When a finding turns a verdict DEGRADED or CRITICAL (defaults: docs/cleaner-audit.md)."""

    #: an open transaction older than this is "hanging" (transaction.max.timeout.ms defaults to 15 min,
    #: so a healthy coordinator has aborted anything this old)
    hanging_transaction_ms: int = 3_600_000
    #: no checkpoint progress for this long while eligible = the cleaner is dead (CRITICAL)
    no_progress_ms: int = 86_400_000
    #: distinct dirty keys / dedupe map capacity at or above this = tight (DEGRADED)
    dedupe_tight_ratio: float = 0.9
    #: this many expired tombstones within the cleanable range = DEGRADED
    expired_tombstones_min: int = 1
    #: partition growth since the previous audit above this many bytes per hour = DEGRADED
    growth_bytes_per_hour: float = 1024**3
    #: JMX time-since-last-run-ms above this = DEGRADED (the cleaner loop backs off 15 s between runs)
    time_since_last_run_ms: int = 3_600_000
    #: JMX max-clean-time-secs above this = DEGRADED
    max_clean_time_secs: float = 3600.0
    #: bytes compaction would drop from an active segment that no append has rolled in time; from this
    #: many on it is a finding (8 MiB: a coordinator replays them on every load of the partition)
    dirty_active_segment_bytes: int = 8 * 1024 * 1024

    def with_overrides(self, values: Mapping[str, str]) -> Thresholds:
        """A copy with ``name=value`` overrides (names are the field names)."""
        updates: dict[str, Any] = {}
        for name, raw in values.items():
            f = self.__dataclass_fields__.get(name)
            if f is None:
                known = ", ".join(self.__dataclass_fields__)
                raise ValueError(f"unknown threshold {name!r}; known: {known}")
            kind = type(f.default)
            try:
                updates[name] = kind(float(raw)) if kind is int else kind(raw)
            except ValueError as exc:
                raise ValueError(f"threshold {name}={raw!r}: {exc}") from exc
        return dataclasses.replace(self, **updates)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class Reason:
    """One finding: how bad, a stable code, what is wrong in plain words, and what to do about it."""

    severity: str
    code: str
    message: str
    remedy: str

    def to_json(self) -> dict[str, str]:
        return {"severity": self.severity, "code": self.code, "message": self.message, "remedy": self.remedy}


def worst(reasons: Sequence[Reason]) -> str:
    return max((r.severity for r in reasons), key=_RANK.__getitem__, default=HEALTHY)


# --------------------------------------------------------------------------------------------------
# LogCleanerManager arithmetic, as pure functions over a segment list
# --------------------------------------------------------------------------------------------------


class SegmentLike(Protocol):
    base_offset: int
    size: int
    largest_timestamp: int
    first_batch_timestamp: int


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What the cleaner knows of one segment (``LogSegment``), filled in by a scan.

    ``largest_timestamp`` is the largest batch max timestamp, or the file's last-modified time when no
    batch has one (``LogSegment.largestTimestamp``). ``first_batch_timestamp`` is the max timestamp of
    the first batch, -1 when there is none (``LogSegment.getFirstBatchTimestamp``).
    """

    base_offset: int
    size: int
    largest_timestamp: int
    first_batch_timestamp: int = -1
    mtime_ms: int = 0
    next_offset: int | None = None


def _floor_index(segments: Sequence[SegmentLike], offset: int) -> int | None:
    found = None
    for i, s in enumerate(segments):
        if s.base_offset <= offset:
            found = i
        else:
            break
    return found


def log_segments(segments: Sequence[SegmentLike], start: int, end: int) -> list[SegmentLike]:
    """``LocalLog.segments(from, to)``: from the segment holding ``start`` (or the first) up to
    base offsets below ``end``."""
    if start == end:
        return []
    if end < start:
        raise ValueError(f"invalid segment range [{start}, {end})")
    i = _floor_index(segments, start)
    return [s for s in segments[i or 0 :] if s.base_offset < end]


def non_active_segments_from(segments: Sequence[SegmentLike], start: int) -> list[SegmentLike]:
    """``UnifiedLog.nonActiveLogSegmentsFrom``: every segment from ``start`` up to the active one."""
    active = segments[-1]
    if start > active.base_offset:
        return []
    return log_segments(segments, start, active.base_offset)


@dataclass(frozen=True, slots=True)
class OffsetsToClean:
    """``OffsetsToClean`` plus the bounds that produced ``first_uncleanable_dirty_offset``."""

    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    force_update_checkpoint: bool
    #: None, "below_log_start" or "above_log_end" (the two reset rules of cleanableOffsets)
    checkpoint_reset: str | None
    #: "last_stable_offset" / "active_segment" / "min_compaction_lag" -> offset
    bounds: dict[str, int]


def cleanable_offsets(
    segments: Sequence[SegmentLike],
    *,
    log_start_offset: int,
    log_end_offset: int,
    checkpoint: int | None,
    last_stable_offset: int,
    min_compaction_lag_ms: int,
    now_ms: int,
) -> OffsetsToClean:
    """``LogCleanerManager.cleanableOffsets``: the first dirty offset (checkpoint, reset to the log start
    when below it or beyond the log end) and the first offset the cleaner may not pass."""
    candidate = checkpoint if checkpoint is not None else log_start_offset
    if candidate < log_start_offset:
        first_dirty, reset = log_start_offset, "below_log_start"
    elif candidate > log_end_offset:
        first_dirty, reset = log_start_offset, "above_log_end"
    else:
        first_dirty, reset = candidate, None
    bounds = {"last_stable_offset": last_stable_offset, "active_segment": segments[-1].base_offset}
    lag = max(min_compaction_lag_ms, 0)
    if lag > 0:
        for s in non_active_segments_from(segments, first_dirty):
            if s.largest_timestamp > now_ms - lag:
                bounds["min_compaction_lag"] = s.base_offset
                break
    uncleanable = min(bounds.values())
    return OffsetsToClean(first_dirty, max(first_dirty, uncleanable), reset is not None, reset, bounds)


def calculate_cleanable_bytes(
    segments: Sequence[SegmentLike], first_dirty_offset: int, uncleanable_offset: int
) -> tuple[int, int]:
    """``LogCleanerManager.calculateCleanableBytes``: (base of the first uncleanable segment, cleanable
    bytes), where that segment is the one holding ``uncleanable_offset`` or else the active one."""
    later = non_active_segments_from(segments, uncleanable_offset)
    first_uncleanable = (later[0] if later else segments[-1]).base_offset
    span = log_segments(segments, min(first_dirty_offset, first_uncleanable), first_uncleanable)
    return first_uncleanable, sum(s.size for s in span)


@dataclass(frozen=True, slots=True)
class LogToClean:
    """``LogToClean``: clean bytes (segments below the first dirty offset), cleanable bytes, ratio."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def log_to_clean(
    segments: Sequence[SegmentLike], first_dirty_offset: int, uncleanable_offset: int
) -> LogToClean:
    clean = sum(s.size for s in log_segments(segments, -1, first_dirty_offset))
    first_uncleanable, cleanable = calculate_cleanable_bytes(segments, first_dirty_offset, uncleanable_offset)
    return LogToClean(first_dirty_offset, first_uncleanable, clean, cleanable)


def max_compaction_delay(
    segments: Sequence[SegmentLike], first_dirty_offset: int, max_compaction_lag_ms: int, now_ms: int
) -> int:
    """``LogCleanerManager.maxCompactionDelay``: how far past ``max.compaction.lag.ms`` the earliest
    first-batch timestamp of a dirty non-active segment is (0 = no need to compact now)."""
    stamps = [
        s.first_batch_timestamp
        for s in non_active_segments_from(segments, first_dirty_offset)
        if s.first_batch_timestamp > 0
    ]
    earliest = min(stamps) if stamps else 2**63 - 1
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


# --------------------------------------------------------------------------------------------------
# Scanning a partition
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    """A transaction with data but no COMMIT/ABORT marker yet; it holds the LSO at ``first_offset``."""

    producer_id: int
    producer_epoch: int
    first_offset: int
    first_timestamp_ms: int
    age_ms: int

    def to_json(self) -> dict[str, int]:
        return {
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "first_offset": self.first_offset,
            "age_ms": self.age_ms,
        }


# key-table entry slots (a list per key keeps the scan to one dict lookup per record)
_LAST, _SHARE, _EXPIRED, _FIRST_DIRTY, _FIRST = range(5)
# _EXPIRED states of the latest record of a key: a value (or a tombstone the next pass keeps), a tombstone
# the next pass removes, and a v2 tombstone whose batch has no delete horizon yet (KIP-534: the next
# pass keeps it and stamps the horizon, a pass after that horizon removes it).
_KEEP, _REMOVABLE, _NO_HORIZON = 0, 1, 2


@dataclass
class _Scan:
    segments: list[SegmentInfo] = field(default_factory=list)
    batches: int = 0
    records: int = 0
    control_batches: int = 0
    tombstones: int = 0
    keyless_records: int = 0
    aborted_records: int = 0
    superseded_records: int = 0
    reclaimable_bytes: float = 0.0
    #: base offset of the active segment, and the reclaimable bytes that sit in it (never cleaned)
    active_base: int = 2**63 - 1
    active_reclaimable_bytes: float = 0.0
    open_txns: dict[int, list[Any]] = field(default_factory=dict)
    keys: dict[int, list[Any]] = field(default_factory=dict)
    errors: list[DecodeError] = field(default_factory=list)

    def reclaim(self, offset: int, share: float) -> None:
        """A record a full clean drops (superseded, aborted or keyless)."""
        self.reclaimable_bytes += share
        if offset >= self.active_base:
            self.active_reclaimable_bytes += share

    def apply(self, h: int, offset: int, share: float, expired: int, dirty_from: int) -> None:
        """Last writer wins by offset: whichever of the old and new record is older is superseded."""
        entry = self.keys.get(h)
        if entry is None:
            self.keys[h] = [offset, share, expired, offset if offset >= dirty_from else -1, offset]
            return
        self.superseded_records += 1
        if offset > entry[_LAST]:
            self.reclaim(entry[_LAST], entry[_SHARE])
            entry[_LAST], entry[_SHARE], entry[_EXPIRED] = offset, share, expired
        else:
            self.reclaim(offset, share)
        if offset >= dirty_from and (entry[_FIRST_DIRTY] < 0 or offset < entry[_FIRST_DIRTY]):
            entry[_FIRST_DIRTY] = offset
        entry[_FIRST] = min(entry[_FIRST], offset)


def _scan_partition(
    pdir: PartitionDir, *, dirty_from: int, delete_retention_ms: int, now_ms: int, verify_crc: bool
) -> _Scan:
    """One pass over every batch: segment timestamps, transactions, and the key table."""
    scan = _Scan()
    if pdir.segments:
        scan.active_base = pdir.segments[-1].base_offset
    errors = scan.errors
    for seg in pdir.segments:
        first_ts, largest, next_offset, n = -1, -1, None, 0
        for batch in iter_segment_batches(
            seg.path, partition=pdir.partition, errors=errors, verify_crc=verify_crc
        ):
            if n == 0:
                first_ts = batch.max_timestamp
            n += 1
            largest = max(largest, batch.max_timestamp)
            next_offset = batch.next_offset
            scan.batches += 1
            try:
                records = batch.records()
            except OffsetsDecodeException as exc:
                errors.append(exc.error)
                continue
            pid = batch.producer_id
            if batch.is_control:
                scan.control_batches += 1
                _end_transaction(
                    scan, batch.producer_id, records, dirty_from, errors, pdir, batch.base_offset
                )
                continue
            share = batch.size / max(len(records), 1)
            horizon = batch.delete_horizon_ms
            pending: list[tuple[int, int, float, int]] | None = None
            if batch.is_transactional and pid >= 0:
                txn = scan.open_txns.get(pid)
                if txn is None:
                    ts = batch.max_timestamp if batch.max_timestamp >= 0 else batch.base_timestamp
                    txn = [batch.base_offset, ts if ts >= 0 else seg.mtime_ms, batch.producer_epoch, []]
                    scan.open_txns[pid] = txn
                pending = txn[3]
            for offset, ts, key, value in records:
                scan.records += 1
                if key is None:
                    # the cleaner drops records without a key (counted as invalid messages)
                    scan.keyless_records += 1
                    scan.reclaim(offset, share)
                    continue
                expired = _KEEP
                if value is None:
                    scan.tombstones += 1
                    if horizon is not None:
                        # LogCleaner.shouldRetainRecord: kept while currentTime < deleteHorizonMs
                        expired = _REMOVABLE if now_ms >= horizon else _KEEP
                    elif batch.magic >= 2 and offset >= dirty_from:
                        expired = _NO_HORIZON
                    else:
                        # Magic 0/1, or a v2 tombstone in the clean section that a pass left without a
                        # horizon (so the broker that cleaned it predates KIP-534, 3.1): the pre-KIP-534
                        # rule keys on the last clean segment's mtime; the record timestamp stands in.
                        stamp = ts if ts >= 0 else seg.mtime_ms
                        expired = _REMOVABLE if now_ms - stamp > delete_retention_ms else _KEEP
                if pending is not None:
                    pending.append((hash(key), offset, share, expired))
                else:
                    scan.apply(hash(key), offset, share, expired, dirty_from)
        scan.segments.append(
            SegmentInfo(
                base_offset=seg.base_offset,
                size=seg.size,
                largest_timestamp=largest if largest >= 0 else seg.mtime_ms,
                first_batch_timestamp=first_ts,
                mtime_ms=seg.mtime_ms,
                next_offset=next_offset,
            )
        )
    return scan


def _end_transaction(
    scan: _Scan,
    producer_id: int,
    records: list[tuple[int, int, bytes | None, bytes | None]],
    dirty_from: int,
    errors: list[DecodeError],
    pdir: PartitionDir,
    base_offset: int,
) -> None:
    for _offset, _ts, key, _value in records:
        if key is None:
            continue
        try:
            ctl = decode_control_key(key)
        except SchemaError as exc:
            errors.append(DecodeError("corrupt_key", str(exc), None, pdir.partition, None, base_offset))
            continue
        if not (ctl.is_commit or ctl.is_abort):
            continue
        txn = scan.open_txns.pop(producer_id, None)
        if txn is None:
            continue
        if ctl.is_abort:
            # aborted transactional data is removed by the cleaner whatever its key
            for _h, off, share, _exp in txn[3]:
                scan.aborted_records += 1
                scan.reclaim(off, share)
        else:
            for h, off, share, expired in txn[3]:
                scan.apply(h, off, share, expired, dirty_from)


# --------------------------------------------------------------------------------------------------
# The audit of one partition
# --------------------------------------------------------------------------------------------------


@dataclass
class PartitionAudit:
    """Everything the audit found for one partition; :meth:`to_json` is the ``partitions[]`` contract."""

    partition: int
    size_bytes: int
    segments: int
    log_start_offset: int
    log_end_offset: int
    checkpoint: int | None
    checkpoint_reset: str | None
    high_watermark: int | None
    last_stable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    dirty_ratio: float
    first_dirty_offset: int
    first_uncleanable_offset: int
    first_uncleanable_segment_offset: int
    uncleanable_reasons: list[str]
    uncleanable_bounds: dict[str, int]
    open_transactions: list[OpenTransaction]
    unpinned_dirty_ratio: float
    eligible: bool
    needs_compaction_now: bool
    max_compaction_delay_ms: int
    records: int
    batches: int
    reclaimable_records: int
    reclaimable_bytes: int
    aborted_records: int
    keyless_records: int
    tombstones: int
    expired_tombstones: int
    expired_tombstones_cleanable: int
    tombstones_without_horizon: int
    tombstones_without_horizon_cleanable: int
    active_segment_base_offset: int
    #: now minus the active segment's first batch timestamp, the time LogSegment.shouldRoll measures
    active_segment_age_ms: int | None
    active_segment_reclaimable_bytes: int
    max_segment_ms: int
    oldest_dirty_segment_age_ms: int | None
    newest_cleanable_segment_mtime_ms: int | None
    dirty_keys: int
    distinct_keys: int
    dedupe_capacity: int
    decode_errors: list[DecodeError]
    marked_uncleanable: CleanerEvent | None = None
    #: the broker log shows a clean of this partition that has not finished
    cleaning_in_progress: bool = False
    progress: Progress | None = None
    live_size_bytes: int | None = None
    verdict: str = HEALTHY
    reasons: list[Reason] = field(default_factory=list)

    @property
    def rolled_dirty_ratio(self) -> float:
        """The dirty ratio once the active segment rolled (it would then be cleanable, unless held by
        an open transaction or the checkpoint lies beyond it)."""
        if self.first_dirty_offset > self.active_segment_base_offset or (
            self.last_stable_offset < self.log_end_offset
        ):
            return self.dirty_ratio
        active = self.size_bytes - self.clean_bytes - self.cleanable_bytes
        return (self.cleanable_bytes + active) / self.size_bytes if self.size_bytes else 0.0

    @property
    def reclaimable_ratio(self) -> float:
        """Share of the partition's bytes a full clean would drop (superseded, aborted, keyless)."""
        return self.reclaimable_bytes / self.size_bytes if self.size_bytes else 0.0

    @property
    def reclaimable_records_ratio(self) -> float:
        return self.reclaimable_records / self.records if self.records else 0.0

    @property
    def dedupe_usage(self) -> float:
        return self.dirty_keys / self.dedupe_capacity if self.dedupe_capacity else float("inf")

    def snapshot(self, audited_at_ms: int) -> PartitionSnapshot:
        return PartitionSnapshot(
            audited_at_ms,
            self.partition,
            self.first_dirty_offset,
            self.size_bytes,
            self.eligible,
            round(self.dirty_ratio, 6),
            self.log_end_offset,
        )

    def to_json(self) -> dict[str, Any]:
        prog = self.progress
        return {
            "partition": self.partition,
            "verdict": self.verdict,
            "reasons": [r.to_json() for r in self.reasons],
            "size_bytes": self.size_bytes,
            "segments": self.segments,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "checkpoint": self.checkpoint,
            "checkpoint_reset": self.checkpoint_reset,
            "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
            "clean_bytes": self.clean_bytes,
            "cleanable_bytes": self.cleanable_bytes,
            "dirty_ratio": round(self.dirty_ratio, 6),
            "first_dirty_offset": self.first_dirty_offset,
            "first_uncleanable_offset": self.first_uncleanable_offset,
            "first_uncleanable_segment_offset": self.first_uncleanable_segment_offset,
            "uncleanable_reasons": list(self.uncleanable_reasons),
            "uncleanable_bounds": dict(self.uncleanable_bounds),
            "open_transactions": [t.to_json() for t in self.open_transactions],
            "unpinned_dirty_ratio": round(self.unpinned_dirty_ratio, 6),
            "eligible": self.eligible,
            "needs_compaction_now": self.needs_compaction_now,
            "max_compaction_delay_ms": self.max_compaction_delay_ms,
            "marked_uncleanable": self.marked_uncleanable is not None,
            "batches": self.batches,
            "records": self.records,
            "reclaimable_records": self.reclaimable_records,
            "reclaimable_bytes": self.reclaimable_bytes,
            "reclaimable_ratio": round(self.reclaimable_ratio, 6),
            "reclaimable_records_ratio": round(self.reclaimable_records_ratio, 6),
            "aborted_records": self.aborted_records,
            "keyless_records": self.keyless_records,
            "tombstones": self.tombstones,
            "expired_tombstones": self.expired_tombstones,
            "expired_tombstones_cleanable": self.expired_tombstones_cleanable,
            "tombstones_without_horizon": self.tombstones_without_horizon,
            "tombstones_without_horizon_cleanable": self.tombstones_without_horizon_cleanable,
            "active_segment_base_offset": self.active_segment_base_offset,
            "active_segment_age_ms": self.active_segment_age_ms,
            "active_segment_reclaimable_bytes": self.active_segment_reclaimable_bytes,
            "max_segment_ms": self.max_segment_ms,
            "cleaning_in_progress": self.cleaning_in_progress,
            "oldest_dirty_segment_age_ms": self.oldest_dirty_segment_age_ms,
            "distinct_keys": self.distinct_keys,
            "dirty_keys": self.dirty_keys,
            "dedupe_capacity": self.dedupe_capacity,
            "dedupe_usage": round(self.dedupe_usage, 6) if self.dedupe_capacity else None,
            "growth_bytes_per_hour": None if prog is None else prog.growth_bytes_per_hour,
            "checkpoint_advanced": None if prog is None else prog.checkpoint_advanced,
            "stalled_for_ms": None if prog is None else prog.stalled_for_ms,
            "previous_audit_ms": None
            if prog is None or prog.previous is None
            else prog.previous.audited_at_ms,
            "live_size_bytes": self.live_size_bytes,
            "decode_errors": [e.to_dict() for e in self.decode_errors],
        }


def audit_partition(
    pdir: PartitionDir,
    *,
    config: CleanerConfig,
    now_ms: int,
    checkpoint: int | None,
    log_start_checkpoint: int | None = None,
    high_watermark: int | None = None,
    verify_crc: bool = True,
) -> PartitionAudit | None:
    """Scan one partition and compute the cleaner's view of it. None for a partition with no segments."""
    if not pdir.segments:
        return None
    # UnifiedLog: logStartOffset = max(checkpointed log start, first segment's base offset)
    log_start = max(log_start_checkpoint or 0, pdir.segments[0].base_offset)
    dirty_from = checkpoint if checkpoint is not None and checkpoint >= log_start else log_start
    scan = _scan_partition(
        pdir,
        dirty_from=dirty_from,
        delete_retention_ms=config.delete_retention_ms,
        now_ms=now_ms,
        verify_crc=verify_crc,
    )
    segs = scan.segments
    log_end = max((s.next_offset for s in segs if s.next_offset is not None), default=segs[-1].base_offset)
    log_end = max(log_end, segs[-1].base_offset)
    hw = None if high_watermark is None else min(max(high_watermark, log_start), log_end)
    hw_or_leo = log_end if hw is None else hw
    txns = sorted(
        (OpenTransaction(pid, t[2], t[0], t[1], max(now_ms - t[1], 0)) for pid, t in scan.open_txns.items()),
        key=lambda t: t.first_offset,
    )
    first_unstable = txns[0].first_offset if txns else None
    # UnifiedLog.lastStableOffset: the first unstable offset when below the high watermark
    lso = first_unstable if first_unstable is not None and first_unstable < hw_or_leo else hw_or_leo

    def offsets(last_stable: int) -> OffsetsToClean:
        return cleanable_offsets(
            segs,
            log_start_offset=log_start,
            log_end_offset=log_end,
            checkpoint=checkpoint,
            last_stable_offset=last_stable,
            min_compaction_lag_ms=config.min_compaction_lag_ms,
            now_ms=now_ms,
        )

    otc = offsets(lso)
    ltc = log_to_clean(segs, otc.first_dirty_offset, otc.first_uncleanable_dirty_offset)
    unpinned = (
        ltc
        if lso == hw_or_leo
        else log_to_clean(segs, otc.first_dirty_offset, offsets(hw_or_leo).first_uncleanable_dirty_offset)
    )
    delay = max_compaction_delay(segs, otc.first_dirty_offset, config.max_compaction_lag_ms, now_ms)

    bound_min = min(otc.bounds.values())
    reasons: list[str] = []
    for name, value in otc.bounds.items():
        if value != bound_min:
            continue
        if name == "last_stable_offset":
            if lso == first_unstable:
                reasons.append("open_transaction")
            elif hw is not None and hw < log_end:
                reasons.append("high_watermark")
        else:
            reasons.append(name)
    if otc.first_uncleanable_dirty_offset == otc.first_dirty_offset and bound_min < otc.first_dirty_offset:
        reasons.append("nothing_dirty")

    fu_seg = ltc.first_uncleanable_offset
    use_overall = otc.checkpoint_reset == "above_log_end"
    dirty_keys = 0
    expired = expired_cleanable = no_horizon = no_horizon_cleanable = 0
    for entry in scan.keys.values():
        first = entry[_FIRST] if use_overall else entry[_FIRST_DIRTY]
        if first >= 0 and otc.first_dirty_offset <= first < fu_seg:
            dirty_keys += 1
        state = entry[_EXPIRED]
        if state == _REMOVABLE:
            expired += 1
            if entry[_LAST] < fu_seg:
                expired_cleanable += 1
        elif state == _NO_HORIZON:
            no_horizon += 1
            if entry[_LAST] < fu_seg:
                no_horizon_cleanable += 1

    dirty_segments = (
        log_segments(segs, otc.first_dirty_offset, log_end + 1) if log_end > otc.first_dirty_offset else []
    )
    stamps = [s.first_batch_timestamp if s.first_batch_timestamp > 0 else s.mtime_ms for s in dirty_segments]
    oldest_dirty_age = max(now_ms - min(stamps), 0) if stamps else None
    # A first dirty offset above the active segment's base (unclean leader election, DeleteRecords, a
    # checkpoint past the log start) leaves nothing cleanable: calculateCleanableBytes starts the range
    # at min(first dirty, first uncleanable segment), and so does this.
    cleanable_segments = log_segments(segs, min(otc.first_dirty_offset, fu_seg), fu_seg)
    newest_cleanable_mtime = max((s.mtime_ms for s in cleanable_segments), default=None)

    active = segs[-1]
    active_start = active.first_batch_timestamp if active.first_batch_timestamp >= 0 else active.mtime_ms
    total_ok = ltc.total_bytes > 0
    eligible = (
        config.is_compacted
        and total_ok
        and (
            ltc.cleanable_ratio > config.min_cleanable_dirty_ratio or (delay > 0 and ltc.cleanable_bytes > 0)
        )
    )
    return PartitionAudit(
        partition=pdir.partition,
        size_bytes=sum(s.size for s in segs),
        segments=len(segs),
        log_start_offset=log_start,
        log_end_offset=log_end,
        checkpoint=checkpoint,
        checkpoint_reset=otc.checkpoint_reset,
        high_watermark=hw,
        last_stable_offset=lso,
        clean_bytes=ltc.clean_bytes,
        cleanable_bytes=ltc.cleanable_bytes,
        dirty_ratio=ltc.cleanable_ratio,
        first_dirty_offset=otc.first_dirty_offset,
        first_uncleanable_offset=otc.first_uncleanable_dirty_offset,
        first_uncleanable_segment_offset=fu_seg,
        uncleanable_reasons=reasons,
        uncleanable_bounds=dict(otc.bounds),
        open_transactions=txns,
        unpinned_dirty_ratio=unpinned.cleanable_ratio,
        eligible=eligible,
        needs_compaction_now=delay > 0,
        max_compaction_delay_ms=delay,
        records=scan.records,
        batches=scan.batches,
        reclaimable_records=scan.superseded_records + scan.aborted_records + scan.keyless_records,
        reclaimable_bytes=round(scan.reclaimable_bytes),
        aborted_records=scan.aborted_records,
        keyless_records=scan.keyless_records,
        tombstones=scan.tombstones,
        expired_tombstones=expired,
        expired_tombstones_cleanable=expired_cleanable,
        tombstones_without_horizon=no_horizon,
        tombstones_without_horizon_cleanable=no_horizon_cleanable,
        active_segment_base_offset=active.base_offset,
        active_segment_age_ms=max(now_ms - active_start, 0) if active.size else None,
        active_segment_reclaimable_bytes=round(scan.active_reclaimable_bytes),
        max_segment_ms=config.max_segment_ms,
        oldest_dirty_segment_age_ms=oldest_dirty_age,
        newest_cleanable_segment_mtime_ms=newest_cleanable_mtime,
        dirty_keys=dirty_keys,
        distinct_keys=len(scan.keys),
        dedupe_capacity=config.dedupe_capacity,
        decode_errors=scan.errors,
    )


# --------------------------------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------------------------------


def format_bytes(n: float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def _utc(ms: int | None) -> str:
    if ms is None:
        return "an unknown time"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def judge_partition(
    pa: PartitionAudit,
    *,
    config: CleanerConfig,
    thresholds: Thresholds,
    now_ms: int,
    topic: str = OFFSETS_TOPIC,
) -> list[Reason]:
    """The findings for one partition, worst first; the verdict is the worst severity among them."""
    tp = f"{topic}-{pa.partition}"
    out: list[Reason] = []
    min_ratio = config.min_cleanable_dirty_ratio
    mark = pa.marked_uncleanable
    if mark is not None:
        out.append(
            Reason(
                CRITICAL,
                "marked_uncleanable",
                f"the cleaner marked {tp} uncleanable at {_utc(mark.timestamp_ms)}: {mark.message}; it will "
                f"not clean this partition again until the broker restarts",
                "find the exception in log-cleaner.log (corrupt batch, batch larger than the cleaner "
                "buffer); fix "
                "the cause (offsetops dump the segment; raise log.cleaner.io.buffer.size or "
                "max.message.bytes), "
                "then restart the broker, since uncleanable marks live only in memory",
            )
        )
    for txn in pa.open_transactions:
        if txn.age_ms <= thresholds.hanging_transaction_ms:
            continue
        pins = "open_transaction" in pa.uncleanable_reasons and txn.first_offset == pa.last_stable_offset
        severe = pins and pa.unpinned_dirty_ratio > min_ratio
        what = (
            f"hanging transaction from producer {txn.producer_id} (epoch {txn.producer_epoch}) since "
            f"{format_duration(txn.age_ms)}"
        )
        if pins:
            what += (
                f" pins LSO at offset {txn.first_offset}; only {pa.dirty_ratio:.2f} of the log is cleanable, "
                f"{pa.unpinned_dirty_ratio:.2f} would be without it"
            )
        else:
            what += (
                f" opened at offset {txn.first_offset}; it will stop cleaning there once that segment rolls"
            )
        out.append(
            Reason(
                CRITICAL if severe else DEGRADED,
                "hanging_transaction",
                what,
                "abort it with kafka-transactions.sh --bootstrap-server <broker> find-hanging --broker-id "
                "<leader>, "
                f"then kafka-transactions.sh --bootstrap-server <broker> abort --topic {topic} --partition "
                f"{pa.partition} --start-offset {txn.first_offset}",
            )
        )
    prog = pa.progress
    stalled = (
        prog is not None
        and prog.stalled_for_ms is not None
        and pa.eligible
        and prog.stalled_for_ms > thresholds.no_progress_ms
    )
    if stalled and prog is not None:
        growth = ""
        if prog.growth_bytes_per_hour is not None:
            growth = (
                f"; the partition grew {format_bytes(prog.growth_bytes_per_hour)}/h since the previous audit"
            )
        out.append(
            Reason(
                CRITICAL,
                "no_progress",
                f"cleaner made no progress for {format_duration(prog.stalled_for_ms or 0)} while dirty ratio "
                f"{pa.dirty_ratio:.2f} > {min_ratio:g} (first dirty offset stuck at {pa.first_dirty_offset} "
                "over "
                f"{prog.audits_considered + 1} audits){growth}",
                "check DeadThreadCount and log-cleaner.log for 'Error due to' or 'as uncleanable'; a dead "
                "cleaner "
                "thread only comes back with a broker restart (rolling restart of this broker, after moving "
                "leadership away)",
            )
        )
    elif pa.eligible:
        if pa.dirty_ratio > min_ratio:
            why = f"dirty ratio {pa.dirty_ratio:.2f} > min.cleanable.dirty.ratio {min_ratio:g}"
        else:
            why = (
                f"dirty data is {format_duration(pa.max_compaction_delay_ms)} past max.compaction.lag.ms "
                f"(dirty ratio {pa.dirty_ratio:.2f})"
            )
        if prog is not None and prog.checkpoint_advanced:
            state = "the checkpoint advanced since the previous audit, so the cleaner is working"
        elif prog is not None and prog.stalled_for_ms is not None:
            state = f"no progress for {format_duration(prog.stalled_for_ms)} so far"
        else:
            state = "no earlier audit to compare with"
        idle = None
        if pa.newest_cleanable_segment_mtime_ms is not None and (
            prog is None or not prog.checkpoint_advanced
        ):
            idle = now_ms - pa.newest_cleanable_segment_mtime_ms
            if idle > thresholds.no_progress_ms:
                state += (
                    f"; the newest cleanable segment was last written {format_duration(idle)} ago, so the "
                    f"cleaner has probably not run since"
                )
        out.append(
            Reason(
                DEGRADED,
                "cleaning_due",
                f"{why}; cleaning is due ({state})",
                "nothing if the next audit shows the checkpoint advancing; otherwise check the cleaner "
                "threads "
                "(DeadThreadCount, time-since-last-run-ms) and log-cleaner.log",
            )
        )
    age = pa.active_segment_age_ms
    if (
        pa.active_segment_reclaimable_bytes >= max(thresholds.dirty_active_segment_bytes, 1)
        and age is not None
        and age > pa.max_segment_ms
        and pa.rolled_dirty_ratio > min_ratio
    ):
        out.append(
            Reason(
                DEGRADED,
                "dirty_active_segment",
                f"the active segment (base offset {pa.active_segment_base_offset}) holds "
                f"{format_bytes(pa.active_segment_reclaimable_bytes)} that compaction would drop, but the "
                "cleaner never touches the active segment; it started "
                f"{format_duration(age)} ago, past maxSegmentMs {format_duration(pa.max_segment_ms)} "
                "(min of segment.ms and max.compaction.lag.ms), and Kafka rolls a segment only when a record "
                "is appended, so on this quiet partition it stays dirty and every coordinator load "
                "replays it",
                "any append rolls it now, and the next cleaner pass can then clean it: commit an offset "
                f"for a group stored in {topic}-{pa.partition} (offsetops reload --partition "
                f"{pa.partition} lists them; offsetops partition-for GROUP checks a new id); "
                "lowering segment.ms or max.compaction.lag.ms does not help a quiet partition, since "
                "both only take effect when a record is appended",
            )
        )
    if pa.checkpoint_reset == "above_log_end":
        out.append(
            Reason(
                DEGRADED,
                "checkpoint_beyond_log_end",
                f"cleaner-offset-checkpoint says {pa.checkpoint} but the log ends at {pa.log_end_offset}; "
                "the broker "
                f"will reset it to the log start {pa.log_start_offset} and re-clean the whole partition",
                "look for truncation or a restored/partial log dir; the reset itself is automatic",
            )
        )
    # Kafka keeps expired tombstones until the next pass, and a pass only comes once the partition is
    # eligible: before that they are expected (still counted in the numbers), not a finding.
    if pa.eligible and pa.expired_tombstones_cleanable >= max(thresholds.expired_tombstones_min, 1):
        out.append(
            Reason(
                DEGRADED,
                "expired_tombstones",
                f"{pa.expired_tombstones_cleanable} tombstone(s) older than delete.retention.ms "
                f"({format_duration(config.delete_retention_ms)}) are still present in the cleanable range "
                f"({pa.expired_tombstones} in the whole log) of a partition that is due for cleaning; "
                "no cleaning pass has run since they expired",
                "check that the cleaner is running (log-cleaner.log, DeadThreadCount, "
                "time-since-last-run-ms); to force passes on a quiet partition set max.compaction.lag.ms "
                f"on the topic (kafka-configs.sh --alter --entity-type topics --entity-name {topic} "
                "--add-config max.compaction.lag.ms=...)",
            )
        )
    if pa.dedupe_capacity and pa.dirty_keys >= pa.dedupe_capacity * thresholds.dedupe_tight_ratio:
        passes = -(-pa.dirty_keys // pa.dedupe_capacity)
        too_small = pa.dirty_keys > pa.dedupe_capacity
        out.append(
            Reason(
                DEGRADED,
                "dedupe_buffer_too_small" if too_small else "dedupe_buffer_tight",
                f"{pa.dirty_keys} distinct keys in the dirty range vs a dedupe map of {pa.dedupe_capacity} "
                "keys per "
                f"thread (log.cleaner.dedupe.buffer.size {format_bytes(config.dedupe_buffer_size)} / "
                f"{config.cleaner_threads} thread(s) / 24 B x {config.dedupe_load_factor:g})"
                + (f"; the cleaner needs {passes} passes to get through it" if too_small else ""),
                "raise log.cleaner.dedupe.buffer.size (or lower log.cleaner.threads) in server.properties",
            )
        )
    if (
        prog is not None
        and prog.growth_bytes_per_hour is not None
        and prog.growth_bytes_per_hour > thresholds.growth_bytes_per_hour
        and not stalled
    ):
        out.append(
            Reason(
                DEGRADED,
                "fast_growth",
                f"grew {format_bytes(prog.growth_bytes_per_hour)}/h since the previous audit "
                f"(threshold {format_bytes(thresholds.growth_bytes_per_hour)}/h)",
                "find the committing client (offsetops reload, look for groups committing in a tight loop) "
                "and "
                "confirm the cleaner keeps up",
            )
        )
    if pa.decode_errors:
        out.append(
            Reason(
                DEGRADED,
                "corrupt_data",
                f"{len(pa.decode_errors)} decode error(s), first: {pa.decode_errors[0]}; the cleaner fails "
                "on the "
                f"same bytes and would mark the partition uncleanable",
                "inspect with offsetops dump; recover the segment from a replica (reassign or delete the "
                "local "
                "replica so it re-fetches)",
            )
        )
    out.sort(key=lambda r: -_RANK[r.severity])
    return out


def judge_topic(
    *,
    config: CleanerConfig,
    thresholds: Thresholds,
    metrics: CleanerMetrics | None,
    broker_log: BrokerLogReport | None,
    topic: str = OFFSETS_TOPIC,
) -> list[Reason]:
    """Findings that belong to the topic or the broker rather than one partition."""
    out: list[Reason] = []
    if config.cleanup_policy.strip() != "compact":
        out.append(
            Reason(
                CRITICAL,
                "cleanup_policy",
                f"cleanup.policy is {config.cleanup_policy!r} ({config.source_of('cleanup_policy')}), not "
                "'compact'"
                + (
                    "; the cleaner never touches this topic"
                    if not config.is_compacted
                    else "; retention deletes the offsets of idle groups"
                ),
                "kafka-configs.sh --bootstrap-server <broker> --alter --entity-type topics --entity-name "
                f"{topic} "
                "--add-config cleanup.policy=compact",
            )
        )
    if not config.cleaner_enable:
        out.append(
            Reason(
                CRITICAL,
                "cleaner_disabled",
                f"log.cleaner.enable=false ({config.source_of('cleaner_enable')}); {topic} is never "
                "compacted and "
                f"grows without bound",
                "set log.cleaner.enable=true in server.properties and do a rolling restart",
            )
        )
    if metrics is not None:
        dead = metrics.dead_thread_count
        if dead is not None and dead > 0:
            out.append(
                Reason(
                    CRITICAL,
                    "dead_cleaner_thread",
                    f"DeadThreadCount is {dead:g}: a log cleaner thread has died and nothing is being "
                    "compacted by it",
                    "find 'Error due to' in log-cleaner.log for the cause, fix it, then restart the broker "
                    "(a dead "
                    "cleaner thread is only restarted with the broker)",
                )
            )
        count = metrics.uncleanable_partitions_count
        if count is not None and count > 0:
            ubytes = metrics.uncleanable_bytes
            extra = f" holding {format_bytes(ubytes)}" if ubytes else ""
            out.append(
                Reason(
                    CRITICAL,
                    "uncleanable_partitions",
                    f"uncleanable-partitions-count is {count:g}{extra}: the cleaner gave up on those "
                    "partitions",
                    "grep log-cleaner.log for 'as uncleanable' to find which and why; fix the cause and "
                    "restart the "
                    "broker (marks are kept in memory only)",
                )
            )
        since = metrics.time_since_last_run_ms
        if since is not None and since > thresholds.time_since_last_run_ms:
            out.append(
                Reason(
                    DEGRADED,
                    "cleaner_not_running",
                    f"time-since-last-run-ms is {format_duration(since)} (threshold "
                    f"{format_duration(thresholds.time_since_last_run_ms)}): the cleaner loop has not "
                    "picked a log "
                    f"for that long",
                    "check whether the cleaner threads are stuck on one huge log (max-clean-time-secs) or "
                    "dead "
                    "(DeadThreadCount)",
                )
            )
        clean_time = metrics.max_clean_time_secs
        if clean_time is not None and clean_time > thresholds.max_clean_time_secs:
            out.append(
                Reason(
                    DEGRADED,
                    "slow_cleaning",
                    f"max-clean-time-secs is {clean_time:g} s (threshold {thresholds.max_clean_time_secs:g} "
                    "s)",
                    "raise log.cleaner.io.max.bytes.per.second if throttled, or log.cleaner.threads",
                )
            )
    if broker_log is not None:
        for thread, event in sorted(broker_log.dead_threads().items()):
            out.append(
                Reason(
                    CRITICAL,
                    "cleaner_thread_died",
                    f"kafka-log-cleaner-thread-{thread} died at {_utc(event.timestamp_ms)}: {event.message}",
                    "fix the cause shown, then restart the broker to restart the cleaner thread",
                )
            )
    out.sort(key=lambda r: -_RANK[r.severity])
    return out


# --------------------------------------------------------------------------------------------------
# The whole audit
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionFailure:
    """A partition the audit could not compute; the other partitions are audited all the same."""

    partition: int
    path: str
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"partition": self.partition, "path": self.path, "error": self.error}


def audit_partition_isolated(pdir: PartitionDir, **kwargs: Any) -> PartitionAudit | PartitionFailure | None:
    """:func:`audit_partition`, with any failure returned as a :class:`PartitionFailure` instead of
    raised, so that one odd partition never takes the audit of the others down."""
    try:
        return audit_partition(pdir, **kwargs)
    except Exception as exc:  # reported per partition, never swallowed
        return PartitionFailure(pdir.partition, str(pdir.path), f"{type(exc).__name__}: {exc}")


def max_dirty_ratio(partitions: Sequence[PartitionAudit], config: CleanerConfig) -> float:
    """The ``max-dirty-percent`` gauge / 100 for this topic: ``grabFilthiestCompactedLog`` takes the
    largest cleanable ratio over compacted logs that are neither marked uncleanable nor being cleaned,
    and have some bytes."""
    if not config.is_compacted:
        return 0.0
    return max(
        (
            p.dirty_ratio
            for p in partitions
            if p.marked_uncleanable is None
            and not p.cleaning_in_progress
            and p.clean_bytes + p.cleanable_bytes > 0
        ),
        default=0.0,
    )


def _failure_reason(failures: Sequence[PartitionFailure], topic: str) -> Reason:
    names = ", ".join(f"{topic}-{f.partition} ({f.error})" for f in failures[:5])
    more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
    return Reason(
        DEGRADED,
        "partition_audit_failed",
        f"{len(failures)} partition(s) could not be audited, so their health is unknown: {names}{more}",
        "inspect the partition with offsetops dump and its checkpoints; the other partitions were "
        "audited as usual",
    )


@dataclass
class CleanerAudit:
    """The audit of one log dir; :meth:`to_json` is the ``offsetops audit --json`` document."""

    log_dir: str
    audited_at_ms: int
    config: CleanerConfig
    thresholds: Thresholds
    partitions: list[PartitionAudit]
    reasons: list[Reason]
    verdict: str
    metrics: CleanerMetrics | None = None
    broker_log: BrokerLogReport | None = None
    live: ClusterConfig | None = None
    history_file: str | None = None
    notes: list[str] = field(default_factory=list)
    failures: list[PartitionFailure] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        total = sum(p.size_bytes for p in self.partitions)
        ratio = max_dirty_ratio(self.partitions, self.config)
        reclaim = sum(p.reclaimable_bytes for p in self.partitions)
        return {
            "verdict": self.verdict,
            "reasons": [r.to_json() for r in self.reasons],
            "log_dir": self.log_dir,
            "audited_at_ms": self.audited_at_ms,
            "summary": {
                "partitions": len(self.partitions),
                "healthy": sum(p.verdict == HEALTHY for p in self.partitions),
                "degraded": sum(p.verdict == DEGRADED for p in self.partitions),
                "critical": sum(p.verdict == CRITICAL for p in self.partitions),
                "size_bytes": total,
                "reclaimable_bytes": reclaim,
                "reclaimable_ratio": round(reclaim / total, 6) if total else 0.0,
                "max_dirty_ratio": round(ratio, 6),
                # LogCleanerManager's gauge, an int: (100 * dirtiestLogCleanableRatio).toInt
                "max_dirty_percent": int(100 * ratio),
                "open_transactions": sum(len(p.open_transactions) for p in self.partitions),
                "failed": len(self.failures),
            },
            "partitions": [p.to_json() for p in self.partitions],
            "failed_partitions": [f.to_json() for f in self.failures],
            "config": self.config.to_json(),
            "thresholds": self.thresholds.to_json(),
            "metrics": None if self.metrics is None else self.metrics.to_json(),
            "broker_log": None if self.broker_log is None else self.broker_log.to_json(),
            "live": None if self.live is None else self.live.to_json(),
            "history_file": self.history_file,
            "notes": list(self.notes),
        }


def audit_log_dir(
    path: str | os.PathLike[str] | LogDir,
    *,
    config: CleanerConfig | None = None,
    thresholds: Thresholds | None = None,
    now_ms: int | None = None,
    partitions: list[int] | None = None,
    metrics: CleanerMetrics | None = None,
    broker_log: BrokerLogReport | None = None,
    live: ClusterConfig | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    record_history: bool = True,
    verify_crc: bool = True,
    partition_audits: Mapping[int, PartitionAudit | PartitionFailure | None] | None = None,
) -> CleanerAudit:
    """Audit every ``__consumer_offsets`` partition of a log dir (or one partition dir).

    With ``state_dir``, earlier audits from ``audits.jsonl`` give growth and progress, and this audit is
    appended to it (unless ``record_history`` is false). Raises ``LogDirError`` for an unusable path.
    ``partition_audits`` supplies the per-partition scans already done elsewhere (the Spark job runs
    :func:`audit_partition` on its executors); history, marks and verdicts are still applied here.
    """
    logdir = path if isinstance(path, LogDir) else open_log_dir(path, partitions=partitions)
    cfg = config or CleanerConfig()
    th = thresholds or Thresholds()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    notes = list(logdir.checkpoint_errors)
    if live is not None:
        notes.extend(live.notes)
    try:
        hw_ckpt = read_offset_checkpoint(Path(logdir.path) / REPLICATION_CHECKPOINT)
    except LogDirError as exc:
        notes.append(str(exc))
        hw_ckpt = {}
    history = AuditHistory.load(state_dir) if state_dir is not None else None
    if history is not None and history.skipped_lines:
        notes.append(f"{history.path}: skipped {history.skipped_lines} unreadable line(s)")
    marks = broker_log.uncleanable_partitions() if broker_log is not None else {}
    in_progress = broker_log.cleaning_in_progress() if broker_log is not None else set()
    log_dir_key = str(Path(logdir.path).resolve())

    audits: list[PartitionAudit] = []
    failures: list[PartitionFailure] = []
    for pdir in logdir.partitions:
        tp = (pdir.topic, pdir.partition)
        if partition_audits is not None:
            pa = partition_audits.get(pdir.partition)
        else:
            pa = audit_partition_isolated(
                pdir,
                config=cfg,
                now_ms=now,
                checkpoint=logdir.cleaner_checkpoint.get(tp),
                log_start_checkpoint=logdir.log_start_checkpoint.get(tp),
                high_watermark=hw_ckpt.get(tp),
                verify_crc=verify_crc,
            )
        if pa is None:
            notes.append(f"{pdir.path}: no segment files, skipped")
            continue
        if isinstance(pa, PartitionFailure):
            failures.append(pa)
            continue
        pa.cleaning_in_progress = pdir.partition in in_progress
        mark = marks.get(pdir.partition)
        if mark is not None:
            pa.marked_uncleanable = mark
            pa.eligible = False  # grabFilthiestCompactedLog skips partitions marked uncleanable
        if history is not None:
            pa.progress = history.progress(log_dir_key, pa.snapshot(now))
        if live is not None and live.log_dir_sizes is not None:
            pa.live_size_bytes = live.log_dir_sizes.get(pdir.partition)
        pa.reasons = judge_partition(pa, config=cfg, thresholds=th, now_ms=now, topic=pdir.topic)
        pa.verdict = worst(pa.reasons)
        audits.append(pa)

    if metrics is not None and not metrics.found:
        notes.append(f"{metrics.source or 'metrics'}: no Log Cleaner metrics found in the exposition")
    topic_reasons = judge_topic(config=cfg, thresholds=th, metrics=metrics, broker_log=broker_log)
    if failures:
        topic_reasons.append(_failure_reason(failures, OFFSETS_TOPIC))
        topic_reasons.sort(key=lambda r: -_RANK[r.severity])
    verdict = max([worst(topic_reasons), *(p.verdict for p in audits)], key=_RANK.__getitem__)
    audit = CleanerAudit(
        log_dir=log_dir_key,
        audited_at_ms=now,
        config=cfg,
        thresholds=th,
        partitions=audits,
        reasons=topic_reasons,
        verdict=verdict,
        metrics=metrics,
        broker_log=broker_log,
        live=live,
        history_file=None if history is None else str(history.path),
        notes=notes,
        failures=failures,
    )
    if history is not None and record_history:
        history.append(
            {
                "audited_at_ms": now,
                "log_dir": log_dir_key,
                "verdict": verdict,
                "partitions": {str(p.partition): p.snapshot(now).to_json() for p in audits},
            }
        )
    return audit
