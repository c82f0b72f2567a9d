"""``offsetops audit``: Log Cleaner health of ``__consumer_offsets`` with a verdict and remedies."""

from __future__ import annotations

import argparse
import sys

from offsetops.commands._common import (
    CLIENT_CONFIG_HELP,
    die,
    epoch_time,
    escape,
    kafka_client_config,
    non_negative_int,
    parse_partitions,
    print_json,
)
from offsetops.commands.failover import failover_json
from offsetops.coordinator_core.cleaner.broker_log import read_broker_logs
from offsetops.coordinator_core.cleaner.config import (
    CleanerConfig,
    fetch_cluster_config,
    known_config_keys,
    parse_config_overrides,
    read_broker_id,
)
from offsetops.coordinator_core.cleaner.metrics import MetricsError, scrape_metrics
from offsetops.coordinator_core.cleaner_audit import (
    CleanerAudit,
    PartitionAudit,
    Thresholds,
    audit_log_dir,
    format_bytes,
    format_duration,
)
from offsetops.coordinator_core.clock import ClockError, resolve_clock
from offsetops.coordinator_core.sources.logdir import LogDirError, open_log_dir

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
    p.add_argument("path", help="a broker log dir, or one __consumer_offsets-N dir")
    p.add_argument(
        "--partition", type=non_negative_int, action="append", metavar="N", help="only partition N (repeat)"
    )
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="read topic and broker config from this cluster")
    p.add_argument("--client-config", metavar="FILE", help=f"live config: {CLIENT_CONFIG_HELP}")
    p.add_argument(
        "--timeout-ms",
        type=int,
        help="--bootstrap connect and request timeout (default: the client config's, else 10000 / 30000)",
    )
    p.add_argument("--broker-id", type=int, help="broker for DescribeConfigs (default: meta.properties)")
    p.add_argument(
        "--metrics-url", metavar="URL", help="Prometheus endpoint exposing the cleaner JMX metrics"
    )
    p.add_argument(
        "--broker-log", metavar="FILE", action="append", help="log-cleaner.log or server.log (repeat)"
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
    try:
        logdir = open_log_dir(args.path, partitions=parse_partitions(args.partition))
    except LogDirError as exc:
        return die(str(exc))

    config = CleanerConfig()
    live = None
    if args.bootstrap or args.client_config:
        from offsetops.coordinator_core.kafka_client import KafkaClientError

        broker_id = args.broker_id if args.broker_id is not None else read_broker_id(logdir.path)
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

    metrics = None
    if args.metrics_url:
        try:
            metrics = scrape_metrics(args.metrics_url)
        except MetricsError as exc:
            return die(str(exc))
    broker_log = None
    if args.broker_log:
        try:
            broker_log = read_broker_logs(args.broker_log)
        except OSError as exc:
            return die(f"cannot read broker log: {exc}")

    try:
        # The log dir's declared clock (a simulated or copied snapshot) unless --now is given.
        clock = resolve_clock(args.path, configured_ms=args.now, configured_by="--now")
    except ClockError as exc:
        return die(str(exc))
    try:
        audit = audit_log_dir(
            logdir,
            config=config,
            thresholds=thresholds,
            now_ms=clock.as_of_ms,
            metrics=metrics,
            broker_log=broker_log,
            live=live,
            state_dir=args.state_dir,
            record_history=not args.no_record,
        )
    except OSError as exc:
        return die(f"cannot write audit history: {exc}")

    if args.json:
        doc = audit.to_json()
        # The coordinator failover forecast rides on the audit's scan (see `offsetops failover`).
        doc["failover"] = failover_json(audit.partitions, args.broker_log)
        print_json(doc)
    else:
        print(f"as of {clock.describe()}")
        print_table(audit)
    return EXIT_BY_VERDICT[audit.verdict] if args.exit_code else 0


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
        str(p.partition),
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
    """The readable report: one row per partition, then every reason with its remedy."""
    out = sys.stdout
    rows = [_HEAD, *(_row(p) for p in audit.partitions)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEAD))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
    cfg = audit.config
    out.write(
        f"\nconfig: cleanup.policy={cfg.cleanup_policy} "
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
    out.write(f"\nverdict: {audit.verdict}\n")
    for r in audit.reasons:
        out.write(f"  [{r.severity}] {r.message}\n      remedy: {r.remedy}\n")
    for p in audit.partitions:
        for r in p.reasons:
            out.write(f"  [{r.severity}] partition {p.partition}: {r.message}\n      remedy: {r.remedy}\n")


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:g}"
