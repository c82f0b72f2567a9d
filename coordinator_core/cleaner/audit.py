"""The Log Cleaner audit of a partition and of a broker log dir: scan, arithmetic, history, verdict.

:func:`audit_partition` scans one partition (:mod:`.scan`) and computes the cleaner's view of it
(:mod:`.manager`); :func:`audit_log_dir` does so for every partition of a log dir, adds the broker log's
uncleanable marks, audit history and live sizes, and judges each partition and the topic
(:mod:`.rules`). The operator's guide is docs/cleaner-audit.md.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.cleaner.broker_log import BrokerLogReport
from offsetops.coordinator_core.cleaner.config import CleanerConfig, ClusterConfig
from offsetops.coordinator_core.cleaner.history import AuditHistory
from offsetops.coordinator_core.cleaner.manager import CleanerView, SegmentInfo, cleaner_view, log_segments
from offsetops.coordinator_core.cleaner.metrics import CleanerMetrics
from offsetops.coordinator_core.cleaner.model import (
    CRITICAL,
    DEGRADED,
    RANK,
    CleanerAudit,
    OpenTransaction,
    PartitionAudit,
    PartitionFailure,
    Reason,
    Thresholds,
    worst,
)
from offsetops.coordinator_core.cleaner.rules import failure_reason, judge_partition, judge_topic
from offsetops.coordinator_core.cleaner.scan import PartitionScan, dirty_from, scan_partition
from offsetops.coordinator_core.sources.logdir import (
    OFFSETS_TOPIC,
    REPLICATION_CHECKPOINT,
    LogDir,
    LogDirError,
    PartitionDir,
    open_log_dir,
    read_offset_checkpoint,
)
from offsetops.coordinator_core.sources.replicas import (
    AHEAD_OF_CHOSEN,
    DIFFERENT_BATCHES,
    EPOCH_HISTORY,
    Divergence,
    LogDirs,
    ReplicaChoice,
)

__all__ = [
    "audit_from_scan",
    "audit_log_dir",
    "audit_log_dirs",
    "audit_partition",
    "audit_partition_isolated",
    "high_watermarks",
    "merge_broker_audits",
    "scan_log_dir",
]


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
    scan = scan_partition(
        pdir,
        dirty_from=dirty_from(checkpoint, log_start_checkpoint, pdir.segments[0].base_offset),
        verify_crc=verify_crc,
    )
    return audit_from_scan(
        pdir.partition,
        scan,
        config=config,
        now_ms=now_ms,
        checkpoint=checkpoint,
        log_start_checkpoint=log_start_checkpoint,
        high_watermark=high_watermark,
    )


def audit_from_scan(
    partition: int,
    scan: PartitionScan,
    *,
    config: CleanerConfig,
    now_ms: int,
    checkpoint: int | None,
    log_start_checkpoint: int | None = None,
    high_watermark: int | None = None,
) -> PartitionAudit:
    """The cleaner's view of a partition from its record scan (of at least one segment), whether one
    pass over its files (:func:`audit_partition`) or per-segment scans merged (the reload's pass)."""
    segs = scan.segments
    # UnifiedLog: logStartOffset = max(checkpointed log start, first segment's base offset)
    log_start = max(log_start_checkpoint or 0, segs[0].base_offset)
    log_end = max((s.next_offset for s in segs if s.next_offset is not None), default=segs[-1].base_offset)
    mtimes = scan.mtimes()
    txns = sorted(
        (
            _open_transaction(pid, t, scan.txn_start_ms(t, mtimes), now_ms)
            for pid, t in scan.open_txns.items()
        ),
        key=lambda t: t.first_offset,
    )
    view = cleaner_view(
        segs,
        config=config,
        now_ms=now_ms,
        log_start_offset=log_start,
        log_end_offset=max(log_end, segs[-1].base_offset),
        checkpoint=checkpoint,
        high_watermark=high_watermark,
        first_unstable_offset=txns[0].first_offset if txns else None,
    )
    return _partition_audit(partition, scan, view, txns, config=config, now_ms=now_ms, checkpoint=checkpoint)


def _open_transaction(pid: int, txn: list[Any], started_ms: int, now_ms: int) -> OpenTransaction:
    return OpenTransaction(pid, txn[2], txn[0], started_ms, max(now_ms - started_ms, 0))


def _segment_ages(
    segs: Sequence[SegmentInfo], view: CleanerView, now_ms: int
) -> tuple[int | None, int | None]:
    """(the oldest dirty segment's age, the newest cleanable segment's mtime), from the segments' first
    batch timestamps and mtimes."""
    otc, log_end = view.offsets, view.log_end_offset
    fu_seg = view.to_clean.first_uncleanable_offset
    dirty = (
        log_segments(segs, otc.first_dirty_offset, log_end + 1) if log_end > otc.first_dirty_offset else []
    )
    stamps = [s.first_batch_timestamp if s.first_batch_timestamp > 0 else s.mtime_ms for s in dirty]
    oldest_dirty_age = max(now_ms - min(stamps), 0) if stamps else None
    # A first dirty offset above the active segment's base (unclean leader election, DeleteRecords, a
    # checkpoint past the log start) leaves nothing cleanable: calculateCleanableBytes starts the range
    # at min(first dirty, first uncleanable segment), and so does this.
    cleanable = log_segments(segs, min(otc.first_dirty_offset, fu_seg), fu_seg)
    return oldest_dirty_age, max((s.mtime_ms for s in cleanable), default=None)


def _partition_audit(
    partition: int,
    scan: PartitionScan,
    view: CleanerView,
    txns: list[OpenTransaction],
    *,
    config: CleanerConfig,
    now_ms: int,
    checkpoint: int | None,
) -> PartitionAudit:
    """The partition's audit from its scan and the cleaner's view of it."""
    segs, otc, ltc = scan.segments, view.offsets, view.to_clean
    fu_seg = ltc.first_uncleanable_offset
    keys = scan.key_stats(
        otc.first_dirty_offset,
        fu_seg,
        whole_log=otc.checkpoint_reset == "above_log_end",
        now_ms=now_ms,
        delete_retention_ms=config.delete_retention_ms,
    )
    oldest_dirty_age, newest_cleanable_mtime = _segment_ages(segs, view, now_ms)
    active = segs[-1]
    active_start = active.first_batch_timestamp if active.first_batch_timestamp >= 0 else active.mtime_ms
    delay = view.max_compaction_delay_ms
    return PartitionAudit(
        partition=partition,
        size_bytes=sum(s.size for s in segs),
        segments=len(segs),
        log_start_offset=view.log_start_offset,
        log_end_offset=view.log_end_offset,
        checkpoint=checkpoint,
        checkpoint_reset=otc.checkpoint_reset,
        high_watermark=view.high_watermark,
        last_stable_offset=view.last_stable_offset,
        clean_bytes=ltc.clean_bytes,
        cleanable_bytes=ltc.cleanable_bytes,
        dirty_ratio=ltc.cleanable_ratio,
        first_dirty_offset=otc.first_dirty_offset,
        first_uncleanable_offset=otc.first_uncleanable_dirty_offset,
        first_uncleanable_segment_offset=fu_seg,
        uncleanable_reasons=view.uncleanable_reasons(),
        uncleanable_bounds=dict(otc.bounds),
        open_transactions=txns,
        unpinned_dirty_ratio=view.unpinned.cleanable_ratio,
        eligible=view.eligible(config),
        needs_compaction_now=delay > 0,
        max_compaction_delay_ms=delay,
        records=scan.records,
        batches=scan.batches,
        reclaimable_records=scan.superseded_records + scan.aborted_records + scan.keyless_records,
        reclaimable_bytes=round(scan.reclaimable_bytes),
        aborted_records=scan.aborted_records,
        keyless_records=scan.keyless_records,
        tombstones=scan.tombstones,
        expired_tombstones=keys.expired_tombstones,
        expired_tombstones_cleanable=keys.expired_tombstones_cleanable,
        tombstones_without_horizon=keys.tombstones_without_horizon,
        tombstones_without_horizon_cleanable=keys.tombstones_without_horizon_cleanable,
        active_segment_base_offset=active.base_offset,
        active_segment_age_ms=max(now_ms - active_start, 0) if active.size else None,
        active_segment_reclaimable_bytes=round(scan.active_reclaimable_bytes),
        max_segment_ms=config.max_segment_ms,
        oldest_dirty_segment_age_ms=oldest_dirty_age,
        newest_cleanable_segment_mtime_ms=newest_cleanable_mtime,
        dirty_keys=keys.dirty_keys,
        distinct_keys=len(scan.keys),
        dedupe_capacity=config.dedupe_capacity,
        decode_errors=scan.errors,
    )


def audit_partition_isolated(pdir: PartitionDir, **kwargs: Any) -> PartitionAudit | PartitionFailure | None:
    """:func:`audit_partition`, with any failure returned as a :class:`PartitionFailure` instead of
    raised, so that one odd partition never takes the audit of the others down."""
    try:
        return audit_partition(pdir, **kwargs)
    except Exception as exc:  # reported per partition, never swallowed
        return PartitionFailure(pdir.partition, str(pdir.path), f"{type(exc).__name__}: {exc}")


def high_watermarks(logdir: LogDir, notes: list[str]) -> dict[tuple[str, int], int]:
    """The log dir's ``replication-offset-checkpoint`` (high watermarks); an unreadable one is a note."""
    try:
        return read_offset_checkpoint(Path(logdir.path) / REPLICATION_CHECKPOINT)
    except LogDirError as exc:
        notes.append(str(exc))
        return {}


def scan_log_dir(
    logdir: LogDir,
    *,
    config: CleanerConfig,
    now_ms: int,
    verify_crc: bool = True,
    hw: Mapping[tuple[str, int], int] | None = None,
    notes: list[str] | None = None,
) -> dict[int, PartitionAudit | PartitionFailure | None]:
    """:func:`audit_partition_isolated` of every partition of a log dir, with the log dir's checkpoints
    (``hw``: its high watermarks, read here when not given; an unreadable file goes to ``notes``)."""
    if hw is None:
        hw = high_watermarks(logdir, notes if notes is not None else [])
    out: dict[int, PartitionAudit | PartitionFailure | None] = {}
    for pdir in logdir.partitions:
        tp = (pdir.topic, pdir.partition)
        out[pdir.partition] = audit_partition_isolated(
            pdir,
            config=config,
            now_ms=now_ms,
            checkpoint=logdir.cleaner_checkpoint.get(tp),
            log_start_checkpoint=logdir.log_start_checkpoint.get(tp),
            high_watermark=hw.get(tp),
            verify_crc=verify_crc,
        )
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class _Judging:
    """What every partition of one log dir is judged with."""

    config: CleanerConfig
    thresholds: Thresholds
    now_ms: int
    broker_log: BrokerLogReport | None
    history: AuditHistory | None
    log_dir_key: str
    live: ClusterConfig | None


def _judge_partitions(
    logdir: LogDir,
    partition_audits: Mapping[int, PartitionAudit | PartitionFailure | None],
    judging: _Judging,
    notes: list[str],
) -> tuple[list[PartitionAudit], list[PartitionFailure]]:
    """Each partition's scan with the broker log's marks, its progress since the history and its verdict
    (LogCleanerManager.grabFilthiestCompactedLog skips a partition marked uncleanable); the failures apart,
    a partition without segments noted."""
    j = judging
    marks = j.broker_log.uncleanable_partitions() if j.broker_log is not None else {}
    in_progress = j.broker_log.cleaning_in_progress() if j.broker_log is not None else set()
    audits: list[PartitionAudit] = []
    failures: list[PartitionFailure] = []
    for pdir in logdir.partitions:
        pa = partition_audits.get(pdir.partition)
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
            pa.eligible = False
        if j.history is not None:
            pa.progress = j.history.progress(j.log_dir_key, pa.snapshot(j.now_ms))
        if j.live is not None and j.live.log_dir_sizes is not None:
            pa.live_size_bytes = j.live.log_dir_sizes.get(pdir.partition)
        pa.reasons = judge_partition(
            pa, config=j.config, thresholds=j.thresholds, now_ms=j.now_ms, topic=pdir.topic
        )
        pa.verdict = worst(pa.reasons)
        audits.append(pa)
    return audits, failures


def audit_log_dir(
    path: str | os.PathLike[str] | LogDir,
    *,
    config: CleanerConfig | None = None,
    thresholds: Thresholds | None = None,
    now_ms: int,
    partitions: list[int] | None = None,
    metrics: CleanerMetrics | None = None,
    broker_log: BrokerLogReport | None = None,
    live: ClusterConfig | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    record_history: bool = True,
    verify_crc: bool = True,
    partition_audits: Mapping[int, PartitionAudit | PartitionFailure | None] | None = None,
    log_dir_key: str | None = None,
    files_at_hand: bool = True,
) -> CleanerAudit:
    """Audit every ``__consumer_offsets`` partition of a log dir (or one partition dir).

    With ``state_dir``, earlier audits from ``audits.jsonl`` give growth and progress, and this audit is
    appended to it (unless ``record_history`` is false). Raises ``LogDirError`` for an unusable path.
    ``partition_audits`` supplies the per-partition scans already done elsewhere (the Spark job runs
    :func:`audit_partition` on its executors, a broker scan its broker's pod); history, marks and verdicts
    are still applied here. ``log_dir_key`` names the log dir in the history and the report (default:
    its resolved path). With ``files_at_hand`` false (a broker scan judged centrally), the log dir's path
    is a label only: no file under it is opened.
    """
    logdir = path if isinstance(path, LogDir) else open_log_dir(path, partitions=partitions)
    cfg = config or CleanerConfig()
    th = thresholds or Thresholds()
    now = now_ms
    notes = list(logdir.checkpoint_errors)
    if live is not None:
        notes.extend(live.notes)
    hw_ckpt = high_watermarks(logdir, notes) if files_at_hand else {}
    if partition_audits is None:
        partition_audits = scan_log_dir(logdir, config=cfg, now_ms=now, verify_crc=verify_crc, hw=hw_ckpt)
    history = AuditHistory.load(state_dir) if state_dir is not None else None
    if history is not None and history.skipped_lines:
        notes.append(f"{history.path}: skipped {history.skipped_lines} unreadable line(s)")
    # the history key: a broker scan read back elsewhere names its broker, not a path of this machine
    log_dir_key = log_dir_key or str(Path(logdir.path).resolve())

    audits, failures = _judge_partitions(
        logdir,
        partition_audits,
        _Judging(cfg, th, now, broker_log, history, log_dir_key, live),
        notes,
    )
    if metrics is not None and not metrics.found:
        notes.append(f"{metrics.source or 'metrics'}: no Log Cleaner metrics found in the exposition")
    topic_reasons = judge_topic(config=cfg, thresholds=th, metrics=metrics, broker_log=broker_log)
    if failures:
        topic_reasons.append(failure_reason(failures, OFFSETS_TOPIC))
        topic_reasons.sort(key=lambda r: -RANK[r.severity])
    verdict = max([worst(topic_reasons), *(p.verdict for p in audits)], key=RANK.__getitem__)
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
        history.append(_history_entry(audit))
    return audit


def _history_entry(audit: CleanerAudit) -> dict[str, Any]:
    """The line ``audits.jsonl`` keeps of ``audit``: its verdict and each partition's snapshot."""
    now = audit.audited_at_ms
    return {
        "audited_at_ms": now,
        "log_dir": audit.log_dir,
        "verdict": audit.verdict,
        "partitions": {str(p.partition): p.snapshot(now).to_json() for p in audit.partitions},
    }


#: divergence kinds that mean two copies are different logs (CRITICAL), beside a follower ahead (DEGRADED)
_DIVERGENCE_SEVERITY = {DIFFERENT_BATCHES: CRITICAL, EPOCH_HISTORY: CRITICAL, AHEAD_OF_CHOSEN: DEGRADED}


def _divergence_reason(d: Divergence, topic: str) -> Reason:
    tp = f"{topic}-{d.partition}"
    if d.kind == AHEAD_OF_CHOSEN:
        remedy = (
            f"nothing if broker {d.broker_id} is a running follower (it truncates to the leader on its next "
            "fetch); if these files are from stopped brokers, the records past the chosen copy's end were "
            "never committed and the reload leaves them out"
        )
    else:
        remedy = (
            f"compare the two copies with offsetops dump at offset {d.offset} on brokers {d.broker_id} and "
            f"{d.chosen_broker_id}; once the leader's copy is known good, let the other re-replicate "
            f"(stop that broker, move its {tp} dir aside, start it: it fetches the partition from the "
            "leader)"
        )
    return Reason(
        _DIVERGENCE_SEVERITY[d.kind],
        "replica_divergence",
        f"{tp} on broker {d.broker_id} differs from broker {d.chosen_broker_id}'s copy: {d.message}",
        remedy,
    )


def audit_log_dirs(
    dirs: LogDirs,
    *,
    config: CleanerConfig | None = None,
    thresholds: Thresholds | None = None,
    now_ms: int,
    metrics: Mapping[int, CleanerMetrics] | None = None,
    broker_logs: Mapping[int, BrokerLogReport] | None = None,
    live: ClusterConfig | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    record_history: bool = True,
    verify_crc: bool = True,
) -> CleanerAudit:
    """Audit several brokers' log dirs in one run, one row per replica (``broker_id`` set on each).

    Each broker's cleaner compacts its own copy, so each copy is audited against its own log dir's
    checkpoints (:func:`audit_log_dir`); ``metrics`` and ``broker_logs`` are per broker id. Copies that
    diverge from the copy a reload would read (:mod:`offsetops.coordinator_core.sources.replicas`) get a
    ``replica_divergence`` finding on their row.
    """
    cfg, th = config or CleanerConfig(), thresholds or Thresholds()
    now = now_ms
    per_broker = [
        (
            b.broker_id,
            audit_log_dir(
                b.log_dir,
                config=cfg,
                thresholds=th,
                now_ms=now,
                metrics=(metrics or {}).get(b.broker_id),
                broker_log=(broker_logs or {}).get(b.broker_id),
                state_dir=state_dir,
                record_history=record_history,
                verify_crc=verify_crc,
            ),
        )
        for b in dirs.brokers
    ]
    return merge_broker_audits(
        per_broker,
        dirs.choices(),
        brokers={b.broker_id: str(Path(b.log_dir.path).resolve()) for b in dirs.brokers},
        config=cfg,
        thresholds=th,
        now_ms=now,
        live=live,
        notes=list(dirs.notes),
    )


def merge_broker_audits(
    per_broker: Sequence[tuple[int, CleanerAudit]],
    choices: Sequence[ReplicaChoice],
    *,
    brokers: Mapping[int, str],
    config: CleanerConfig,
    thresholds: Thresholds,
    now_ms: int,
    live: ClusterConfig | None = None,
    notes: Sequence[str] = (),
    extra_reasons: Sequence[Reason] = (),
) -> CleanerAudit:
    """One audit of several brokers from each broker's own audit and the replica choices: rows carry
    their ``broker_id``, topic findings from one broker's metrics or logs name it, divergent copies get
    a ``replica_divergence`` finding."""
    all_notes = [*notes, *(live.notes if live is not None else ())]
    partitions: list[PartitionAudit] = []
    failures: list[PartitionFailure] = []
    topic_reasons = judge_topic(config=config, thresholds=thresholds, metrics=None, broker_log=None)
    topic_reasons.extend(extra_reasons)
    history_file = None
    for bid, one in per_broker:
        history_file = history_file or one.history_file
        for pa in one.partitions:
            pa.broker_id = bid
        partitions.extend(one.partitions)
        failures.extend(dataclasses.replace(f, broker_id=bid) for f in one.failures)
        all_notes.extend(f"broker {bid}: {n}" for n in one.notes)
        # The config findings are the same for every broker; the metrics and broker-log ones are its own.
        known = {(r.code, r.message) for r in topic_reasons}
        topic_reasons.extend(
            dataclasses.replace(r, message=f"broker {bid}: {r.message}")
            for r in one.reasons
            if (r.code, r.message) not in known and r.code != "partition_audit_failed"
        )
    rows = {(pa.partition, pa.broker_id): pa for pa in partitions}
    for choice in choices:
        for d in choice.divergences:
            pa = rows.get((d.partition, d.broker_id))
            reason = _divergence_reason(d, OFFSETS_TOPIC)
            if pa is None:
                topic_reasons.append(reason)
                continue
            pa.reasons = sorted([*pa.reasons, reason], key=lambda r: -RANK[r.severity])
            pa.verdict = worst(pa.reasons)
    if failures:
        topic_reasons.append(failure_reason(failures, OFFSETS_TOPIC))
    topic_reasons.sort(key=lambda r: -RANK[r.severity])
    partitions.sort(key=lambda p: (p.partition, p.broker_id or 0))
    verdict = max([worst(topic_reasons), *(p.verdict for p in partitions)], key=RANK.__getitem__)
    return CleanerAudit(
        log_dir=", ".join(f"broker {b}: {d}" for b, d in sorted(brokers.items())),
        audited_at_ms=now_ms,
        config=config,
        thresholds=thresholds,
        partitions=partitions,
        reasons=topic_reasons,
        verdict=verdict,
        live=live,
        history_file=history_file,
        notes=all_notes,
        failures=failures,
        brokers=dict(brokers),
        replicas=list(choices),
    )
