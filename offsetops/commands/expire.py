"""``offsetops expire``: plan (and optionally apply) the tombstones of one offset-expiration pass.

Dry-run by default: prints the tombstones cleanupGroupMetadata would write, the groups that go Dead,
and a forecast of what expires soon. ``--execute`` applies the plan through an executor, journaled.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from offsetops.commands._common import (
    CLIENT_CONFIG_HELP,
    die,
    epoch_time,
    escape,
    kafka_client_config,
    parse_partitions,
    print_json,
    quote,
    report_errors,
)
from offsetops.commands._groupview import risk_line
from offsetops.commands._load import add_state_arg
from offsetops.commands._run import with_settings
from offsetops.coordinator_core.clock import wall_clock_ms
from offsetops.coordinator_core.clock_guard import ClockFinding, clock_findings, newest_record_ms
from offsetops.coordinator_core.errors import count_errors
from offsetops.coordinator_core.expiration import (
    COORDINATORS,
    DEFAULT_RETENTION_MS,
    ExpirationPlan,
    plan_for_run,
)
from offsetops.coordinator_core.expiry_risk import group_risks
from offsetops.coordinator_core.read_summary import ReadSummary
from offsetops.coordinator_core.sources.logdir import LogDirError
from offsetops.coordinator_core.timefmt import iso_utc
from offsetops.pipelines.cli_args import (
    add_partition_filter,
    broker_version,
    forecast_hours,
    offsets_partitions,
    retention_duration_ms,
)
from offsetops.progress import Progress

EXECUTORS = ("admin", "produce", "segment")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "expire",
        description="Reload __consumer_offsets, apply the KIP-211 expiration rules at --now, and print the "
        "tombstones the group coordinator would write, the groups that go Dead, and the offsets that expire "
        "within --forecast-hours. Nothing is written unless --execute is given.",
    )
    p.add_argument("path", nargs="?", help="a broker log dir, or one __consumer_offsets-N dir")
    add_partition_filter(p)
    add_state_arg(p)
    p.add_argument(
        "--now",
        type=epoch_time,
        metavar="TIME",
        help="the time to expire at: epoch ms, ISO-8601 or --now=-2h (default: the clock the log dir "
        "declares, else now)",
    )
    p.add_argument(
        "--retention-ms",
        type=retention_duration_ms,
        metavar="MS",
        help="offsets.retention.minutes in ms (default: $OFFSETOPS_RETENTION_MINUTES, the config file, "
        f"server.properties, else Kafka's default for the broker version, {DEFAULT_RETENTION_MS} since 2.0)",
    )
    p.add_argument(
        "--coordinator",
        choices=COORDINATORS,
        help="legacy (Scala, up to 3.x) or kip848 (Java, 4.x); default from --broker-version",
    )
    p.add_argument(
        "--broker-version",
        type=broker_version,
        metavar="X.Y",
        help="the brokers' Kafka version; picks --coordinator (< 4.0: legacy) and the retention default "
        "(default: $OFFSETOPS_BROKER_VERSION, the config file, server.properties, the log dir's declaration)",
    )
    p.add_argument(
        "--forecast-hours",
        type=forecast_hours,
        metavar="H",
        help="forecast offsets that expire within H hours (default: $OFFSETOPS_FORECAST_HOURS, else 24)",
    )
    p.add_argument(
        "--what-if-retention-ms",
        type=retention_duration_ms,
        metavar="MS",
        help="also plan and forecast at this retention (reported under what_if)",
    )
    p.add_argument(
        "--num-partitions",
        type=offsets_partitions,
        help="offsets.topic.num.partitions (default: $OFFSETOPS_NUM_PARTITIONS, the config file, "
        "server.properties, else 50)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    ex = p.add_argument_group("execution (dry-run unless --execute)")
    ex.add_argument("--execute", action="store_true", help="apply the plan (needs --executor, --journal-dir)")
    ex.add_argument(
        "--executor",
        choices=EXECUTORS,
        help="admin (live cluster), produce (mirror/sandbox topic), segment (a copy of the log dir)",
    )
    ex.add_argument("--journal-dir", metavar="DIR", help="where the plan and its per-item status are kept")
    ex.add_argument(
        "--resume", metavar="PLAN_ID", help="continue the journaled plan PLAN_ID (no re-planning)"
    )
    ex.add_argument(
        "--force-new-plan",
        action="store_true",
        help="start a new plan even though an unfinished one targets the same destination",
    )
    ex.add_argument("--bootstrap", metavar="HOST:PORT", help="cluster for the admin and produce executors")
    ex.add_argument("--client-config", metavar="FILE", help=f"admin and produce: {CLIENT_CONFIG_HELP}")
    ex.add_argument("--target-topic", metavar="TOPIC", help="topic the produce executor writes to")
    ex.add_argument(
        "--target-partition",
        choices=["same", "key"],
        default="same",
        help="produce: partition = the offsets partition (same, default) or the key hash",
    )
    ex.add_argument(
        "--allow-internal-topic-write",
        action="store_true",
        help="produce: allow --target-topic __consumer_offsets (dangerous; see docs/expiration.md)",
    )
    ex.add_argument("--output-dir", metavar="DIR", help="segment: where the copy of the log dir is made")
    ex.add_argument(
        "--override-clock-guard",
        action="store_true",
        help="execute even though the clock is ahead of this host's clock, or past the retention after "
        "(or before) the newest record in the source (see docs/expiration.md)",
    )
    p.set_defaults(func=run)


def _load(args: argparse.Namespace) -> list:
    from offsetops.commands._load import load_with_progress
    from offsetops.coordinator_core.sources.source import ReadLimits, Source

    source = Source(
        log_dir=args.path,
        partitions=tuple(parse_partitions(args.partition) or ()) or None,
        limits=ReadLimits(max_batch_bytes=args.run["max_batch_bytes"]),
        state_dir=args.run["resume_state_dir"],
    )
    return load_with_progress(source, args.run)


#: how the command line gives what an executor lacks (MissingInput.missing)
_HOW = {
    "cluster": "--bootstrap HOST:PORT (or --client-config FILE with bootstrap.servers)",
    "target_topic": "--target-topic TOPIC",
    "log_dir": "the log dir PATH and --output-dir DIR",
    "output_dir": "the log dir PATH and --output-dir DIR",
}


def _request(args: argparse.Namespace, method: str) -> Any:
    """The executor request of the command line."""
    from offsetops.coordinator_core.tombstones.factory import ExecutorRequest

    return ExecutorRequest(
        method,
        log_dir=args.path,
        cluster=lambda bootstrap: _cluster(args, bootstrap),
        output_dir=args.output_dir,
        target_topic=args.target_topic,
        partitioning=args.target_partition,
        allow_internal_topic_write=args.allow_internal_topic_write,
        semantics=args.run["semantics"],
    )


def _cluster(args: argparse.Namespace, bootstrap: str | None) -> Any:
    """The Kafka client configuration of the admin and produce executors (``bootstrap``: a resumed plan's
    cluster, part of its plan id), or None when none is given."""
    from offsetops.coordinator_core.kafka_client import ClientConfigError

    try:
        return kafka_client_config(args, args.bootstrap or bootstrap)
    except ClientConfigError:
        if args.bootstrap or args.client_config or bootstrap:
            raise
        return None  # the factory says what is missing


def run(args: argparse.Namespace) -> int:
    from offsetops.coordinator_core.kafka_client import KafkaClientError
    from offsetops.coordinator_core.tombstones.journal import JournalError
    from offsetops.coordinator_core.tombstones.runner import ExecutorRefused, RunStopped

    if args.execute and not (args.executor or args.resume):
        return die("--execute needs --executor admin|produce|segment")
    if (args.execute or args.resume) and not args.journal_dir:
        return die("--execute needs --journal-dir DIR: the plan is journaled before anything is sent")
    try:
        if args.resume:
            return _resume(args)
    except RunStopped as exc:
        return die(f"{exc}: rerun with --resume {exc.plan_id} once the cluster is reachable")
    except (JournalError, ExecutorRefused, ValueError, KafkaClientError) as exc:
        return die(str(exc))
    if not args.path:
        return die("give a log dir PATH (or --resume PLAN_ID)")
    try:
        caches = _load(args)
    except LogDirError as exc:
        return die(str(exc))
    errors = [e for c in caches for e in c.stats.errors]
    plan, doc, findings = _plan(args, caches)
    read = ReadSummary.of(caches)
    doc["read"] = read.to_json()
    report = None
    if args.execute:
        if count_errors(errors):  # notices (a zero tail, a client's own layout) do not stop it
            report_errors(errors)
            return die(
                f"the reload met {count_errors(errors)} decode error(s); "
                "refusing to execute a plan built on it"
            )
        if findings and not args.override_clock_guard:
            return die(
                f"refusing to execute at this clock ({'; '.join(f.kind for f in findings)}): check --now "
                "or the clock file, or pass --override-clock-guard if this instant is intended"
            )
        try:
            report = _execute(args, plan)
        except RunStopped as exc:
            return die(
                f"{exc}: rerun the same command, or --resume {exc.plan_id}, once the cluster is reachable"
            )
        except (JournalError, ExecutorRefused, ValueError, KafkaClientError) as exc:
            return die(str(exc))
        doc["execution"] = report.to_json()
    if args.json:
        print_json(with_settings(doc, args))
    else:
        _print_text(plan, doc, args, read)
    if errors:
        report_errors(errors)
    if report is not None and (not report.complete or report.not_gone):
        return 1
    return 0


def _plan(
    args: argparse.Namespace, caches: list
) -> tuple[ExpirationPlan, dict[str, Any], list[ClockFinding]]:
    """The plan with the run model's settings (--now, else the log dir's declared clock; the retention,
    the coordinator and the forecast window from the flags, OFFSETOPS_*, the config file, the broker,
    Kafka's defaults), its JSON with the per-group summary, and the clock's findings."""
    run = args.run
    plan = plan_for_run(caches, run)
    doc: dict[str, Any] = plan.to_json()
    doc["dry_run"] = not args.execute
    # the per-group summary the text leads with, in the same order (lost, then the soonest expiry)
    doc["groups"] = [
        {"group_id": r.group_id, "offsets_partition": r.offsets_partition, **r.to_json()}
        for r in group_risks(plan)
    ]
    findings = _clock_guard(args, caches, doc)
    if args.what_if_retention_ms is not None:
        what_if = plan_for_run(caches, run, retention_ms=args.what_if_retention_ms)
        doc["what_if"] = {k: v for k, v in what_if.to_json().items() if k not in ("now_ms", "coordinator")}
    return plan, doc, findings


def _clock_guard(args: argparse.Namespace, caches: list, doc: dict[str, Any]) -> list[ClockFinding]:
    """The clock's plausibility (:mod:`offsetops.coordinator_core.clock_guard`) against this host's wall
    clock and the newest record of the source: noted in ``doc`` and warned about on every plan."""
    run = args.run
    findings = clock_findings(
        run.now_ms, wall_ms=wall_clock_ms(), newest_ms=newest_record_ms(caches), retention_ms=run.retention_ms
    )
    doc["clock_findings"] = [f.to_json() for f in findings]
    for f in findings:
        print(
            f"offsetops: WARNING: {escape(f.message)} (clock: {escape(run.clock.describe())})",
            file=sys.stderr,
        )
    return findings


def _execute(args: argparse.Namespace, plan: ExpirationPlan) -> Any:
    from offsetops.coordinator_core.tombstones.factory import apply_plan

    return _with_progress(
        lambda on_start: apply_plan(
            plan,
            _request(args, args.executor),
            journal_dir=args.journal_dir,
            source=args.path,
            force_new=args.force_new_plan,
            on_start=on_start,
        ),
        announce=True,
    )


def _with_progress(apply: Callable[[Any], Any], *, announce: bool) -> Any:
    """Run ``apply(on_start)`` with one progress line (each outcome the executor journals moves it by
    one), saying where the plan is journaled when ``announce``; a missing executor input is named with
    the option that gives it."""
    from offsetops.coordinator_core.tombstones.factory import MissingInput

    with Progress("applying", unit="tombstones") as progress:

        def on_start(journal: Any, resumed: bool, executor: Any) -> None:
            if announce:
                print(
                    f"offsetops: plan {journal.plan_id} journaled at {journal.plan_path}"
                    f"{' (resuming)' if resumed else ''}",
                    file=sys.stderr,
                )
            todo = len(journal.items) - len(journal.applied_ids())
            if resumed and not todo:
                print(
                    f"offsetops: plan {journal.plan_id} is already applied; verifying only", file=sys.stderr
                )
            progress.label, progress.total = f"applying via {executor.name}", todo
            journal.on_record = lambda n: progress.advance(n)

        try:
            return apply(on_start)
        except MissingInput as exc:
            raise ValueError(f"--executor {exc.method} needs {_HOW[exc.missing]}") from None


def _resume(args: argparse.Namespace) -> int:
    from offsetops.coordinator_core.tombstones.factory import resume_plan

    report = _with_progress(
        lambda on_start: resume_plan(
            args.journal_dir, args.resume, _request(args, args.executor or ""), on_start=on_start
        ),
        announce=False,
    )
    doc = {"plan_id": report.plan_id, "execution": report.to_json()}
    if args.json:
        print_json(with_settings(doc, args))
    else:
        _print_execution(report.to_json())
    return 0 if report.complete and not report.not_gone else 1


def _age(ms: int | None) -> str:
    if ms is None:
        return "-"
    hours = ms / 3_600_000
    return f"{hours / 24:.1f}d" if abs(hours) >= 48 else f"{hours:.1f}h"


def _offset_tombstones(plan: ExpirationPlan) -> int:
    """The plan's offset tombstones (the words of every surface: "offset tombstones", "group tombstones")."""
    return sum(1 for t in plan.tombstones if t.kind == "offset_commit")


