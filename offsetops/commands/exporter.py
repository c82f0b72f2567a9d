"""``offsetops exporter``: serve the offsets view, cleaner audit and forecasts to Prometheus.

The snapshot and its metric families are the core's (:mod:`offsetops.coordinator_core.metrics_snapshot`);
this command builds one from its arguments, refreshes it in the background and serves the latest one on
every scrape, so a busy Prometheus never makes the exporter reread the log dir in a loop.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from offsetops.commands._common import die, escape
from offsetops.commands._groupview import lookup_offsets, refuse_bad_source
from offsetops.commands._load import add_source_args, load_caches
from offsetops.coordinator_core.clock import WALL, resolve_clock
from offsetops.coordinator_core.describe import GroupFilter, wanted_partitions
from offsetops.coordinator_core.errors import printable
from offsetops.coordinator_core.expiration import DEFAULT_RETENTION_MS
from offsetops.coordinator_core.failover import DEFAULT_SLOW_MS, read_load_logs
from offsetops.coordinator_core.metrics_snapshot import PREFIX, Snapshot, compute_snapshot, snapshot_metrics
from offsetops.exporter_http import MAX_CONNECTIONS, READ_TIMEOUT_S
from offsetops.pipelines.cli_args import (
    duration_ms,
    float_range,
    forecast_horizon_ms,
    int_range,
    retention_duration_ms,
)

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "exporter",
        help="serve lag, out-of-range offsets, cleaner audit, expiration risk and failover forecast "
        "as Prometheus metrics",
        description="A Prometheus exporter (KMinion/Burrow-style names under offsetops_). It rebuilds "
        "the coordinator cache every --interval seconds in the background and serves the latest numbers "
        "on /metrics. Grafana dashboard and alert rules: deploy/grafana/ and deploy/prometheus/.",
    )
    add_source_args(p)
    p.add_argument(
        "--listen",
        default="127.0.0.1:9309",
        metavar="HOST:PORT",
        help="where to serve /metrics (default 127.0.0.1:9309; port 0 picks a free one)",
    )
    p.add_argument(
        "--interval",
        type=float_range(1.0, 86_400.0),
        default=60.0,
        metavar="SECONDS",
        help="seconds between refreshes, 1 to 86400 (default 60)",
    )
    p.add_argument(
        "--log-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="more log dirs with data-topic partitions, for lag",
    )
    p.add_argument(
        "--broker-log",
        action="append",
        default=[],
        metavar="FILE",
        help="server.log, to calibrate the failover forecast (repeat)",
    )
    p.add_argument(
        "--retention-ms",
        type=retention_duration_ms,
        help="offsets.retention.minutes in ms, for the expiration forecast (default: "
        "$OFFSETOPS_RETENTION_MINUTES, the config file, server.properties, else Kafka's default, "
        f"{DEFAULT_RETENTION_MS} ms)",
    )
    p.add_argument(
        "--forecast-horizon-ms",
        type=forecast_horizon_ms,
        help="count offsets that expire within this many ms (default: $OFFSETOPS_FORECAST_HOURS, else "
        "one day)",
    )
    p.add_argument(
        "--failover-threshold-ms",
        type=duration_ms,
        default=DEFAULT_SLOW_MS,
        help=f"a coordinator load longer than this is slow (default {DEFAULT_SLOW_MS})",
    )
    p.add_argument(
        "--granularity",
        choices=["partition", "topic"],
        default="partition",
        help="lag per partition (default) or per topic only, to bound the series count",
    )
    p.add_argument(
        "--max-connections",
        type=int_range(1, 10_000),
        default=MAX_CONNECTIONS,
        metavar="N",
        help=f"open connections served at once (default {MAX_CONNECTIONS}); at the cap the oldest one still "
        f"waiting for its request is dropped, and every client has {READ_TIMEOUT_S:g} s to send it",
    )
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="the audit history to judge the cleaner's progress by, read only (the --state-dir of "
        "`offsetops audit`, or the Dagster output dir's audit history); without it a stalled cleaner "
        "cannot be told from a slow one",
    )
    p.add_argument("--once", action="store_true", help="print the metrics once on stdout and exit")
    p.set_defaults(func=run)


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen must be HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def run(args: argparse.Namespace) -> int:
    from offsetops.exporter_http import MetricsServer

    bad = refuse_bad_source(args)
    if bad is not None:
        return bad
    try:
        host, port = _listen(args.listen)
    except ValueError as exc:
        return die(str(exc))
    args.offsets_topic = "__consumer_offsets"
    collector = OffsetsCollector(lambda: build_snapshot(args), granularity=args.granularity)
    collector.refresh()
    if collector.last_error is not None:
        # The first refresh must work: a wrong path or cluster is a usage error, not a metric.
        return die(f"cannot build the first snapshot: {collector.last_error}")
    if args.once:
        registry = CollectorRegistry()
        registry.register(collector)
        sys.stdout.write(generate_latest(registry).decode())
        return 0
    server = MetricsServer(host, port, collector.exposition, max_connections=args.max_connections)
    try:
        bound = server.start()
    except OSError as exc:
        return die(f"cannot listen on {host}:{port}: {exc}")
    print(
        f"serving http://{escape(host)}:{bound}/metrics (refresh every {args.interval:g} s)",
        file=sys.stderr,
        flush=True,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        collector.run_forever(args.interval, stop)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def _gauge(name: str, doc: str) -> GaugeMetricFamily:
    """The exporter's own health gauges (``offsetops_exporter_*``), beside the snapshot's families."""
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc)


def build_snapshot(args: argparse.Namespace) -> Snapshot:
    """Reload, describe, audit the cleaner (log dirs only), plan expiration and forecast failover, as of
    ``--now``, else the clock the log dir declares, else the wall clock."""
    started = time.time()
    run = args.run
    # A real broker's log dir is evaluated at each refresh's wall clock; a configured or declared
    # instant stays the run's.
    now = resolve_clock(None).as_of_ms if run.clock.source == WALL else run.now_ms
    caches = load_caches(args)
    offsets, _where = lookup_offsets(args, wanted_partitions(caches, GroupFilter()))
    return compute_snapshot(
        caches,
        offsets,
        log_dir=args.path,
        now_ms=now,
        retention_ms=run.retention_ms,
        forecast_horizon_ms=run.forecast_horizon_ms,
        observed=read_load_logs(args.broker_log),
        failover_threshold_ms=args.failover_threshold_ms,
        taken_at=started,
        settings=run,
        audit_state_dir=args.state_dir,
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
        self._rendered = b""

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
            log.error("refresh failed: %s", printable(self.last_error))
            self._render()
            return
        with self._lock:
            self._snapshot = snap
            self._up = 1
            self.last_error = None
            self._last_duration = time.monotonic() - started
        self._render()

    def _render(self) -> None:
        """Render the text exposition once per refresh: a scrape sends these bytes and renders nothing
        (the refresh thread is the only writer, so no newer snapshot can be overwritten)."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        rendered = generate_latest(registry)
        with self._lock:
            self._rendered = rendered

    def exposition(self) -> bytes:
        """The latest rendered exposition (Prometheus text format 0.0.4)."""
        with self._lock:
            return self._rendered

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
