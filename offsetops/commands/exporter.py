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
from offsetops.commands._exporter_snapshots import ExporterSnapshots, FollowUpdate
from offsetops.commands._exporter_snapshots import build_snapshot as build_snapshot
from offsetops.commands._groupview import refuse_bad_source
from offsetops.commands._load import add_source_args
from offsetops.coordinator_core.errors import printable
from offsetops.coordinator_core.escape import prometheus_label_value
from offsetops.coordinator_core.expiration import DEFAULT_RETENTION_MS
from offsetops.coordinator_core.failover import DEFAULT_SLOW_MS
from offsetops.coordinator_core.metrics_snapshot import (
    PREFIX,
    Families,
    Snapshot,
    snapshot_metrics,
)
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
        description="A Prometheus exporter (KMinion/Burrow-style names under offsetops_). It rebuilds "
        "the coordinator cache every --interval seconds in the background (with --follow, it also applies "
        "appends as they land) and serves the latest numbers on /metrics. Grafana dashboard and alert "
        "rules: deploy/grafana/ and deploy/prometheus/.",
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
    _add_follow_args(p)
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="the audit history to judge the cleaner's progress by, read only (the --state-dir of "
        "`offsetops audit`, or the Dagster output dir's audit history); without it a stalled cleaner "
        "cannot be told from a slow one",
    )
    p.add_argument("--once", action="store_true", help="print the metrics once on stdout and exit")
    p.set_defaults(func=run)


def _add_follow_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--follow",
        action="store_true",
        help="between refreshes, look at the source every --poll seconds (a log dir's segment sizes, a "
        "cluster's log end offsets) and apply what was appended within seconds, reading only the new bytes "
        "(from the resume state: --state DIR, else kept in memory); --interval still re-audits the cleaner "
        "and checks every partition against its resume state",
    )
    p.add_argument(
        "--poll",
        type=float_range(0.1, 3_600.0),
        default=1.0,
        metavar="SECONDS",
        help="with --follow, seconds between looks at the source, 0.1 to 3600 (default 1)",
    )


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
    if args.follow and args.once:
        return die("--follow keeps the exporter running; it cannot be combined with --once")
    try:
        host, port = _listen(args.listen)
    except ValueError as exc:
        return die(str(exc))
    args.offsets_topic = "__consumer_offsets"
    snapshots = ExporterSnapshots(args)
    follow = snapshots.follow if args.follow else None
    collector = OffsetsCollector(
        snapshots.full, granularity=args.granularity, follow=follow, exposition=snapshots.exposition
    )
    collector.refresh()
    if collector.last_error is not None:
        # The first refresh must work: a wrong path or cluster is a usage error, not a metric.
        snapshots.close()
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
        snapshots.close()
        return die(f"cannot listen on {host}:{port}: {exc}")
    following = f"; following every {args.poll:g} s" if args.follow else ""
    print(
        f"serving http://{escape(host)}:{bound}/metrics (refresh every {args.interval:g} s{following})",
        file=sys.stderr,
        flush=True,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        collector.run_forever(args.interval, stop, poll_s=args.poll if args.follow else None)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        snapshots.close()
    return 0


def _gauge(name: str, doc: str) -> GaugeMetricFamily:
    """The exporter's own health gauges (``offsetops_exporter_*``), beside the snapshot's families."""
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc)