def _print_text(
    plan: ExpirationPlan, doc: dict[str, Any], args: argparse.Namespace, read: ReadSummary
) -> None:
    out = sys.stdout
    mode = "DRY RUN" if doc["dry_run"] else "EXECUTE"
    out.write(
        f"{mode}: coordinator={plan.coordinator} now={plan.now_ms} ({iso_utc(plan.now_ms)}) "
        f"retention={_age(plan.retention_ms)} "
        f"partitions={len(plan.partitions)}\n"
        f"{_offset_tombstones(plan)} offset tombstones, "
        f"{len(plan.tombstones) - _offset_tombstones(plan)} group tombstones, "
        f"{len(plan.dead_groups)} dead groups\n"
    )
    _print_group_summary(plan, out)
    for t in plan.tombstones:
        what = escape(f"{t.topic}-{t.partition}" if t.kind == "offset_commit" else t.kind)
        out.write(f"  [{t.offsets_partition}] {quote(t.group_id)} {what}: {t.reason}, age {_age(t.age_ms)}\n")
    for d in plan.dead_groups:
        out.write(
            f"  dead: [{d.offsets_partition}] {quote(d.group_id)} generation {d.generation}, "
            f"{d.tombstones} group tombstone(s) ({d.reason})\n"
        )
    _print_forecast(plan.forecast, args.forecast_hours, out)
    if "what_if" in doc:
        w = doc["what_if"]
        out.write(
            f"what-if retention {_age(w['retention_ms'])}: {len(w['tombstones'])} tombstones, "
            f"{len(w['dead_groups'])} dead groups, {len(w['forecast'])} forecast\n"
        )
    if "execution" in doc:
        _print_execution(doc["execution"])
    out.write(read.sentence() + "\n")
    out.write(escape(args.run.summary()) + "\n")


