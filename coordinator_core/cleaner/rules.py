"""The verdict rules of the Log Cleaner audit, as data: one :class:`Rule` per finding.

A rule has the stable codes it can emit, the worst severity it can give, a one-line description and
a function from what it looks at (a :class:`PartitionView` or a :class:`TopicView`) to its findings,
each a :class:`~offsetops.coordinator_core.cleaner.model.Reason` with a remedy. :data:`PARTITION_RULES` and
:data:`TOPIC_RULES` are evaluated in order; the findings are then sorted worst first (a stable sort,
so the table order breaks ties), and the worst severity is the verdict. docs/cleaner-audit.md
explains each code to operators.

The module is longer than most because every rule carries its full operator text (what is wrong, in
numbers, and the command that fixes it); splitting the table would scatter one concept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar

from offsetops.coordinator_core.cleaner.broker_log import BrokerLogReport
from offsetops.coordinator_core.cleaner.config import CleanerConfig
from offsetops.coordinator_core.cleaner.metrics import CleanerMetrics
from offsetops.coordinator_core.cleaner.model import (
    CRITICAL,
    DEGRADED,
    RANK,
    PartitionAudit,
    PartitionFailure,
    Reason,
    Thresholds,
    format_bytes,
)
from offsetops.coordinator_core.sources.logdir import OFFSETS_TOPIC
from offsetops.coordinator_core.timefmt import format_duration

__all__ = [
    "PARTITION_RULES",
    "TOPIC_RULES",
    "PartitionView",
    "Rule",
    "TopicView",
    "failure_reason",
    "judge_partition",
    "judge_topic",
]

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Rule(Generic[V]):
    """One verdict rule: the codes it emits, its worst severity, what it detects, and how."""

    codes: tuple[str, ...]
    worst: str
    description: str
    evaluate: Callable[[V], Iterable[Reason]]


@dataclass(frozen=True, slots=True)
class PartitionView:
    """What a partition rule looks at."""

    pa: PartitionAudit
    config: CleanerConfig
    thresholds: Thresholds
    now_ms: int
    topic: str

    @property
    def tp(self) -> str:
        return f"{self.topic}-{self.pa.partition}"

    @property
    def min_ratio(self) -> float:
        return self.config.min_cleanable_dirty_ratio

    @property
    def stalled(self) -> bool:
        """Eligible, yet the first dirty offset has not moved for longer than ``no_progress_ms``."""
        prog = self.pa.progress
        return (
            prog is not None
            and prog.stalled_for_ms is not None
            and self.pa.eligible
            and prog.stalled_for_ms > self.thresholds.no_progress_ms
        )


@dataclass(frozen=True, slots=True)
class TopicView:
    """What a topic rule looks at: the effective config and the broker-wide signals."""

    config: CleanerConfig
    thresholds: Thresholds
    metrics: CleanerMetrics | None
    broker_log: BrokerLogReport | None
    topic: str


def _utc(ms: int | None) -> str:
    if ms is None:
        return "an unknown time"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# --------------------------------------------------------------------------------------------------
# Partition rules
# --------------------------------------------------------------------------------------------------


def _marked_uncleanable(v: PartitionView) -> Iterator[Reason]:
    mark = v.pa.marked_uncleanable
    if mark is None:
        return
    yield Reason(
        CRITICAL,
        "marked_uncleanable",
        f"the cleaner marked {v.tp} uncleanable at {_utc(mark.timestamp_ms)}: {mark.message}; it will "
        f"not clean this partition again until the broker restarts",
        "find the exception in log-cleaner.log (corrupt batch, batch larger than the cleaner "
        "buffer); fix "
        "the cause (offsetops dump the segment; raise log.cleaner.io.buffer.size or "
        "max.message.bytes), "
        "then restart the broker, since uncleanable marks live only in memory",
    )


def _hanging_transactions(v: PartitionView) -> Iterator[Reason]:
    pa = v.pa
    for txn in pa.open_transactions:
        if txn.age_ms <= v.thresholds.hanging_transaction_ms:
            continue
        pins = "open_transaction" in pa.uncleanable_reasons and txn.first_offset == pa.last_stable_offset
        severe = pins and pa.unpinned_dirty_ratio > v.min_ratio
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
        yield Reason(
            CRITICAL if severe else DEGRADED,
            "hanging_transaction",
            what,
            "abort it with kafka-transactions.sh --bootstrap-server <broker> find-hanging --broker-id "
            "<leader>, "
            f"then kafka-transactions.sh --bootstrap-server <broker> abort --topic {v.topic} --partition "
            f"{pa.partition} --start-offset {txn.first_offset}",
        )


def _no_progress(v: PartitionView) -> Iterator[Reason]:
    pa, prog = v.pa, v.pa.progress
    if not v.stalled or prog is None:
        return
    growth = ""
    if prog.growth_bytes_per_hour is not None:
        growth = f"; the partition grew {format_bytes(prog.growth_bytes_per_hour)}/h since the previous audit"
    yield Reason(
        CRITICAL,
        "no_progress",
        f"cleaner made no progress for {format_duration(prog.stalled_for_ms or 0)} while dirty ratio "
        f"{pa.dirty_ratio:.2f} > {v.min_ratio:g} (first dirty offset stuck at {pa.first_dirty_offset} "
        "over "
        f"{prog.audits_considered + 1} audits){growth}",
        "check DeadThreadCount and log-cleaner.log for 'Error due to' or 'as uncleanable'; a dead "
        "cleaner "
        "thread only comes back with a broker restart (rolling restart of this broker, after moving "
        "leadership away)",
    )


def _cleaning_due(v: PartitionView) -> Iterator[Reason]:
    pa, prog = v.pa, v.pa.progress
    if v.stalled or not pa.eligible:
        return
    if pa.dirty_ratio > v.min_ratio:
        why = f"dirty ratio {pa.dirty_ratio:.2f} > min.cleanable.dirty.ratio {v.min_ratio:g}"
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
    if pa.newest_cleanable_segment_mtime_ms is not None and (prog is None or not prog.checkpoint_advanced):
        idle = v.now_ms - pa.newest_cleanable_segment_mtime_ms
        if idle > v.thresholds.no_progress_ms:
            state += (
                f"; the newest cleanable segment was last written {format_duration(idle)} ago, so the "
                f"cleaner has probably not run since"
            )
    yield Reason(
        DEGRADED,
        "cleaning_due",
        f"{why}; cleaning is due ({state})",
        "nothing if the next audit shows the checkpoint advancing; otherwise check the cleaner "
        "threads "
        "(DeadThreadCount, time-since-last-run-ms) and log-cleaner.log",
    )


def _dirty_active_segment(v: PartitionView) -> Iterator[Reason]:
    pa, age = v.pa, v.pa.active_segment_age_ms
    if not (
        pa.active_segment_reclaimable_bytes >= max(v.thresholds.dirty_active_segment_bytes, 1)
        and age is not None
        and age > pa.max_segment_ms
        and pa.rolled_dirty_ratio > v.min_ratio
    ):
        return
    yield Reason(
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
        f"for a group stored in {v.tp} (offsetops reload --partition "
        f"{pa.partition} lists them; offsetops partition-for GROUP checks a new id); "
        "lowering segment.ms or max.compaction.lag.ms does not help a quiet partition, since "
        "both only take effect when a record is appended",
    )


def _checkpoint_beyond_log_end(v: PartitionView) -> Iterator[Reason]:
    pa = v.pa
    if pa.checkpoint_reset != "above_log_end":
        return
    yield Reason(
        DEGRADED,
        "checkpoint_beyond_log_end",
        f"cleaner-offset-checkpoint says {pa.checkpoint} but the log ends at {pa.log_end_offset}; "
        "the broker "
        f"will reset it to the log start {pa.log_start_offset} and re-clean the whole partition",
        "look for truncation or a restored/partial log dir; the reset itself is automatic",
    )


def _expired_tombstones(v: PartitionView) -> Iterator[Reason]:
    # Kafka keeps expired tombstones until the next pass, and a pass only comes once the partition is
    # eligible: before that they are expected (still counted in the numbers), not a finding.
    pa = v.pa
    if not (pa.eligible and pa.expired_tombstones_cleanable >= max(v.thresholds.expired_tombstones_min, 1)):
        return
    yield Reason(
        DEGRADED,
        "expired_tombstones",
        f"{pa.expired_tombstones_cleanable} tombstone(s) older than delete.retention.ms "
        f"({format_duration(v.config.delete_retention_ms)}) are still present in the cleanable range "
        f"({pa.expired_tombstones} in the whole log) of a partition that is due for cleaning; "
        "no cleaning pass has run since they expired",
        "check that the cleaner is running (log-cleaner.log, DeadThreadCount, "
        "time-since-last-run-ms); to force passes on a quiet partition set max.compaction.lag.ms "
        f"on the topic (kafka-configs.sh --alter --entity-type topics --entity-name {v.topic} "
        "--add-config max.compaction.lag.ms=...)",
    )


def _dedupe_buffer(v: PartitionView) -> Iterator[Reason]:
    pa, config = v.pa, v.config
    if not (pa.dedupe_capacity and pa.dirty_keys >= pa.dedupe_capacity * v.thresholds.dedupe_tight_ratio):
        return
    passes = -(-pa.dirty_keys // pa.dedupe_capacity)
    too_small = pa.dirty_keys > pa.dedupe_capacity
    yield Reason(
        DEGRADED,
        "dedupe_buffer_too_small" if too_small else "dedupe_buffer_tight",
        f"{pa.dirty_keys} distinct keys in the dirty range vs a dedupe map of {pa.dedupe_capacity} "
        "keys per "
        f"thread (log.cleaner.dedupe.buffer.size {format_bytes(config.dedupe_buffer_size)} / "
        f"{config.cleaner_threads} thread(s) / 24 B x {config.dedupe_load_factor:g})"
        + (f"; the cleaner needs {passes} passes to get through it" if too_small else ""),
        "raise log.cleaner.dedupe.buffer.size (or lower log.cleaner.threads) in server.properties",
    )


def _fast_growth(v: PartitionView) -> Iterator[Reason]:
    prog = v.pa.progress
    if (
        prog is None
        or prog.growth_bytes_per_hour is None
        or prog.growth_bytes_per_hour <= v.thresholds.growth_bytes_per_hour
        or v.stalled
    ):
        return
    yield Reason(
        DEGRADED,
        "fast_growth",
        f"grew {format_bytes(prog.growth_bytes_per_hour)}/h since the previous audit "
        f"(threshold {format_bytes(v.thresholds.growth_bytes_per_hour)}/h)",
        "find the committing client (offsetops reload, look for groups committing in a tight loop) "
        "and "
        "confirm the cleaner keeps up",
    )


def _corrupt_data(v: PartitionView) -> Iterator[Reason]:
    pa = v.pa
    if not pa.decode_errors:
        return
    yield Reason(
        DEGRADED,
        "corrupt_data",
        f"{len(pa.decode_errors)} decode error(s), first: {pa.decode_errors[0]}; the cleaner fails "
        "on the "
        f"same bytes and would mark the partition uncleanable",
        "inspect with offsetops dump; recover the segment from a replica (reassign or delete the "
        "local "
        "replica so it re-fetches)",
    )


PARTITION_RULES: tuple[Rule[PartitionView], ...] = (
    Rule(
        ("marked_uncleanable",),
        CRITICAL,
        "the broker log shows the cleaner marked the partition uncleanable (kept until a restart)",
        _marked_uncleanable,
    ),
    Rule(
        ("hanging_transaction",),
        CRITICAL,
        "an open transaction older than hanging_transaction_ms; CRITICAL when it pins the LSO and the "
        "partition would be cleanable without it",
        _hanging_transactions,
    ),
    Rule(
        ("no_progress",),
        CRITICAL,
        "eligible for cleaning, but the first dirty offset has not moved for no_progress_ms",
        _no_progress,
    ),
    Rule(
        ("cleaning_due",),
        DEGRADED,
        "eligible for cleaning (dirty ratio or max.compaction.lag.ms) and not yet stalled",
        _cleaning_due,
    ),
    Rule(
        ("dirty_active_segment",),
        DEGRADED,
        "the active segment holds reclaimable bytes past maxSegmentMs and nothing appends to roll it",
        _dirty_active_segment,
    ),
    Rule(
        ("checkpoint_beyond_log_end",),
        DEGRADED,
        "cleaner-offset-checkpoint is past the log end; the broker resets it and re-cleans",
        _checkpoint_beyond_log_end,
    ),
    Rule(
        ("expired_tombstones",),
        DEGRADED,
        "tombstones past delete.retention.ms remain in the cleanable range of an eligible partition",
        _expired_tombstones,
    ),
    Rule(
        ("dedupe_buffer_too_small", "dedupe_buffer_tight"),
        DEGRADED,
        "distinct dirty keys reach dedupe_tight_ratio of the cleaner's dedupe map",
        _dedupe_buffer,
    ),
    Rule(
        ("fast_growth",),
        DEGRADED,
        "the partition grew faster than growth_bytes_per_hour since the previous audit",
        _fast_growth,
    ),
    Rule(
        ("corrupt_data",),
        DEGRADED,
        "decode errors in the partition, on which the cleaner would fail too",
        _corrupt_data,
    ),
)


# --------------------------------------------------------------------------------------------------
# Topic and broker rules
# --------------------------------------------------------------------------------------------------


def _cleanup_policy(v: TopicView) -> Iterator[Reason]:
    config = v.config
    if config.cleanup_policy.strip() == "compact":
        return
    yield Reason(
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
        f"{v.topic} "
        "--add-config cleanup.policy=compact",
    )


def _cleaner_disabled(v: TopicView) -> Iterator[Reason]:
    if v.config.cleaner_enable:
        return
    yield Reason(
        CRITICAL,
        "cleaner_disabled",
        f"log.cleaner.enable=false ({v.config.source_of('cleaner_enable')}); {v.topic} is never "
        "compacted and "
        f"grows without bound",
        "set log.cleaner.enable=true in server.properties and do a rolling restart",
    )


def _dead_cleaner_thread(v: TopicView) -> Iterator[Reason]:
    dead = None if v.metrics is None else v.metrics.dead_thread_count
    if dead is None or dead <= 0:
        return
    yield Reason(
        CRITICAL,
        "dead_cleaner_thread",
        f"DeadThreadCount is {dead:g}: a log cleaner thread has died and nothing is being compacted by it",
        "find 'Error due to' in log-cleaner.log for the cause, fix it, then restart the broker "
        "(a dead "
        "cleaner thread is only restarted with the broker)",
    )


def _uncleanable_partitions(v: TopicView) -> Iterator[Reason]:
    metrics = v.metrics
    count = None if metrics is None else metrics.uncleanable_partitions_count
    if metrics is None or count is None or count <= 0:
        return
    ubytes = metrics.uncleanable_bytes
    extra = f" holding {format_bytes(ubytes)}" if ubytes else ""
    yield Reason(
        CRITICAL,
        "uncleanable_partitions",
        f"uncleanable-partitions-count is {count:g}{extra}: the cleaner gave up on those partitions",
        "grep log-cleaner.log for 'as uncleanable' to find which and why; fix the cause and "
        "restart the "
        "broker (marks are kept in memory only)",
    )


def _cleaner_not_running(v: TopicView) -> Iterator[Reason]:
    since = None if v.metrics is None else v.metrics.time_since_last_run_ms
    if since is None or since <= v.thresholds.time_since_last_run_ms:
        return
    yield Reason(
        DEGRADED,
        "cleaner_not_running",
        f"time-since-last-run-ms is {format_duration(since)} (threshold "
        f"{format_duration(v.thresholds.time_since_last_run_ms)}): the cleaner loop has not "
        "picked a log "
        f"for that long",
        "check whether the cleaner threads are stuck on one huge log (max-clean-time-secs) or "
        "dead "
        "(DeadThreadCount)",
    )


def _slow_cleaning(v: TopicView) -> Iterator[Reason]:
    clean_time = None if v.metrics is None else v.metrics.max_clean_time_secs
    if clean_time is None or clean_time <= v.thresholds.max_clean_time_secs:
        return
    yield Reason(
        DEGRADED,
        "slow_cleaning",
        f"max-clean-time-secs is {clean_time:g} s (threshold {v.thresholds.max_clean_time_secs:g} s)",
        "raise log.cleaner.io.max.bytes.per.second if throttled, or log.cleaner.threads",
    )


def _cleaner_thread_died(v: TopicView) -> Iterator[Reason]:
    if v.broker_log is None:
        return
    for thread, event in sorted(v.broker_log.dead_threads().items()):
        yield Reason(
            CRITICAL,
            "cleaner_thread_died",
            f"kafka-log-cleaner-thread-{thread} died at {_utc(event.timestamp_ms)}: {event.message}",
            "fix the cause shown, then restart the broker to restart the cleaner thread",
        )


TOPIC_RULES: tuple[Rule[TopicView], ...] = (
    Rule(("cleanup_policy",), CRITICAL, "cleanup.policy of the topic is not 'compact'", _cleanup_policy),
    Rule(("cleaner_disabled",), CRITICAL, "log.cleaner.enable=false on the broker", _cleaner_disabled),
    Rule(("dead_cleaner_thread",), CRITICAL, "JMX DeadThreadCount above 0", _dead_cleaner_thread),
    Rule(
        ("uncleanable_partitions",),
        CRITICAL,
        "JMX uncleanable-partitions-count above 0",
        _uncleanable_partitions,
    ),
    Rule(
        ("cleaner_not_running",),
        DEGRADED,
        "JMX time-since-last-run-ms above time_since_last_run_ms",
        _cleaner_not_running,
    ),
    Rule(("slow_cleaning",), DEGRADED, "JMX max-clean-time-secs above max_clean_time_secs", _slow_cleaning),
    Rule(
        ("cleaner_thread_died",),
        CRITICAL,
        "the broker log shows a kafka-log-cleaner-thread died",
        _cleaner_thread_died,
    ),
)


def _evaluate(rules: Sequence[Rule[V]], view: V) -> list[Reason]:
    out = [reason for rule in rules for reason in rule.evaluate(view)]
    out.sort(key=lambda r: -RANK[r.severity])
    return out


def judge_partition(
    pa: PartitionAudit,
    *,
    config: CleanerConfig,
    thresholds: Thresholds,
    now_ms: int,
    topic: str = OFFSETS_TOPIC,
) -> list[Reason]:
    """The findings for one partition, worst first; the verdict is the worst severity among them."""
    return _evaluate(PARTITION_RULES, PartitionView(pa, config, thresholds, now_ms, topic))


def judge_topic(
    *,
    config: CleanerConfig,
    thresholds: Thresholds,
    metrics: CleanerMetrics | None,
    broker_log: BrokerLogReport | None,
    topic: str = OFFSETS_TOPIC,
) -> list[Reason]:
    """Findings that belong to the topic or the broker rather than one partition."""
    return _evaluate(TOPIC_RULES, TopicView(config, thresholds, metrics, broker_log, topic))


def failure_reason(failures: Sequence[PartitionFailure], topic: str) -> Reason:
    """The topic finding for partitions the audit could not compute."""
    names = ", ".join(f"{topic}-{f.partition} ({f.error})" for f in failures[:5])
    more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
    return Reason(
        DEGRADED,
        "partition_audit_failed",
        f"{len(failures)} partition(s) could not be audited, so their health is unknown: {names}{more}",
        "inspect the partition with offsetops dump and its checkpoints; the other partitions were "
        "audited as usual",
    )
