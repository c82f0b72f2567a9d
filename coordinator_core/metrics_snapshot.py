"""The metrics snapshot: the offsets view, cleaner audit, expiration risk and failover forecast as metric
families, shared by ``offsetops exporter`` and the ``offsets_metrics`` asset's textfile.

Names follow the KMinion/Burrow exporters operators already chart (``*_consumer_group_topic_partition_lag``
with ``group_id``, ``topic_name`` and ``partition_id`` labels; ``*_topic_partition_high_water_mark``),
under the ``offsetops_`` prefix. :func:`compute_snapshot` computes everything once; :func:`snapshot_metrics`
turns one snapshot into the families, so every surface that shows these numbers shows the same ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.cleaner.manager import LogToClean
from offsetops.coordinator_core.cleaner.model import CRITICAL, DEGRADED, HEALTHY, CleanerAudit
from offsetops.coordinator_core.describe import (
    OUT_OF_RANGE,
    GroupView,
    describe_groups,
)
from offsetops.coordinator_core.errors import count_errors
from offsetops.coordinator_core.escape import prometheus_label_value
from offsetops.coordinator_core.expiration import ExpirationPlan
from offsetops.coordinator_core.failover import DEFAULT_SLOW_MS, FailoverForecast, ObservedLoad
from offsetops.coordinator_core.findings import prometheus_value
from offsetops.coordinator_core.run import RunSettings
from offsetops.coordinator_core.streams_group import TASK_TYPES, StreamsGroup
from prometheus_client.core import GaugeMetricFamily, Metric

PREFIX = "offsetops"
VERDICT_VALUE = {s: prometheus_value(s) for s in (HEALTHY, DEGRADED, CRITICAL)}


@dataclass(frozen=True, slots=True)
class AssignmentFigures:
    """What a share or streams group holds beyond its offsets (KIP-932, KIP-1071), as the metrics show
    it: the target assignment epoch and, for a streams group, the tasks its members own per task type."""

    group_id: str
    group_type: str
    assignment_epoch: int
    #: streams groups only: (task type, tasks owned by the members) for each of TASK_TYPES
    tasks: tuple[tuple[str, int], ...] | None = None


def assignment_figures(views: Iterable[GroupView]) -> list[AssignmentFigures]:
    """The figures of every share and streams group among ``views``, from its replayed detail."""
    out = []
    for v in views:
        detail = v.detail
        if detail is None:
            continue
        tasks = None
        if isinstance(detail, StreamsGroup):
            tasks = tuple(
                (t, sum(len(p) for m in detail.members for p in m.assigned_tasks.by_type()[t].values()))
                for t in TASK_TYPES
            )
        out.append(AssignmentFigures(v.group_id, detail.group_type, detail.assignment_epoch, tasks))
    return out


@dataclass(frozen=True, slots=True)
class CleanerPartitionFigures:
    """One partition's (or one broker's copy's) cleaner audit figures the metrics show
    (``LogCleanerManager`` cleanable bytes and ratio, the audit's verdict, the oldest open transaction)."""

    partition: int
    dirty_ratio: float
    cleanable_bytes: int
    size_bytes: int
    verdict: str
    open_transaction_max_age_ms: int
    broker_id: int | None = None


@dataclass(frozen=True, slots=True)
class CleanerFigures:
    """The cleaner audit as the metrics show it: the overall verdict and each partition's figures."""

    verdict: str
    partitions: tuple[CleanerPartitionFigures, ...]

    @classmethod
    def of_audit(cls, audit: CleanerAudit) -> CleanerFigures:
        return cls(
            audit.verdict,
            tuple(
                CleanerPartitionFigures(
                    p.partition,
                    p.dirty_ratio,
                    p.cleanable_bytes,
                    p.size_bytes,
                    p.verdict,
                    max((t.age_ms for t in p.open_transactions), default=0),
                    p.broker_id,
                )
                for p in audit.partitions
            ),
        )

    @classmethod
    def of_report(cls, doc: Mapping[str, Any]) -> CleanerFigures:
        """From an audit's JSON (``CleanerAudit.to_json``, or the merged ``cleaner_audit.json``); the
        dirty ratio is recomputed from the clean and cleanable bytes, exactly as the audit computed it
        (the JSON rounds it). Raises ``ValueError`` naming the field that is not what it should be."""
        verdict = doc.get("verdict")
        rows = doc.get("partitions")
        if not isinstance(verdict, str) or not isinstance(rows, list):
            raise ValueError("no verdict and partitions list")
        return cls(verdict, tuple(_cleaner_partition_of_json(i, r) for i, r in enumerate(rows)))


def _report_int(row: Mapping[str, Any], key: str, where: str) -> int:
    value = row.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{where}: {key} is {value!r}, not a count")
    return value


def _cleaner_partition_of_json(i: int, row: Any) -> CleanerPartitionFigures:
    if not isinstance(row, Mapping):
        raise ValueError(f"partitions[{i}] is not an object")
    where = f"partitions[{i}]"
    ltc = LogToClean(
        first_dirty_offset=0,
        first_uncleanable_offset=0,
        clean_bytes=_report_int(row, "clean_bytes", where),
        cleanable_bytes=_report_int(row, "cleanable_bytes", where),
    )
    txns = row.get("open_transactions")
    verdict = row.get("verdict")
    broker = row.get("broker_id")
    if not isinstance(txns, list) or not all(isinstance(t, Mapping) for t in txns):
        raise ValueError(f"{where}: open_transactions is not a list of objects")
    if not isinstance(verdict, str) or (broker is not None and not isinstance(broker, int)):
        raise ValueError(f"{where}: verdict or broker_id is not what an audit writes")
    return CleanerPartitionFigures(
        partition=_report_int(row, "partition", where),
        dirty_ratio=ltc.cleanable_ratio,
        cleanable_bytes=ltc.cleanable_bytes,
        size_bytes=_report_int(row, "size_bytes", where),
        verdict=verdict,
        open_transaction_max_age_ms=max((_report_int(t, "age_ms", where) for t in txns), default=0),
        broker_id=broker,
    )


@dataclass(slots=True)
class Snapshot:
    """Everything one refresh computed; any part may be missing when its source is unavailable."""

    taken_at: float
    caches: list[CoordinatorCache]
    views: list[GroupView]
    log_offsets: dict[tuple[str, int], Any]
    audit: CleanerAudit | None = None
    expiration: ExpirationPlan | None = None
    failover: FailoverForecast | None = None
    notes: list[str] = field(default_factory=list)
    #: the settings the numbers were computed with, and their sources (``offsetops_settings_info``)
    settings: RunSettings | None = None
    #: the cleaner figures: of ``audit``, or of an audit the run already made (its report)
    cleaner: CleanerFigures | None = None
    #: share and streams groups' figures: of the views' detail, or of the reload tables
    assignments: list[AssignmentFigures] | None = None


def compute_snapshot(
    caches: list[CoordinatorCache],
    log_offsets: dict[tuple[str, int], Any],
    *,
    log_dir: str | None,
    now_ms: int,
    retention_ms: int,
    forecast_horizon_ms: int,
    observed: Iterable[ObservedLoad] = (),
    failover_threshold_ms: int = DEFAULT_SLOW_MS,
    taken_at: float,
    settings: RunSettings | None = None,
    audit_state_dir: str | None = None,
    audit: CleanerAudit | None = None,
    cleaner: CleanerFigures | None = None,
    assignments: list[AssignmentFigures] | None = None,
    views: list[GroupView] | None = None,
) -> Snapshot:
    """Everything the metrics show, from reloaded caches and the data partitions' log offsets; the
    cleaner audit needs the log dir (``log_dir=None`` for a live cluster leaves it out, with a note).
    ``taken_at`` (epoch seconds) is when the caller took it: the core reads no wall clock.
    ``audit_state_dir`` is the audit history to judge progress by (read, never appended to), so a
    stalled cleaner is CRITICAL here as in the audit that recorded it. ``audit``: an audit already made
    (a following exporter keeps its last refresh's between refreshes), served instead of a new one.

    A caller that already has the run's cleaner audit passes its figures as ``cleaner`` (then the log
    dir is not read again), and one whose caches came from the reload tables (which keep a share or
    streams group's epochs and assignments, not its whole replayed detail) passes ``assignments``.
    ``views``: ``describe_groups(caches, log_offsets)`` already made (a following exporter keeps the
    views of the partitions that did not move, :mod:`~offsetops.coordinator_core.metrics_pieces`)."""
    from offsetops.coordinator_core.cleaner.audit import audit_log_dir
    from offsetops.coordinator_core.expiration import plan_expiration
    from offsetops.coordinator_core.failover import forecast_failover, loads_from_caches

    if views is None:
        views = describe_groups(caches, log_offsets)
    snap = Snapshot(taken_at, caches, views, log_offsets, settings=settings)
    snap.assignments = assignments if assignments is not None else assignment_figures(snap.views)
    if cleaner is not None:
        snap.cleaner = cleaner
    elif audit is not None:
        snap.audit = audit
        snap.cleaner = CleanerFigures.of_audit(audit)
    elif log_dir:
        snap.audit = audit_log_dir(log_dir, now_ms=now_ms, state_dir=audit_state_dir, record_history=False)
        snap.cleaner = CleanerFigures.of_audit(snap.audit)
    else:
        snap.notes.append("cleaner audit needs the log dir; not exported with --bootstrap")
    snap.expiration = plan_expiration(
        caches,
        now_ms=now_ms,
        retention_ms=retention_ms,
        forecast_horizon_ms=forecast_horizon_ms,
        **({"coordinator": settings["coordinator"]} if settings is not None else {}),
    )
    snap.failover = forecast_failover(
        loads_from_caches(caches), observed=observed, threshold_ms=failover_threshold_ms
    )
    return snap


class Families:
    """A one-shot collector: a registry renders exactly the families it is given (the textfile, the
    exporter's follow families)."""

    def __init__(self, families: list[Metric]):
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families


class _Gauge(GaugeMetricFamily):
    """A gauge whose label values (group ids, topics: data) are made visible by the Prometheus label
    policy of coordinator_core.escape; prometheus_client then applies the exposition escapes, so the
    exporter and the textfile carry no raw control, bidi or separator character."""

    def add_metric(self, labels: Any, value: float, timestamp: float | None = None) -> None:
        super().add_metric([prometheus_label_value(v) for v in labels], value, timestamp)


def _g(name: str, doc: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return _Gauge(f"{PREFIX}_{name}", doc, labels=labels or [])


def snapshot_metrics(snap: Snapshot, *, granularity: str = "partition") -> Iterator[Metric]:
    """The metric families of one snapshot."""
    if snap.settings is not None:
        yield settings_info(snap.settings)
    yield from _group_metrics(snap, granularity)
    yield from _reload_metrics(snap.caches)
    yield from topic_metrics(snap)


def topic_metrics(snap: Snapshot) -> Iterator[Metric]:
    """The families that follow the groups' and the reload's: the cleaner audit, the expiration plan
    and the failover forecast."""
    cleaner = snap.cleaner
    if cleaner is None and snap.audit is not None:
        cleaner = CleanerFigures.of_audit(snap.audit)
    if cleaner is not None:
        yield from _cleaner_metrics(cleaner)
    if snap.expiration is not None:
        yield from _expiration_metrics(snap.expiration)
    if snap.failover is not None:
        yield from _failover_metrics(snap.failover)


def settings_info(run: RunSettings) -> Metric:
    """``offsetops_settings_info{name, value, source} 1``: what the numbers were computed with."""
    info = _g("settings_info", "A setting the numbers were computed with, and where it came from (value 1)",
              ["name", "value", "source"])  # fmt: skip
    for name, setting in run.to_json().items():
        if name != "now":
            info.add_metric(
                [name, "" if setting["value"] is None else str(setting["value"]), setting["source"]], 1
            )
    return info


def _group_metrics(snap: Snapshot, granularity: str) -> Iterator[Metric]:
    info = _g(
        "consumer_group_info",
        "Group state and protocol (value 1)",
        ["group_id", "group_type", "state", "protocol_type", "protocol", "coordinator_partition"],
    )
    members = _g("consumer_group_members", "Members of the group", ["group_id"])
    generation = _g("consumer_group_generation", "Generation (group epoch for KIP-848 groups)", ["group_id"])
    topic_lag = _g(
        "consumer_group_topic_lag",
        "Sum of the group's known positive lags per topic",
        ["group_id", "topic_name"],
    )
    part_lag = _g(
        "consumer_group_topic_partition_lag",
        "Log end offset minus committed offset",
        ["group_id", "topic_name", "partition_id"],
    )
    committed = _g(
        "consumer_group_topic_partition_committed_offset",
        "Committed offset",
        ["group_id", "topic_name", "partition_id"],
    )
    oor = _g(
        "consumer_group_topic_partition_offset_out_of_range",
        "1 when the committed offset is below the log start or above the log end",
        ["group_id", "topic_name", "partition_id", "reason"],
    )
    oor_count = _g(
        "consumer_group_offsets_out_of_range", "Committed offsets outside their partition's log", ["group_id"]
    )
    last_commit = _g(
        "consumer_group_last_commit_timestamp_seconds", "Newest commit time of the group", ["group_id"]
    )
    for v in snap.views:
        info.add_metric(
            [
                v.group_id,
                v.group_type,
                v.state,
                v.protocol_type or "",
                v.protocol or "",
                str(v.coordinator_partition),
            ],
            1,
        )
        members.add_metric([v.group_id], v.members)
        generation.add_metric([v.group_id], v.generation)
        oor_count.add_metric([v.group_id], v.out_of_range)
        if v.last_commit_timestamp is not None:
            last_commit.add_metric([v.group_id], v.last_commit_timestamp / 1000)
        per_topic: dict[str, int] = {}
        for r in v.rows:
            if r.lag is not None:
                per_topic[r.topic] = per_topic.get(r.topic, 0) + max(r.lag, 0)
                if granularity == "partition":
                    part_lag.add_metric([v.group_id, r.topic, str(r.partition)], r.lag)
            if r.committed_offset is not None and granularity == "partition":
                committed.add_metric([v.group_id, r.topic, str(r.partition)], r.committed_offset)
            if r.status in OUT_OF_RANGE:
                oor.add_metric([v.group_id, r.topic, str(r.partition), r.status], 1)
        for topic, lag in sorted(per_topic.items()):
            topic_lag.add_metric([v.group_id, topic], lag)
    yield from (info, members, generation, topic_lag, part_lag, committed, oor, oor_count, last_commit)
    yield from _water_mark_metrics(snap.log_offsets)
    assignments = snap.assignments if snap.assignments is not None else assignment_figures(snap.views)
    yield from _group_type_metrics(snap.views, assignments)


def _water_mark_metrics(log_offsets: dict[tuple[str, int], Any]) -> Iterator[Metric]:
    """The data partitions' log end and log start offsets (high and low water marks)."""
    high = _g(
        "topic_partition_high_water_mark",
        "Log end offset of a data partition",
        ["topic_name", "partition_id", "source"],
    )
    low = _g(
        "topic_partition_low_water_mark",
        "Log start offset of a data partition",
        ["topic_name", "partition_id", "source"],
    )
    for (topic, part), lo in sorted(log_offsets.items()):
        if lo.log_end_offset is not None:
            high.add_metric([topic, str(part), lo.source], lo.log_end_offset)
        if lo.log_start_offset is not None:
            low.add_metric([topic, str(part), lo.source], lo.log_start_offset)
    yield from (high, low)


def _group_type_metrics(views: list[GroupView], assignments: list[AssignmentFigures]) -> Iterator[Metric]:
    """Groups per type and state, and what share and streams groups hold beyond offsets."""
    count = _g("groups", "Groups in the cache per type (classic, consumer, share, streams) and state",
               ["group_type", "state"])  # fmt: skip
    epoch = _g(
        "group_assignment_epoch",
        "Target assignment epoch of a share or streams group (lags the group epoch while assigning)",
        ["group_id", "group_type"],
    )
    tasks = _g(
        "streams_group_tasks",
        "Tasks of a streams group owned by its members, per task type (active, standby, warmup)",
        ["group_id", "task_type"],
    )
    tally: dict[tuple[str, str], int] = {}
    for v in views:
        tally[(v.group_type, v.state)] = tally.get((v.group_type, v.state), 0) + 1
    for a in assignments:
        epoch.add_metric([a.group_id, a.group_type], a.assignment_epoch)
        for task_type, owned in a.tasks or ():
            tasks.add_metric([a.group_id, task_type], owned)
    for (group_type, state), n in sorted(tally.items()):
        count.add_metric([group_type, state], n)
    yield from (count, epoch, tasks)


def _reload_metrics(caches: list[CoordinatorCache]) -> Iterator[Metric]:
    labels = ["partition"]
    fams = {
        "records": _g("reload_records", "Records replayed from the offsets partition", labels),
        "batches": _g("reload_batches", "Batches replayed", labels),
        "bytes": _g("reload_bytes", "Bytes replayed", labels),
        "errors": _g("reload_decode_errors", "Decode errors during the replay (notices not counted)", labels),
        "groups": _g("reload_groups", "Groups in the rebuilt cache", labels),
        "offsets": _g("reload_offsets", "Committed offsets in the rebuilt cache", labels),
        "seconds": _g("reload_duration_seconds", "Time the replay took", labels),
        "bytes_read": _g(
            "reload_bytes_read",
            "Segment bytes the partition's latest read took from the log (only the appended bytes when it "
            "resumed)",
            labels,
        ),
        "resumed": _g(
            "reload_resumed", "1 when the partition's latest read went on from its resume state", labels
        ),
    }
    for c in caches:
        p = [str(c.partition)]
        s = c.stats
        fams["records"].add_metric(p, s.records)
        fams["batches"].add_metric(p, s.batches)
        fams["bytes"].add_metric(p, s.bytes)
        fams["errors"].add_metric(p, count_errors(s.errors))
        fams["groups"].add_metric(p, len(c.groups))
        fams["offsets"].add_metric(p, c.offset_count)
        fams["seconds"].add_metric(p, s.elapsed_ms / 1000)
        fams["bytes_read"].add_metric(p, s.bytes_read)
        fams["resumed"].add_metric(p, int(s.resumed))
    yield from fams.values()


def _cleaner_metrics(audit: CleanerFigures) -> Iterator[Metric]:
    labels = ["partition"]
    dirty = _g("cleaner_partition_dirty_ratio", "Cleanable bytes / (clean + cleanable bytes)", labels)
    cleanable = _g("cleaner_partition_cleanable_bytes", "Bytes the cleaner may compact now", labels)
    size = _g("cleaner_partition_size_bytes", "Size of the offsets partition", labels)
    status = _g("cleaner_partition_status", "Audit verdict: 0 HEALTHY, 1 DEGRADED, 2 CRITICAL", labels)
    verdict = _g("cleaner_partition_verdict", "Audit verdict (value 1)", ["partition", "verdict"])
    txn_age = _g(
        "cleaner_partition_open_transaction_max_age_seconds",
        "Age of the oldest open transaction pinning the cleaner",
        labels,
    )
    for p in audit.partitions:
        lab = [str(p.partition)]
        dirty.add_metric(lab, p.dirty_ratio)
        cleanable.add_metric(lab, p.cleanable_bytes)
        size.add_metric(lab, p.size_bytes)
        status.add_metric(lab, VERDICT_VALUE.get(p.verdict, 2))
        verdict.add_metric([str(p.partition), p.verdict], 1)
        txn_age.add_metric(lab, p.open_transaction_max_age_ms / 1000)
    overall = _g("cleaner_status", "Overall audit verdict: 0 HEALTHY, 1 DEGRADED, 2 CRITICAL")
    overall.add_metric([], VERDICT_VALUE.get(audit.verdict, 2))
    yield from (dirty, cleanable, size, status, verdict, txn_age, overall)


def _expiration_metrics(plan: ExpirationPlan) -> Iterator[Metric]:
    at_risk = _g(
        "expiration_offsets_at_risk", "Offsets that expire within the forecast horizon", ["offsets_partition"]
    )
    due = _g("expiration_tombstones_due", "Tombstones a cleanup pass would write now", ["offsets_partition"])
    risk: dict[str, int] = {}
    for e in plan.forecast:
        risk[str(e.offsets_partition)] = risk.get(str(e.offsets_partition), 0) + 1
    tombs: dict[str, int] = {}
    for t in plan.tombstones:
        tombs[str(t.offsets_partition)] = tombs.get(str(t.offsets_partition), 0) + 1
    for part in plan.partitions:
        at_risk.add_metric([str(part)], risk.get(str(part), 0))
        due.add_metric([str(part)], tombs.get(str(part), 0))
    horizon = _g("expiration_forecast_horizon_seconds", "Horizon of the at-risk forecast")
    horizon.add_metric([], plan.forecast_horizon_ms / 1000)
    yield from (at_risk, due, horizon)


def _failover_metrics(fc: FailoverForecast) -> Iterator[Metric]:
    est = _g(
        "coordinator_load_estimated_seconds",
        "Estimated replay time after a coordinator failover",
        ["partition"],
    )
    slow = _g("coordinator_load_slow", "1 when the load would exceed the threshold", ["partition"])
    for p in fc.partitions:
        est.add_metric([str(p.load.partition)], p.estimated_ms / 1000)
        slow.add_metric([str(p.load.partition)], int(p.slow))
    rate = _g("coordinator_load_rate_bytes_per_second", "Replay rate used for the forecast", ["source"])
    rate.add_metric([fc.calibration.source], fc.calibration.bytes_per_second)
    threshold = _g("coordinator_load_threshold_seconds", "Load time above which a partition is slow")
    threshold.add_metric([], fc.threshold_ms / 1000)
    yield from (est, slow, rate, threshold)
