"""The data model of the Log Cleaner audit and its JSON: verdicts, findings, thresholds, and the audit
of a partition and of a log dir.

:meth:`PartitionAudit.to_json` and :meth:`CleanerAudit.to_json` are the ``offsetops audit --json``
contract that the Spark tables, the Dagster assets and the operator report read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.cleaner.broker_log import BrokerLogReport, CleanerEvent
from offsetops.coordinator_core.cleaner.config import CleanerConfig, ClusterConfig
from offsetops.coordinator_core.cleaner.history import PartitionSnapshot, Progress
from offsetops.coordinator_core.cleaner.manager import max_dirty_ratio
from offsetops.coordinator_core.cleaner.metrics import CleanerMetrics
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.findings import (
    CRITICAL,
    DEGRADED,
    HEALTHY,
    RANK,
    Finding,
    partition_findings,
    worst_first,
)
from offsetops.coordinator_core.findings import worst as worst_severity
from offsetops.coordinator_core.sources.replicas import ReplicaChoice

__all__ = [
    "CRITICAL",
    "DEGRADED",
    "HEALTHY",
    "RANK",
    "CleanerAudit",
    "OpenTransaction",
    "PartitionAudit",
    "PartitionFailure",
    "Reason",
    "Thresholds",
    "format_bytes",
    "worst",
]


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
    return worst_severity(r.severity for r in reasons)


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
    #: data records scanned (COMMIT/ABORT markers left out; a reload's ``records`` counts them)
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
    #: whose copy this is, in an audit of several brokers' log dirs (each cleaner acts on its own copy)
    broker_id: int | None = None
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
            **({} if self.broker_id is None else {"broker_id": self.broker_id}),
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
            "data_records": self.records,
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


@dataclass(frozen=True, slots=True)
class PartitionFailure:
    """A partition the audit could not compute; the other partitions are audited all the same."""

    partition: int
    path: str
    error: str
    broker_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"partition": self.partition, "path": self.path, "error": self.error}
        if self.broker_id is not None:
            doc["broker_id"] = self.broker_id
        return doc


@dataclass
class CleanerAudit:
    """The audit of one log dir, or of several brokers' log dirs (then ``log_dirs`` is set and every
    partition row carries its ``broker_id``); :meth:`to_json` is the ``offsetops audit --json`` document.
    """

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
    #: several brokers: broker id -> its log dir, and which copy of each partition a reload reads (with
    #: the divergent copies)
    brokers: dict[int, str] | None = None
    replicas: list[ReplicaChoice] | None = None

    def findings(self) -> list[Finding]:
        """Every finding, topic-wide and per partition, worst first (the one order)."""
        return partition_findings(self.partitions, self.reasons)

    def to_json(self) -> dict[str, Any]:
        total = sum(p.size_bytes for p in self.partitions)
        ratio = max_dirty_ratio(self.partitions, self.config)
        reclaim = sum(p.reclaimable_bytes for p in self.partitions)
        doc = {
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
            # the one worst-first order (coordinator_core.findings), as every surface shows it
            "worst_first": [
                p.partition if p.broker_id is None else {"partition": p.partition, "broker_id": p.broker_id}
                for p in worst_first(self.partitions)
                if p.verdict != HEALTHY
            ],
            "findings": [f.to_json() for f in self.findings()],
            "failed_partitions": [f.to_json() for f in self.failures],
            "config": self.config.to_json(),
            "thresholds": self.thresholds.to_json(),
            "metrics": None if self.metrics is None else self.metrics.to_json(),
            "broker_log": None if self.broker_log is None else self.broker_log.to_json(),
            "live": None if self.live is None else self.live.to_json(),
            "history_file": self.history_file,
            "notes": list(self.notes),
        }
        if self.brokers is not None:
            # one row per replica: "partitions" counts copies, as each broker's cleaner acts on its own
            choices = self.replicas or []
            doc["summary"]["brokers"] = len(self.brokers)
            doc["summary"]["distinct_partitions"] = len(choices)
            doc["summary"]["divergent_partitions"] = sum(bool(c.divergences) for c in choices)
            doc["log_dirs"] = [{"broker_id": b, "log_dir": d} for b, d in sorted(self.brokers.items())]
            doc["replicas"] = [c.to_json() for c in choices]
        return doc


def format_bytes(n: float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
