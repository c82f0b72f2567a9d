"""``offsetops audit``: Log Cleaner health of ``__consumer_offsets`` with a verdict and remedies."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TextIO

from offsetops.commands._common import (
    CLIENT_CONFIG_HELP,
    die,
    epoch_time,
    escape,
    kafka_client_config,
    parse_partitions,
    print_json,
)
from offsetops.commands.failover import audit_forecast, headline
from offsetops.coordinator_core.cleaner.audit import audit_log_dir, audit_log_dirs, scan_log_dir
from offsetops.coordinator_core.cleaner.broker_log import BrokerLogReport, read_broker_logs
from offsetops.coordinator_core.cleaner.collect import BrokerScan, audit_broker_scans, read_broker_scans
from offsetops.coordinator_core.cleaner.config import (
    CleanerConfig,
    fetch_cluster_config,
    known_config_keys,
    parse_config_overrides,
    read_broker_id,
)
from offsetops.coordinator_core.cleaner.metrics import CleanerMetrics, MetricsError, scrape_metrics
from offsetops.coordinator_core.cleaner.model import (
    CleanerAudit,
    PartitionAudit,
    PartitionFailure,
    Thresholds,
    format_bytes,
)
from offsetops.coordinator_core.clock import ClockError, resolve_clock
from offsetops.coordinator_core.failover import DEFAULT_SLOW_MS, FailoverForecast, format_load_time
from offsetops.coordinator_core.findings import remedy_terminal, worst_first
from offsetops.coordinator_core.settings import add_partition_filter, positive_int
from offsetops.coordinator_core.sources.logdir import LogDir, LogDirError, open_log_dir
from offsetops.coordinator_core.sources.replicas import LogDirs, open_log_dirs, split_broker_prefix
from offsetops.coordinator_core.timefmt import format_duration
from offsetops.progress import Progress

#: exit codes with --exit-code, in the Nagios style monitoring systems understand
EXIT_BY_VERDICT = {"HEALTHY": 0, "DEGRADED": 1, "CRITICAL": 2}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit",
        help="audit the Log Cleaner's health on __consumer_offsets (dirty ratio, hanging txns, progress)",
        description="Compute, per partition of a broker log dir, what the Log Cleaner sees "
        "(LogCleanerManager.cleanableOffsets / LogToClean), why it stops where it does, what compaction "
        "would reclaim, and whether it is making progress; then give a HEALTHY / DEGRADED / CRITICAL "
        "verdict with reasons and remedies. See docs/cleaner-audit.md.",
    )
    p.add_argument("path", nargs="?", help="a broker log dir, or one __consumer_offsets-N dir")
    p.add_argument(
        "--log-dir",
        action="append",
        metavar="[BROKER_ID=]PATH",
        help="one broker's log dir, repeated for each broker to audit them in one run (each replica is "
        "audited, and copies that diverge are reported); the broker id comes from its meta.properties "
        "unless given as BROKER_ID=PATH",
    )
    p.add_argument(
        "--broker-scans",
        metavar="DIR",
        help="audit every broker from the broker-<id>.json scans that `offsetops broker-scan` wrote "
        "beside each broker into this shared directory, instead of reading log dirs",
    )
    add_partition_filter(p)
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="read topic and broker config from this cluster")
    p.add_argument("--client-config", metavar="FILE", help=f"live config: {CLIENT_CONFIG_HELP}")
    p.add_argument(
        "--timeout-ms",
        type=int,
        help="--bootstrap connect and request timeout (default: the client config's, else 10000 / 30000)",
    )
    p.add_argument("--broker-id", type=int, help="broker for DescribeConfigs (default: meta.properties)")
    p.add_argument(
        "--metrics-url",
        metavar="[BROKER_ID=]URL",
        action="append",
        help="Prometheus endpoint exposing the cleaner JMX metrics (with --log-dir: BROKER_ID=URL, repeat)",
    )
    p.add_argument(
        "--broker-log",
        metavar="[BROKER_ID=]FILE",
        action="append",
        help="log-cleaner.log or server.log (repeat; with --log-dir: BROKER_ID=FILE)",
    )
    p.add_argument("--state-dir", metavar="DIR", help="keep audit history (audits.jsonl) here")
    p.add_argument("--no-record", action="store_true", help="read history but do not append this audit")
    p.add_argument(
        "--now",
        type=epoch_time,
        metavar="TIME",
        help="audit as of this time (epoch ms, ISO-8601, --now=-2h; default: the clock the log dir "
        "declares, else the wall clock)",
    )
    p.add_argument(
        "--config",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help="topic or broker config, beats --bootstrap (e.g. min.cleanable.dirty.ratio=0.5); keys: "
        + ", ".join(known_config_keys()),
    )
    p.add_argument(
        "--threshold",
        action="append",
        metavar="NAME=VALUE",
        default=[],
        help="verdict threshold (e.g. hanging_transaction_ms=600000); names: "
        + ", ".join(Thresholds.__dataclass_fields__),
    )
    p.add_argument(
        "--failover-threshold-ms",
        type=positive_int,
        default=DEFAULT_SLOW_MS,
        metavar="MS",
        help="flag partitions whose replay after a coordinator failover would take longer "
        f"(default {DEFAULT_SLOW_MS})",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument(
        "--exit-code", action="store_true", help="exit 0/1/2 for HEALTHY/DEGRADED/CRITICAL (monitoring)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        overrides = parse_config_overrides(args.config)
        thresholds = Thresholds().with_overrides(dict(_pairs(args.threshold)))
    except ValueError as exc:
        return die(str(exc))
    sources = [bool(args.path), bool(args.log_dir), bool(args.broker_scans)]
    if sum(sources) > 1:
        return die("give one of: a log dir PATH, --log-dir for each broker, or --broker-scans DIR")
    if not any(sources):
        return die(
            "give a broker log dir PATH, --log-dir [BROKER_ID=]PATH once per broker, or --broker-scans DIR"
        )
    dirs: LogDirs | None = None
    scans: list[BrokerScan] | None = None
    try:
        if args.broker_scans:
            scans = read_broker_scans(args.broker_scans)
            first_dir = None
        elif args.log_dir:
            dirs = open_log_dirs(
                [split_broker_prefix(spec) for spec in args.log_dir],
                partitions=parse_partitions(args.partition),
            )
            first_dir = str(dirs.brokers[0].log_dir.path)
        else:
            logdir = open_log_dir(args.path, partitions=parse_partitions(args.partition))
            first_dir = args.path
    except (LogDirError, ValueError) as exc:
        return die(str(exc))
    try:
        known = (
            {b.broker_id for b in dirs.brokers} if dirs else {s.broker_id for s in scans} if scans else None
        )
        metrics_urls = _per_broker(args.metrics_url, "--metrics-url", known)
        broker_log_files = _per_broker(args.broker_log, "--broker-log", known)
    except ValueError as exc:
        return die(str(exc))

    config = CleanerConfig()
    live = None
    if args.bootstrap or args.client_config:
        from offsetops.coordinator_core.kafka_client import KafkaClientError

        if args.broker_id is not None:
            broker_id = args.broker_id
        elif dirs is not None:
            broker_id = dirs.brokers[0].broker_id
        elif scans is not None:
            broker_id = scans[0].broker_id
        else:
            broker_id = read_broker_id(logdir.path)
        try:
            client = kafka_client_config(args)
            if args.timeout_ms is not None:
                timeout = args.timeout_ms
                client = client.replace(connect_timeout_ms=timeout, request_timeout_ms=timeout)
            live = fetch_cluster_config(client, broker_id=broker_id)
        except KafkaClientError as exc:
            return die(f"{exc} (give the config with --config KEY=VALUE instead, or fix --bootstrap)")
        config = live.apply(config)
    try:
        config = config.with_values(overrides, source="user")
    except ValueError as exc:
        return die(str(exc))

    metrics: dict[int | None, CleanerMetrics] = {}
    for bid, urls in metrics_urls.items():
        if len(urls) > 1:
            return die(f"--metrics-url: one endpoint per broker, got {len(urls)} for {_whose(bid)}")
        try:
            metrics[bid] = scrape_metrics(urls[0])
        except MetricsError as exc:
            return die(str(exc))
    broker_logs: dict[int | None, BrokerLogReport] = {}
    for bid, files in broker_log_files.items():
        try:
            broker_logs[bid] = read_broker_logs(files)
        except OSError as exc:
            return die(f"cannot read broker log: {exc}")

    try:
        # The log dir's declared clock (a simulated or copied snapshot) unless --now is given.
        clock = resolve_clock(first_dir, configured_ms=args.now, configured_by="--now")
    except ClockError as exc:
        return die(str(exc))
    common = {
        "config": config,
        "thresholds": thresholds,
        "now_ms": clock.as_of_ms,
        "live": live,
        "state_dir": args.state_dir,
        "record_history": not args.no_record,
    }
    try:
        per_broker = {
            "metrics": {k: v for k, v in metrics.items() if k is not None},
            "broker_logs": {k: v for k, v in broker_logs.items() if k is not None},
        }
        if scans is not None:
            audit = audit_broker_scans(
                scans, partitions=parse_partitions(args.partition), **per_broker, **common
            )
        elif dirs is not None:
            audit = audit_log_dirs(
                dirs,
                **per_broker,
                **common,
            )
        else:
            audit = audit_log_dir(
                logdir,
                metrics=metrics.get(None),
                broker_log=broker_logs.get(None),
                partition_audits=scan_with_progress(logdir, config=config, now_ms=clock.as_of_ms),
                **common,
            )
    except LogDirError as exc:
        return die(str(exc))
    except OSError as exc:
        return die(f"cannot write audit history: {exc}")

    # The coordinator failover forecast rides on the audit's scan (see `offsetops failover`); with
    # several brokers it forecasts the copies a reload reads.
    rows = audit.partitions
    if audit.replicas is not None:
        chosen = {(c.partition, c.chosen.broker_id) for c in audit.replicas}
        rows = [p for p in rows if (p.partition, p.broker_id) in chosen]
    logs = [f for files in broker_log_files.values() for f in files]
    forecast = audit_forecast(rows, logs, args.failover_threshold_ms)
    if args.json:
        doc = audit.to_json()
        ok = isinstance(forecast, FailoverForecast)
        doc["failover"] = forecast.to_json() if ok else {"error": forecast}
        print_json(doc)
    else:
        print(f"as of {escape(clock.describe())}")
        print_table(audit)
        print_failover(forecast)
    return EXIT_BY_VERDICT[audit.verdict] if args.exit_code else 0


def scan_with_progress(
    logdir: LogDir, *, config: CleanerConfig, now_ms: int
) -> dict[int, PartitionAudit | PartitionFailure | None]:
    """The per-partition scans (the costly part: every record is read) one partition at a time, with
    progress on a terminal; ``audit_log_dir`` then applies history, marks and verdicts to them."""
    scans: dict[int, PartitionAudit | PartitionFailure | None] = {}
    with Progress("auditing", total=len(logdir.partitions), unit="partitions") as progress:
        for pdir in logdir.partitions:
            one = dataclasses.replace(logdir, partitions=(pdir,))
            scans.update(scan_log_dir(one, config=config, now_ms=now_ms, notes=[]))
            progress.advance(1, pdir.size_bytes, what=f"__consumer_offsets-{pdir.partition}")
    return scans


def print_failover(forecast: FailoverForecast | str) -> None:
    """After the cleaner's verdict: the partitions whose replay after a leader change would keep their
    groups in COORDINATOR_LOAD_IN_PROGRESS longer than the threshold, worst first."""
    out = sys.stdout
    if not isinstance(forecast, FailoverForecast):
        out.write(f"\nfailover: {escape(forecast)}\n")
        return
    out.write(f"\nfailover: {headline(forecast)}\n  rate: {forecast.calibration.note}\n")
    for p in forecast.slow:
        observed = "" if p.observed_ms is None else f", last observed {format_load_time(p.observed_ms)}"
        out.write(
            f"  [SLOW] partition {p.load.partition}: {format_bytes(p.load.bytes)} in {p.load.batches} "
            f"batches, estimated {format_load_time(p.estimated_ms)}{observed}\n"
        )
    if forecast.slow:
        out.write(
            "      remedy: keep the partition small (a working Log Cleaner, offsets.retention.minutes), "
            "move leadership of __consumer_offsets in quiet hours, and check offsets.load.buffer.size\n"
        )


def _whose(broker_id: int | None) -> str:
    return "the log dir" if broker_id is None else f"broker {broker_id}"


def _per_broker(values: list[str] | None, flag: str, known: set[int] | None) -> dict[int | None, list[str]]:
    """``--metrics-url``/``--broker-log`` values by broker id (None for a single log dir): with several
    brokers each must say whose it is, since every broker has its own cleaner, metrics and logs."""
    out: dict[int | None, list[str]] = {}
    for value in values or []:
        bid, rest = split_broker_prefix(value) if known is not None else (None, value)
        if known is not None and bid is None:
            raise ValueError(f"{flag} {value!r}: with several brokers, say whose it is as BROKER_ID={value}")
        if known is not None and bid not in known:
            raise ValueError(
                f"{flag} {value!r}: broker {bid} is not among the audited brokers {sorted(known)}"
            )
        out.setdefault(bid, []).append(rest)
    return out


def _pairs(items: list[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected NAME=VALUE, got {item!r}")
        out.append((key.strip(), value.strip()))
    return out


def _ratio(x: float) -> str:
    return f"{x:.2f}"


def _row(p: PartitionAudit) -> list[str]:
    txn = ""
    if p.open_transactions:
        t = p.open_transactions[0]
        txn = f"pid {t.producer_id} @{t.first_offset} {format_duration(t.age_ms)}"
        if len(p.open_transactions) > 1:
            txn += f" +{len(p.open_transactions) - 1}"
    age = "-" if p.oldest_dirty_segment_age_ms is None else format_duration(p.oldest_dirty_segment_age_ms)
    return [
        str(p.partition) if p.broker_id is None else f"{p.partition}@{p.broker_id}",
        p.verdict,
        format_bytes(p.size_bytes),
        format_bytes(p.clean_bytes),
        format_bytes(p.cleanable_bytes),
        _ratio(p.dirty_ratio),
        str(p.first_dirty_offset),
        str(p.first_uncleanable_offset),
        ",".join(p.uncleanable_reasons) or "-",
        "yes" if p.eligible else "no",
        _ratio(p.reclaimable_ratio),
        str(p.expired_tombstones),
        age,
        txn or "-",
    ]


_HEAD = [
    "part", "verdict", "size", "clean", "cleanable", "dirty", "1st dirty", "1st unclean", "stops at",
    "eligible", "reclaim", "exp.tomb", "dirty age", "open txn",
]  # fmt: skip


def print_table(audit: CleanerAudit) -> None:
    """The readable report: one row per partition, then every finding with its remedy, both worst
    first (the one order of coordinator_core.findings); every data string escaped for the terminal."""
    out = sys.stdout
    head = _HEAD if audit.brokers is None else ["part@broker", *_HEAD[1:]]
    rows = [head, *(_row(p) for p in worst_first(audit.partitions))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEAD))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
    cfg = audit.config
    out.write(
        f"\nconfig: cleanup.policy={escape(cfg.cleanup_policy)} "
        f"min.cleanable.dirty.ratio={cfg.min_cleanable_dirty_ratio:g} "
        f"min.compaction.lag.ms={cfg.min_compaction_lag_ms} delete.retention.ms={cfg.delete_retention_ms} "
        f"log.cleaner.enable={str(cfg.cleaner_enable).lower()} threads={cfg.cleaner_threads} "
        f"dedupe={format_bytes(cfg.dedupe_buffer_size)}\n"
    )
    if audit.metrics is not None:
        m = audit.metrics
        out.write(
            f"metrics: uncleanable-partitions-count={_num(m.uncleanable_partitions_count)} "
            f"uncleanable-bytes={_num(m.uncleanable_bytes)} max-dirty-percent={_num(m.max_dirty_percent)} "
            f"time-since-last-run-ms={_num(m.time_since_last_run_ms)} "
            f"DeadThreadCount={_num(m.dead_thread_count)} "
            f"max-clean-time-secs={_num(m.max_clean_time_secs)}\n"
        )
    for note in audit.notes:
        out.write(f"note: {escape(note)}\n")
    if audit.brokers is not None:
        print_replicas(audit, out)
    out.write(f"\nverdict: {audit.verdict}\n")
    for f in audit.findings():
        where = "" if f.partition is None else f"partition {f.partition}"
        where += "" if f.broker_id is None else f" on broker {f.broker_id}"
        out.write(
            f"  [{f.severity}] {where + ': ' if where else ''}{escape(f.code)}: {escape(f.text)}\n"
            f"      remedy: {remedy_terminal(f.remedy)}\n"
        )


def print_replicas(audit: CleanerAudit, out: TextIO) -> None:
    """Which broker's copy of each partition a reload reads and why, and every divergent copy."""
    brokers = ", ".join(f"{b}={escape(d)}" for b, d in sorted((audit.brokers or {}).items()))
    out.write(f"\nbrokers: {brokers}\n")
    for c in audit.replicas or []:
        copies = ", ".join(str(x.broker_id) for x in c.copies)
        out.write(f"partition {c.partition}: copies on {copies}; reads {escape(c.reason)}\n")
        for d in c.divergences:
            out.write(f"  DIVERGENT broker {d.broker_id}: {escape(d.message)}\n")


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:g}"
