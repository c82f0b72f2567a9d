"""``offsetops audit``: Log Cleaner health of ``__consumer_offsets`` with a verdict and remedies."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from offsetops.commands._common import (
    CLIENT_CONFIG_HELP,
    die,
    epoch_time,
    escape,
    parse_partitions,
    print_json,
)
from offsetops.commands._load import add_state_arg, warn_read
from offsetops.commands._run import with_settings
from offsetops.commands.failover import headline
from offsetops.coordinator_core.cleaner.config import known_config_keys
from offsetops.coordinator_core.cleaner.model import CleanerAudit, PartitionAudit, Thresholds, format_bytes
from offsetops.coordinator_core.cleaner.run import AuditInputError, AuditRequest, run_audit
from offsetops.coordinator_core.failover import DEFAULT_SLOW_MS, FailoverForecast, format_load_time
from offsetops.coordinator_core.findings import CRITICAL, DEGRADED, remedy_terminal, worst_first
from offsetops.coordinator_core.sources.logdir import PartitionDir
from offsetops.coordinator_core.sources.replicas import split_broker_prefix
from offsetops.coordinator_core.timefmt import format_duration
from offsetops.pipelines.cli_args import add_partition_filter, broker_id, duration_ms, http_url, int_range
from offsetops.progress import Progress

#: exit codes with --exit-code, in the Nagios style monitoring systems understand
EXIT_BY_VERDICT = {"HEALTHY": 0, "DEGRADED": 1, "CRITICAL": 2}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit",
        description="Compute, per partition of a broker log dir, what the Log Cleaner sees "
        "(LogCleanerManager.cleanableOffsets / LogToClean), why it stops where it does, what compaction "
        "would reclaim, and whether it is making progress; then give a HEALTHY / DEGRADED / CRITICAL "
        "verdict with reasons and remedies. See docs/cleaner-audit.md.",
    )
    _add_source_options(p)
    _add_input_options(p)
    _add_output_options(p)
    p.set_defaults(func=run)


def _add_source_options(p: argparse.ArgumentParser) -> None:
    """Where the audited partitions are: one log dir, each broker's log dir, or the brokers' scans."""
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


def _add_input_options(p: argparse.ArgumentParser) -> None:
    """What the verdict is judged with: the cluster's config, metrics, broker logs, history, clock."""
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="read topic and broker config from this cluster")
    p.add_argument("--client-config", metavar="FILE", help=f"live config: {CLIENT_CONFIG_HELP}")
    p.add_argument(
        "--timeout-ms",
        type=int_range(1, 3_600_000),
        help="--bootstrap connect and request timeout (default: the client config's, else 10000 / 30000)",
    )
    p.add_argument(
        "--broker-id", type=broker_id, help="broker for DescribeConfigs (default: meta.properties)"
    )
    p.add_argument(
        "--metrics-url",
        metavar="[BROKER_ID=]URL",
        type=_metrics_url,
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
    add_state_arg(p, ("--resume-state",))
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
        type=duration_ms,
        default=DEFAULT_SLOW_MS,
        metavar="MS",
        help="flag partitions whose replay after a coordinator failover would take longer "
        f"(default {DEFAULT_SLOW_MS})",
    )


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument(
        "--exit-code", action="store_true", help="exit 0/1/2 for HEALTHY/DEGRADED/CRITICAL (monitoring)"
    )


def run(args: argparse.Namespace) -> int:
    request = AuditRequest(
        path=args.path,
        log_dirs=tuple(args.log_dir or ()),
        broker_scans=args.broker_scans,
        partitions=parse_partitions(args.partition),
        config=tuple(args.config),
        thresholds=tuple(args.threshold),
        bootstrap=args.bootstrap,
        client_config=args.client_config,
        timeout_ms=args.timeout_ms,
        broker_id=args.broker_id,
        metrics_urls=tuple(args.metrics_url or ()),
        broker_logs=tuple(args.broker_log or ()),
        state_dir=args.state_dir,
        record_history=not args.no_record,
        now_ms=args.now,
        failover_threshold_ms=args.failover_threshold_ms,
        clock=args.run.clock,
        config_layers=(
            (args.run.broker_config, args.run.broker_config_source),
            (args.run.config_file_values, args.run.config_file_source),
        ),
        resume_state=args.run["resume_state_dir"],
        num_partitions=args.run["num_partitions"],
        semantics=args.run["semantics"],
        max_batch_bytes=args.run["max_batch_bytes"],
    )
    try:
        with _ScanProgress() as progress:
            result = run_audit(request, progress=progress.scanned)
    except AuditInputError as exc:
        return die(str(exc))
    for partition, read in sorted((result.reads or {}).items()):
        warn_read(partition, read["resume_reason"], read["resume_detail"], read["state_error"])
    if args.json:
        print_json(with_settings(result.to_json(), args))
    else:
        print(f"as of {escape(result.clock.describe())}")
        print_table(result.audit)
        print_failover(result.forecast)
        read = result.read_summary()
        if read is not None:
            print(read.sentence())
        print(escape(args.run.summary()))
    return EXIT_BY_VERDICT[result.audit.verdict] if args.exit_code else 0


class _ScanProgress:
    """The single log dir's scan, one partition at a time, as one progress line on a terminal."""

    def __init__(self) -> None:
        self._progress: Progress | None = None

    def __enter__(self) -> _ScanProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.close()

    def scanned(self, total: int, pdir: PartitionDir) -> None:
        if self._progress is None:
            self._progress = Progress("auditing", total=total, unit="partitions")
        self._progress.advance(1, pdir.size_bytes, what=f"__consumer_offsets-{pdir.partition}")


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


def _metrics_url(text: str) -> str:
    """``--metrics-url``'s type: ``[BROKER_ID=]URL`` with an http(s) URL (checked while parsing)."""
    try:
        _bid, url = split_broker_prefix(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    http_url(url)
    return text.strip()


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
    counts = {v: sum(1 for p in audit.partitions if p.verdict == v) for v in (CRITICAL, DEGRADED)}
    out.write(
        f"{audit.verdict}: {counts[CRITICAL]} critical, {counts[DEGRADED]} degraded of "
        f"{len(audit.partitions)} partitions (the findings follow the table)\n"
    )
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