class OffsetsCollector(Collector):
    """Serves the latest snapshot; a background thread refreshes it every ``interval_s`` and, following,
    applies appends between refreshes.

    Scrapes never wait for a refresh (a reload of a large log dir can outlast Prometheus's scrape
    timeout). A failed refresh keeps the previous numbers, sets ``offsetops_exporter_up`` to 0 and
    counts the error, so a dashboard shows stale-but-true data and an alert can fire on ``up``.
    The follow families (``offsetops_follow_*``) are rendered apart, at every look, so a look that
    finds nothing new costs no render of the snapshot.
    """

    def __init__(
        self,
        refresh: Callable[[], Snapshot],
        *,
        granularity: str = "partition",
        follow: Callable[[], FollowUpdate | None] | None = None,
        exposition: Callable[[Snapshot], bytes] | None = None,
    ):
        self._refresh = refresh
        self._follow = follow
        self._exposition = exposition
        self._granularity = granularity
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._up = 0
        self._errors = 0
        self._last_duration = 0.0
        self.last_error: str | None = None
        self._rendered = b""
        self._served = b""  # the rendered snapshot and the follow families, joined when either changes
        self._lag = 0.0
        self._last_update = 0.0
        self._updates = 0
        self._bytes_read = 0
        self._fresh: dict[str, int] = {}
        self._last_look = 0.0

    def refresh(self) -> None:
        started = time.monotonic()
        try:
            snap = self._refresh()
        except Exception as exc:  # keep serving the last snapshot; the error is logged and counted
            self._failed(exc, started)
            return
        self._publish(snap, started)

    def follow(self) -> None:
        """One look at the source; when something was appended, serve the snapshot that shows it and
        record how long that took from the look that saw it (``offsetops_follow_lag_seconds``)."""
        if self._follow is None:
            return
        started = time.monotonic()
        try:
            update = self._follow()
        except Exception as exc:  # as a failed refresh: the last numbers stay, up goes to 0
            self._failed(exc, started)
            return
        if update is None:
            with self._lock:
                self._last_look = time.time()
            self._render_tail()
            return
        self._publish(update.snapshot, started)
        with self._lock:
            self._lag = time.monotonic() - update.seen
            self._last_update = time.time()
            self._updates += 1
            self._bytes_read += update.step.bytes_read
            for f in update.step.fresh:
                self._fresh[f.reason] = self._fresh.get(f.reason, 0) + 1
        self._render_tail()

    def _failed(self, exc: Exception, started: float) -> None:
        with self._lock:
            self._up = 0
            self._errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            self._last_duration = time.monotonic() - started
        log.error("refresh failed: %s", printable(self.last_error))
        self._render()

    def _publish(self, snap: Snapshot, started: float) -> None:
        with self._lock:
            self._snapshot = snap
            self._up = 1
            self.last_error = None
            self._last_duration = time.monotonic() - started
            self._last_look = time.time()
        self._render()

    def _render(self) -> None:
        """Render the text exposition once per refresh: a scrape sends these bytes and renders nothing
        (the refresh thread is the only writer, so no newer snapshot can be overwritten)."""
        if self._exposition is None:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(self)
            rendered = generate_latest(registry)
        else:
            with self._lock:
                snap = self._snapshot
            registry = CollectorRegistry(auto_describe=False)
            registry.register(Families(list(self._own_metrics(snap))))  # type: ignore[arg-type]
            rendered = generate_latest(registry) + (b"" if snap is None else self._exposition(snap))
        with self._lock:
            self._rendered = rendered
        self._render_tail()

    def _render_tail(self) -> None:
        tail = b""
        if self._follow is not None:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(Families(list(self._follow_metrics())))  # type: ignore[arg-type]
            tail = generate_latest(registry)
        with self._lock:
            self._served = self._rendered + tail

    def exposition(self) -> bytes:
        """The latest rendered exposition (Prometheus text format 0.0.4)."""
        with self._lock:
            return self._served

    def run_forever(self, interval_s: float, stop: threading.Event, *, poll_s: float | None = None) -> None:
        """Refresh every ``interval_s`` until ``stop`` is set (the first refresh is the caller's); with
        ``poll_s``, look for appends every ``poll_s`` in between."""
        next_full = time.monotonic() + interval_s
        while True:
            wait = max(next_full - time.monotonic(), 0.0)
            if poll_s is not None:
                wait = min(wait, poll_s)
            if stop.wait(wait):
                return
            if time.monotonic() >= next_full:
                self.refresh()
                next_full = time.monotonic() + interval_s
            else:
                self.follow()

    def _follow_metrics(self) -> Iterator[Metric]:
        with self._lock:
            lag, updates, fresh, last_look = self._lag, self._updates, dict(self._fresh), self._last_look
            bytes_read, last_update = self._bytes_read, self._last_update
        gauge = _gauge(
            "follow_lag_seconds",
            "Following: time from the look that saw the last append to the snapshot showing it being served",
        )
        gauge.add_metric([], lag)
        yield gauge
        look = _gauge(
            "follow_last_look_timestamp_seconds",
            "Following: when the source was last looked at; the served numbers hold as of then",
        )
        look.add_metric([], last_look)
        yield look
        served = _gauge(
            "follow_last_update_timestamp_seconds",
            "Following: when the latest snapshot that applied appends began to be served",
        )
        served.add_metric([], last_update)
        yield served
        count = CounterMetricFamily(f"{PREFIX}_follow_updates", "Following: snapshots recomputed for appends")
        count.add_metric([], updates)
        yield count
        read = CounterMetricFamily(f"{PREFIX}_follow_bytes_read", "Following: segment bytes read for appends")
        read.add_metric([], bytes_read)
        yield read
        fallbacks = CounterMetricFamily(
            f"{PREFIX}_follow_fresh_reads",
            "Following: partitions read from their start because the resume state did not hold, by reason",
            labels=["reason"],
        )
        for reason, n in sorted(fresh.items()):
            fallbacks.add_metric([prometheus_label_value(reason)], n)
        yield fallbacks

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snap = self._snapshot
        yield from self._own_metrics(snap)
        if snap is not None:
            yield from snapshot_metrics(snap, granularity=self._granularity)

    def _own_metrics(self, snap: Snapshot | None) -> Iterator[Metric]:
        """The exporter's health families, and when ``snap`` (the one served) was computed."""
        with self._lock:
            up_value, errors_value, last = self._up, self._errors, self._last_duration
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
