"""``offsetops exporter``: serve the offsets view, cleaner audit and forecasts to Prometheus."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from offsetops.commands._common import die, escape
from offsetops.commands._groupview import refuse_bad_source
from offsetops.commands._load import add_source_args
from offsetops.coordinator_core.expiration import DEFAULT_RETENTION_MS
from offsetops.coordinator_core.failover import DEFAULT_SLOW_MS
from offsetops.coordinator_core.settings import duration_ms, float_range, int_range
from offsetops.exporter_http import MAX_CONNECTIONS, READ_TIMEOUT_S


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
        type=duration_ms,
        default=DEFAULT_RETENTION_MS,
        help="offsets.retention.minutes in ms, for the expiration forecast (default 7 days)",
    )
    p.add_argument(
        "--forecast-horizon-ms",
        type=duration_ms,
        default=24 * 3600 * 1000,
        help="count offsets that expire within this many ms (default one day)",
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
    p.add_argument("--once", action="store_true", help="print the metrics once on stdout and exit")
    p.set_defaults(func=run)


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen must be HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def run(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry, generate_latest

    from offsetops.exporter import OffsetsCollector, build_snapshot
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
