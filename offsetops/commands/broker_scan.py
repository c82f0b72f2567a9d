"""``offsetops broker-scan``: the file part of the cleaner audit, run beside one broker, written to shared
storage for the central audit (``offsetops audit --broker-scans DIR`` and the Dagster ``cleaner_audit``)."""

from __future__ import annotations

import argparse
import sys
import time

from offsetops.commands._common import die, epoch_time, escape
from offsetops.coordinator_core.cleaner.collect import DEFAULT_MAX_DIGESTS, scan_broker, write_broker_scan
from offsetops.coordinator_core.cleaner.config import CleanerConfig, known_config_keys, parse_config_overrides
from offsetops.coordinator_core.cleaner.model import PartitionFailure
from offsetops.coordinator_core.clock import ClockError, resolve_clock
from offsetops.coordinator_core.sources.logdir import LogDirError, open_log_dir, read_broker_id
from offsetops.coordinator_core.sources.replicas import split_broker_prefix
from offsetops.pipelines.cli_args import positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "broker-scan",
        description="Read every __consumer_offsets partition of one broker's log dir (the costly, "
        "file-reading part of the cleaner audit, and each copy's leader epochs, offsets and batch "
        "digests) and write broker-<id>.json into --out, a directory every broker's collector and the "
        "audit share (a ReadWriteMany volume). Run it as a sidecar of the broker pod (--every) or as a "
        "job on the broker's node; `offsetops audit --broker-scans DIR` and the Dagster cleaner_audit "
        "asset judge all brokers from there. See deploy/README.md.",
    )
    p.add_argument(
        "--log-dir",
        required=True,
        metavar="[BROKER_ID=]PATH",
        help="the broker's log dir (broker id from its meta.properties unless given as BROKER_ID=PATH)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="where to write broker-<id>.json")
    p.add_argument(
        "--config",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help="topic or broker config the scan needs (delete.retention.ms, min.compaction.lag.ms, ...); "
        "keys: " + ", ".join(known_config_keys()),
    )
    p.add_argument("--now", type=epoch_time, metavar="TIME", help="scan as of this time (default: now)")
    p.add_argument(
        "--max-digests",
        type=positive_int,
        default=DEFAULT_MAX_DIGESTS,
        metavar="N",
        help=f"batch digests per partition for the cross-broker comparison (default {DEFAULT_MAX_DIGESTS})",
    )
    p.add_argument(
        "--every",
        type=positive_int,
        metavar="SECONDS",
        help="keep running: scan again every SECONDS (a sidecar); a failed scan is reported and retried",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = CleanerConfig().with_values(parse_config_overrides(args.config), source="user")
        given, path = split_broker_prefix(args.log_dir)
        broker_id = given if given is not None else read_broker_id(path)
    except (ValueError, LogDirError) as exc:
        return die(str(exc))
    while True:
        code = _scan_once(path, broker_id, config, args)
        if args.every is None:
            return code
        time.sleep(args.every)


def _scan_once(path: str, broker_id: int, config: CleanerConfig, args: argparse.Namespace) -> int:
    try:
        clock = resolve_clock(path, configured_ms=args.now, configured_by="--now")
        logdir = open_log_dir(path)
        scan = scan_broker(
            logdir, broker_id, config=config, now_ms=clock.as_of_ms, max_digests=args.max_digests
        )
        out = write_broker_scan(scan, args.out)
    except (ClockError, LogDirError) as exc:
        return die(str(exc), code=1)
    except OSError as exc:
        return die(f"cannot write the scan into {args.out}: {exc}", code=1)
    failed = sum(isinstance(pa, PartitionFailure) for pa in scan.partitions.values())
    print(
        f"broker {broker_id}: {len(scan.partitions)} partitions scanned as of {escape(clock.describe())}, "
        f"{failed} failed -> {escape(str(out))}",
        file=sys.stderr,
    )
    return 0