def _print_group_summary(plan: ExpirationPlan, out: Any) -> None:
    """One line per group, worst first (lost, then the soonest expiry), before the per-offset lists."""
    risks = group_risks(plan)
    if not risks:
        return
    out.write(f"groups ({len(risks)}, worst first):\n")
    for r in risks:
        out.write(f"  [{r.offsets_partition}] {quote(r.group_id)} {risk_line(r, plan.now_ms)}\n")


def _print_forecast(forecast: list, hours: float, out: Any) -> None:
    by_group: dict[tuple[int | None, str], list] = {}
    for f in forecast:
        by_group.setdefault((f.offsets_partition, f.group_id), []).append(f)
    out.write(f"forecast (next {hours:g} h): {len(forecast)} offsets in {len(by_group)} groups\n")
    for (part, gid), entries in sorted(by_group.items(), key=lambda kv: kv[1][0].expires_at):
        first = entries[0]
        out.write(
            f"  [{part}] {quote(gid)} loses {len(entries)} offset(s), the first in "
            f"{_age(first.expires_in_ms)} ({escape(first.topic)}-{first.partition}, {first.reason})\n"
        )


def _print_execution(ex: dict[str, Any]) -> None:
    out = sys.stdout
    out.write(
        f"execution: plan {ex['plan_id']} via {ex['executor']}"
        f"{' (resumed)' if ex['resumed'] else ''}; {ex['skipped_already_applied']} already applied; "
        f"outcomes {ex['outcomes']}\n"
    )
    for item in ex["items"]:
        if item["status"] not in ("applied", "already_gone", "applied_via_delete_groups"):
            where = f"{item['topic']}-{item['partition']}" if item["topic"] is not None else item["kind"]
            detail = escape(item["detail"] or "")
            out.write(f"  {quote(item['group_id'])} {escape(where)}: {item['status']} {detail}\n")
    v = ex["verification"]
    out.write(f"verification: {v['checked']} keys checked, {len(v['not_gone'])} not gone\n")
    for r in v["not_gone"]:
        where = f"{r['topic']}-{r['partition']}" if r["topic"] is not None else "group"
        out.write(
            f"  NOT GONE: {quote(r['group_id'])} {escape(where)}: {r['state']} {escape(r['detail'] or '')}\n"
        )
