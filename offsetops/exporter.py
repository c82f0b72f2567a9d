"""Prometheus exporter: the offsets view, cleaner audit, expiration risk and failover forecast as metrics.

Names follow the KMinion/Burrow exporters operators already chart (``*_consumer_group_topic_partition_lag``
with ``group_id``, ``topic_name`` and ``partition_id`` labels; ``*_topic_partition_high_water_mark``),
under the ``offsetops_`` prefix. Everything is computed on scrape from one snapshot that is refreshed at
most every ``min_interval_s``, so a busy Prometheus never makes the exporter reread the log dir in a loop.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.cleaner.model import CRITICAL, DEGRADED, HEALTHY, CleanerAudit
from offsetops.coordinator_core.describe import (
    OUT_OF_RANGE,
    GroupFilter,
    GroupView,
    describe_groups,
    wanted_partitions,
)
from offsetops.coordinator_core.escape import prometheus_label_value
from offsetops.coordinator_core.expiration import ExpirationPlan
from offsetops.coordinator_core.failover import DEFAULT_SLOW_MS, FailoverForecast, ObservedLoad
from offsetops.coordinator_core.findings import prometheus_value

log = logging.getLogger(__name__)

PREFIX = "offsetops"
VERDICT_VALUE = {s: prometheus_value(s) for s in (HEALTHY, DEGRADED, CRITICAL)}


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


def build_snapshot(args: argparse.Namespace) -> Snapshot:
    """Reload, describe, audit the cleaner (log dirs only), plan expiration and forecast failover, as of
    ``--now``, else the clock the log dir declares, else the wall clock."""
    from offsetops.commands._groupview import lookup_offsets
    from offsetops.commands._load import load_caches
    from offsetops.coordinator_core.clock import resolve_clock
    from offsetops.coordinator_core.failover import read_load_logs

    started = time.time()
    now = resolve_clock(args.path, configured_ms=getattr(args, "now", None), configured_by="--now").as_of_ms
    caches = load_caches(args)
    offsets, _where = lookup_offsets(args, wanted_partitions(caches, GroupFilter()))
    return compute_snapshot(
        caches,
        offsets,
        log_dir=args.path,
        now_ms=now,
        retention_ms=args.retention_ms,
        forecast_horizon_ms=args.forecast_horizon_ms,
        observed=read_load_logs(args.broker_log),
        failover_threshold_ms=args.failover_threshold_ms,
        taken_at=started,
    )


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
    taken_at: float | None = None,
    audit_state_dir: str | None = None,
) -> Snapshot:
    """Everything the metrics show, from reloaded caches and the data partitions' log offsets; the
    cleaner audit needs the log dir (``log_dir=None`` for a live cluster leaves it out, with a note).
    ``audit_state_dir`` is the audit history to judge progress by (read, never appended to), so a
    stalled cleaner is CRITICAL here as in the audit that recorded it."""
    from offsetops.coordinator_core.cleaner.audit import audit_log_dir
    from offsetops.coordinator_core.expiration import plan_expiration
    from offsetops.coordinator_core.failover import forecast_failover, loads_from_caches

    taken = time.time() if taken_at is None else taken_at
    snap = Snapshot(taken, caches, describe_groups(caches, log_offsets), log_offsets)
    if log_dir:
        snap.audit = audit_log_dir(log_dir, now_ms=now_ms, state_dir=audit_state_dir, record_history=False)
    else:
        snap.notes.append("cleaner audit needs the log dir; not exported with --bootstrap")
    snap.expiration = plan_expiration(
        caches, now_ms=now_ms, retention_ms=retention_ms, forecast_horizon_ms=forecast_horizon_ms
    )
    snap.failover = forecast_failover(
        loads_from_caches(caches), observed=observed, threshold_ms=failover_threshold_ms
    )
    return snap


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
    yield from _group_metrics(snap, granularity)
    yield from _reload_metrics(snap.caches)
    if snap.audit is not None:
        yield from _cleaner_metrics(snap.audit)
    if snap.expiration is not None:
        yield from _expiration_metrics(snap.expiration)
    if snap.failover is not None:
        yield from _failover_metrics(snap.failover)


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
    for (topic, part), lo in sorted(snap.log_offsets.items()):
        if lo.log_end_offset is not None:
            high.add_metric([topic, str(part), lo.source], lo.log_end_offset)
        if lo.log_start_offset is not None:
            low.add_metric([topic, str(part), lo.source], lo.log_start_offset)
    yield from (info, members, generation, topic_lag, part_lag, committed, oor, oor_count, last_commit)
    yield from (high, low)


def _reload_metrics(caches: list[CoordinatorCache]) -> Iterator[Metric]:
    labels = ["partition"]
    fams = {
        "records": _g("reload_records", "Records replayed from the offsets partition", labels),
        "batches": _g("reload_batches", "Batches replayed", labels),
        "bytes": _g("reload_bytes", "Bytes replayed", labels),
        "errors": _g("reload_decode_errors", "Decode errors during the replay", labels),
        "groups": _g("reload_groups", "Groups in the rebuilt cache", labels),
        "offsets": _g("reload_offsets", "Committed offsets in the rebuilt cache", labels),
        "seconds": _g("reload_duration_seconds", "Time the replay took", labels),
    }
    for c in caches:
        p = [str(c.partition)]
        s = c.stats
        fams["records"].add_metric(p, s.records)
        fams["batches"].add_metric(p, s.batches)
        fams["bytes"].add_metric(p, s.bytes)
        fams["errors"].add_metric(p, len(s.errors))
        fams["groups"].add_metric(p, len(c.groups))
        fams["offsets"].add_metric(p, c.offset_count)
        fams["seconds"].add_metric(p, s.elapsed_ms / 1000)
    yield from fams.values()


def _cleaner_metrics(audit: CleanerAudit) -> Iterator[Metric]:
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
        txn_age.add_metric(lab, max((t.age_ms for t in p.open_transactions), default=0) / 1000)
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


class OffsetsCollector(Collector):
    """Serves the latest snapshot; a background thread refreshes it every ``interval_s``.

    Scrapes never wait for a refresh (a reload of a large log dir can outlast Prometheus's scrape
    timeout). A failed refresh keeps the previous numbers, sets ``offsetops_exporter_up`` to 0 and
    counts the error, so a dashboard shows stale-but-true data and an alert can fire on ``up``.
    """

    def __init__(self, refresh: Callable[[], Snapshot], *, granularity: str = "partition"):
        self._refresh = refresh
        self._granularity = granularity
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._up = 0
        self._errors = 0
        self._last_duration = 0.0
        self.last_error: str | None = None

    def refresh(self) -> None:
        started = time.monotonic()
        try:
            snap = self._refresh()
        except Exception as exc:  # keep serving the last snapshot; the error is logged and counted
            with self._lock:
                self._up = 0
                self._errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._last_duration = time.monotonic() - started
            log.error("refresh failed: %s", self.last_error)
            return
        with self._lock:
            self._snapshot = snap
            self._up = 1
            self.last_error = None
            self._last_duration = time.monotonic() - started

    def run_forever(self, interval_s: float, stop: threading.Event) -> None:
        """Refresh every ``interval_s`` until ``stop`` is set (the first refresh is the caller's)."""
        while not stop.wait(interval_s):
            self.refresh()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snap, up_value, errors_value, last = self._snapshot, self._up, self._errors, self._last_duration
        up = _g("exporter_up", "1 when the last refresh succeeded")
        up.add_metric([], up_value)
        yield up
        errors = CounterMetricFamily(f"{PREFIX}_exporter_refresh_errors", "Refreshes that failed")
        errors.add_metric([], errors_value)
        yield errors
        duration = _g("exporter_refresh_duration_seconds", "Time the last refresh took")
        duration.add_metric([], last)
        yield duration
        if snap is not None:
            taken = _g("exporter_snapshot_timestamp_seconds", "When the served numbers were computed")
            taken.add_metric([], snap.taken_at)
            yield taken
            yield from snapshot_metrics(snap, granularity=self._granularity)
