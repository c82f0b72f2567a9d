"""The exporter's serving side: a Prometheus collector that refreshes the metrics snapshot in the background.

The snapshot and its metric families are the core's (:mod:`offsetops.coordinator_core.metrics_snapshot`);
this module builds one from the command line's arguments and serves the latest one on every scrape, so a
busy Prometheus never makes the exporter reread the log dir in a loop.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from offsetops.commands._groupview import lookup_offsets
from offsetops.commands._load import load_caches
from offsetops.coordinator_core.clock import resolve_clock
from offsetops.coordinator_core.describe import GroupFilter, wanted_partitions
from offsetops.coordinator_core.failover import read_load_logs
from offsetops.coordinator_core.metrics_snapshot import (
    PREFIX,
    Snapshot,
    compute_snapshot,
    snapshot_metrics,
)

log = logging.getLogger(__name__)


def _gauge(name: str, doc: str) -> GaugeMetricFamily:
    """The exporter's own health gauges (``offsetops_exporter_*``), beside the snapshot's families."""
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc)


def build_snapshot(args: argparse.Namespace) -> Snapshot:
    """Reload, describe, audit the cleaner (log dirs only), plan expiration and forecast failover, as of
    ``--now``, else the clock the log dir declares, else the wall clock."""
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
        up = _gauge("exporter_up", "1 when the last refresh succeeded")
        up.add_metric([], up_value)
        yield up
        errors = CounterMetricFamily(f"{PREFIX}_exporter_refresh_errors", "Refreshes that failed")
        errors.add_metric([], errors_value)
        yield errors
        duration = _gauge("exporter_refresh_duration_seconds", "Time the last refresh took")
        duration.add_metric([], last)
        yield duration
        if snap is not None:
            taken = _gauge("exporter_snapshot_timestamp_seconds", "When the served numbers were computed")
            taken.add_metric([], snap.taken_at)
            yield taken
            yield from snapshot_metrics(snap, granularity=self._granularity)
