"""``offsetops failover``: per offsets partition, what a new coordinator replays and how long it takes."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from offsetops.commands._common import die, print_json
from offsetops.commands._load import add_source_args, check_source, load_caches
from offsetops.commands._run import with_settings
from offsetops.commands._table import print_table
from offsetops.coordinator_core.cleaner.model import format_bytes
from offsetops.coordinator_core.failover import (
    DEFAULT_SLOW_MS,
    FailoverForecast,
    forecast_failover,
    format_load_time,
    loads_from_caches,
    read_load_logs,
)
from offsetops.coordinator_core.kafka_client import KafkaClientError
from offsetops.coordinator_core.sources.logdir import LogDirError
from offsetops.pipelines.cli_args import duration_ms

HEADERS = (
    "PARTITION",
    "SIZE",
    "BATCHES",
    "DATA-RECORDS",
    "LIVE-KEYS",
    "ESTIMATED-LOAD",
    "OBSERVED-LOAD",
    "SLOW",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "failover",
        description="After a leader change the new group coordinator replays the whole partition before "
        "serving its groups (COORDINATOR_LOAD_IN_PROGRESS until then). For each partition: bytes, "
        "batches, records and live keys to replay, and the estimated load time, calibrated from the "
        "broker's 'Finished loading ... __consumer_offsets-N' log lines (--broker-log) or else a stated "
        "default rate. Partitions above --threshold are flagged.",
    )
    add_source_args(p)
    p.add_argument("--broker-log", action="append", default=[], metavar="FILE", help="server.log (repeat)")
    p.add_argument(
        "--threshold-ms",
        type=duration_ms,
        default=DEFAULT_SLOW_MS,
        metavar="MS",
        help=f"flag partitions whose load would take longer (default {DEFAULT_SLOW_MS})",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.set_defaults(func=run)


def headline(fc: FailoverForecast) -> str:
    """One line, the worst partition first: which partitions would stall their groups, and how long."""
    slow = fc.slow
    if not slow:
        return f"no partition would take longer than {format_load_time(fc.threshold_ms)} to load"
    worst = slow[0]
    return (
        f"{len(slow)} partition(s) would take longer than {format_load_time(fc.threshold_ms)} to load "
        f"after a failover; worst __consumer_offsets-{worst.load.partition}: about "
        f"{format_load_time(max(worst.estimated_ms, worst.observed_ms or 0))} of "
        "COORDINATOR_LOAD_IN_PROGRESS for its groups"
    )


def print_forecast(fc: FailoverForecast, out: Any = None) -> None:
    out = out or sys.stdout
    out.write(headline(fc) + "\n")
    out.write(f"rate: {fc.calibration.note}\n")
    rows = [
        (
            p.load.partition,
            format_bytes(p.load.bytes),
            p.load.batches,
            p.load.records,
            p.load.live_keys,
            f"{p.estimated_ms} ms",
            None if p.observed_ms is None else f"{p.observed_ms} ms",
            "SLOW" if p.slow else "",
        )
        for p in fc.partitions
    ]
    print_table(HEADERS, rows, out)


def run(args: argparse.Namespace) -> int:
    problem = check_source(args)
    if problem:
        return die(problem)
    if args.threshold_ms <= 0:
        return die(f"--threshold-ms must be positive, got {args.threshold_ms}")
    try:
        observed = read_load_logs(args.broker_log)
    except OSError as exc:
        return die(f"cannot read broker log: {exc}")
    args.offsets_topic = "__consumer_offsets"
    try:
        caches = load_caches(args)
    except LogDirError as exc:
        return die(str(exc))
    except KafkaClientError as exc:
        return die(str(exc))
    fc = forecast_failover(loads_from_caches(caches), observed=observed, threshold_ms=args.threshold_ms)
    if args.json:
        print_json(with_settings(fc.to_json(), args))
    else:
        print_forecast(fc)
    return 0
