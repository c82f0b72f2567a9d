"""``offsetops demo``: the main job, end to end, on an embedded sample cluster.

1. ``offsetops simulate`` writes a sample ``__consumer_offsets`` log dir (unless one is given or
   already there);
2. every Dagster asset and check of the code location is materialized in one in-process run, over
   all offsets partitions, on local Spark;
3. the alert sensor's logic runs once (Slack when ``SLACK_BOT_TOKEN`` is set, else the outbox);
4. the reports' locations are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from offsetops.commands._common import die, escape
from offsetops.commands.simulate import kafka_version
from offsetops.coordinator_core.findings import and_more
from offsetops.coordinator_core.untrusted import read_regular_file
from offsetops.pipelines.cli_args import (
    forecast_hours,
    minutes,
    non_negative_int,
    offsets_partitions,
    simulated_days,
    simulated_groups,
)

DEFAULT_OUT = "out/demo"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        description="Generate a sample log dir with `offsetops simulate`, materialize every asset and check "
        "(reload on local Spark, expiration plan, tombstone dry run, cleaner audit, GX validation) "
        "in-process, and print where the reports are.",
    )
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"output dir (default {DEFAULT_OUT})")
    p.add_argument("--log-dir", metavar="PATH", help="use this broker log dir instead of simulating one")
    p.add_argument(
        "--groups", type=simulated_groups, default=60, help="simulated consumer groups (default 60)"
    )
    p.add_argument(
        "--days", type=simulated_days, default=0.25, help="simulated days of history (default 0.25)"
    )
    p.add_argument("--seed", type=non_negative_int, default=7, help="simulation seed (default 7)")
    p.add_argument(
        "--partitions", type=offsets_partitions, default=50, help="offsets.topic.num.partitions (default 50)"
    )
    p.add_argument(
        "--kafka-version",
        type=kafka_version,
        default="4.2",
        help="simulated broker version (default 4.2: classic, consumer, share and streams groups)",
    )
    p.add_argument(
        "--retention-minutes",
        type=minutes,
        default=120,
        help="offsets.retention.minutes for the plan (default 120, so a short history shows expirations; "
        "Kafka's default is 10080)",
    )
    p.add_argument("--forecast-hours", type=forecast_hours, default=24.0, help="forecast window (default 24)")
    p.add_argument(
        "--execute-tombstones",
        action="store_true",
        help="also run the segment executor: write the planned tombstones into a copy of the log dir",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="reload from each partition's saved fold in OUT/state/resume, reading only what was appended "
        "since the last run (the first run reads everything and saves the state)",
    )
    p.add_argument("--spark-master", default="local[*]", help="Spark master (default local[*])")
    p.set_defaults(func=run)


def _simulate(args: argparse.Namespace, log_dir: Path) -> None:
    from offsetops.cli import main as cli_main

    print(
        f"offsetops simulate {log_dir} --groups {args.groups} --days {args.days} --seed {args.seed} "
        f"--partitions {args.partitions} --segment-bytes 2MiB --kafka-version {args.kafka_version}",
        flush=True,
    )
    rc = cli_main(
        [
            "simulate",
            str(log_dir),
            "--groups",
            str(args.groups),
            "--days",
            str(args.days),
            "--seed",
            str(args.seed),
            "--partitions",
            str(args.partitions),
            "--segment-bytes",
            "2MiB",
            "--kafka-version",
            args.kafka_version,
        ]
    )
    if rc != 0:
        raise RuntimeError(f"offsetops simulate exited {rc}")


def _instance(home: Path) -> Any:
    """A persistent instance in ``home``, so ``dagster dev`` shows the demo's runs afterwards."""
    from dagster import DagsterInstance

    home.mkdir(parents=True, exist_ok=True)
    return DagsterInstance.from_config(str(home))


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    out = Path(args.out).absolute()
    if args.partitions < 1:
        return die("--partitions must be at least 1")
    if args.log_dir:
        log_dir = Path(args.log_dir).absolute()
        if not log_dir.is_dir():
            return die(f"{log_dir}: not a directory")
    else:
        log_dir = out / "logdir"
        if (log_dir / "truth.json").exists():
            print(f"reusing the sample log dir {log_dir} (delete it to simulate a new one)", flush=True)
        else:
            try:
                _simulate(args, log_dir)
            except RuntimeError as exc:
                return die(str(exc))
    truth_path = log_dir / "truth.json"
    if truth_path.exists():
        truth = json.loads(read_regular_file(truth_path, kind="ground truth"))
        _declare_clock(log_dir, truth)
        if int(truth.get("num_partitions", args.partitions)) != args.partitions:
            args.partitions = int(truth["num_partitions"])
    # The partitions definition and the expiration defaults are fixed when the code location is
    # imported: set them first, exactly as the printed UI command sets them for `dagster dev`.
    os.environ.update(ui_environment(args, out, log_dir))
    return _materialize(args, out, log_dir, started)


def _declare_clock(log_dir: Path, truth: dict[str, Any]) -> None:
    """A sample simulated before log dirs declared their clock gets its declaration now."""
    from offsetops.coordinator_core.clock import CLOCK_FILE, write_clock_declaration

    if not (log_dir / CLOCK_FILE).exists():
        write_clock_declaration(
            log_dir,
            int(truth["simulated_until_ms"]),
            declared_by="offsetops demo, from truth.json",
            broker_version=truth.get("kafka_version"),
        )


def ui_environment(args: argparse.Namespace, out: Path, log_dir: Path) -> dict[str, str]:
    """What ``dagster dev`` needs to evaluate this demo's data exactly as the demo did.

    The clock is not in it: the log dir declares it, and the code location reads that declaration.
    """
    from offsetops.assets.resources import (
        DEFAULT_FORECAST_HOURS,
        ENV_FORECAST_HOURS,
        ENV_LOG_DIR,
        ENV_NUM_PARTITIONS,
        ENV_OUTPUT_DIR,
        ENV_RESUME_STATE_DIR,
        ENV_RETENTION_MINUTES,
        StateResource,
    )

    env = {
        "DAGSTER_HOME": str(out / "dagster_home"),
        ENV_LOG_DIR: str(log_dir),
        ENV_OUTPUT_DIR: str(out),
        ENV_NUM_PARTITIONS: str(args.partitions),
        ENV_RETENTION_MINUTES: str(args.retention_minutes),
    }
    if args.forecast_hours != DEFAULT_FORECAST_HOURS:
        env[ENV_FORECAST_HOURS] = f"{args.forecast_hours:g}"
    if getattr(args, "resume", False):
        env[ENV_RESUME_STATE_DIR] = str(StateResource(output_dir=str(out)).resume_dir)
    return env


def _materialize(args: argparse.Namespace, out: Path, log_dir: Path, started: float) -> int:
    from dagster import AssetChecksDefinition, Definitions

    from offsetops.assets.alerting.sensors import evaluate_alerts
    from offsetops.assets.definitions import MAIN_JOB, all_assets_and_checks, main_job
    from offsetops.assets.partitions import all_partitions_tags
    from offsetops.assets.resources import (
        OffsetsSourceResource,
        SlackResource,
        SparkResource,
        StateResource,
        build_resources,
    )

    # The token is passed resolved (not as an EnvVar): the alert pass after the run uses it directly.
    configured = build_resources("local")["slack"]  # channel and URLs from the environment
    assert isinstance(configured, SlackResource)
    slack = SlackResource(
        token=os.environ.get("SLACK_BOT_TOKEN") or None,
        channel=configured.channel,
        base_url=configured.base_url,
        dedupe_window_s=configured.dedupe_window_s,
        dagster_url=configured.dagster_url,
    )
    resources = {
        # No as_of_ms: the clock is resolved from the log dir, exactly as in the UI and the CLI.
        # num_partitions and the expiration settings come from the environment ui_environment set.
        "offsets_source": OffsetsSourceResource(log_dir=str(log_dir)),
        "spark": SparkResource(master=args.spark_master, app_name="offsetops-demo"),
        "state": StateResource(output_dir=str(out)),
        "slack": slack,
    }
    targets = all_assets_and_checks()
    run_config = {
        # Materialization events are DEBUG (one per asset and partition): keep the console readable.
        "loggers": {"console": {"config": {"log_level": "INFO"}}},
        # No retention or forecast here: every asset resolves them through the run model from the
        # environment ui_environment set, exactly as a run launched from the UI does.
        "ops": {
            "tombstone_execution": {"config": {"mode": "segment" if args.execute_tombstones else "dry_run"}},
        },
    }
    home = out / "dagster_home"
    instance = _instance(home)
    clock = resources["offsets_source"].clock()  # type: ignore[attr-defined]
    print(
        f"materializing {len(targets)} assets and checks over {args.partitions} partitions "
        f"of {escape(log_dir)} on Spark {args.spark_master}, as of {escape(clock.describe())} ...",
        flush=True,
    )
    run_started = time.perf_counter()
    # The code location's main job, so the run shows under its name in the UI's run history.
    checks = [t for t in targets if isinstance(t, AssetChecksDefinition)]
    assets = [t for t in targets if not isinstance(t, AssetChecksDefinition)]
    job = Definitions(
        assets=assets, asset_checks=checks, jobs=[main_job], resources=resources
    ).resolve_job_def(MAIN_JOB)
    result = job.execute_in_process(
        instance=instance,
        run_config=run_config,
        tags={**all_partitions_tags(args.partitions), "offsetops/demo": "true"},
        raise_on_error=False,
    )
    run_s = time.perf_counter() - run_started
    state: StateResource = resources["state"]  # type: ignore[assignment]
    alerts = evaluate_alerts(instance, slack, state)
    _print_report(
        result,
        out,
        state,
        alerts,
        run_s,
        time.perf_counter() - started,
        ui_environment(args, out, log_dir),
        log_dir,
    )
    return 0 if result.success else 1


def _operator_report(reports: Path, run_id: str) -> Any:
    """The run's operator report: the one offsets_topic_summary wrote in the run, when the reports it was
    drawn from are unchanged since; else written again from them, saying why."""
    from offsetops.checks.operator_report import (
        ReportInputError,
        reuse_operator_report,
        write_operator_report,
    )

    try:
        operator, why_not = reuse_operator_report(reports, run_id=run_id)
        if operator is None:
            print(f"operator report written again: {escape(why_not)}", flush=True)
            operator = write_operator_report(reports, run_id=run_id)
    except ReportInputError as exc:
        print(f"operator report not written: {escape(exc)}", file=sys.stderr)
        return None
    return operator


def _print_report(
    result: Any,
    out: Path,
    state: Any,
    alerts: list[Any],
    run_s: float,
    total_s: float,
    ui_env: dict[str, str],
    log_dir: Path,
) -> None:
    reports = state.reports_path
    operator = _operator_report(reports, result.run_id)
    print()
    print(f"main job {'SUCCEEDED' if result.success else 'FAILED'}: run {result.run_id} in {run_s:.0f} s")
    for line in summary_lines(result):
        print(f"  {line}")
    if not result.success:
        for event in result.all_events:
            if event.event_type_value == "STEP_FAILURE":
                print(f"  step {event.step_key} failed: {event.message}", file=sys.stderr)
    sent = {}
    for r in alerts:
        sent[r.status.value] = sent.get(r.status.value, 0) + 1
    print()
    if operator is not None:
        print(f"operator report: {operator.verdict}  {operator.url}")
    print("reports:")
    rows = [
        ("operator report", reports / "report.html"),
        ("Data Docs (GX)", reports / "data_docs" / "index.html"),
        ("validation summary", reports / "index.html"),
        ("validation result", reports / "validation.json"),
        ("cleaner audit", reports / "cleaner_audit.json"),
        ("expiration plan", reports / "expiration_plan.json"),
        ("segment inventory", reports / "segments.json"),
        ("reload summary", reports / "reload.json"),
        ("metrics (textfile)", reports / "offsetops.prom"),
        ("cache tables (Parquet)", Path(state.tables_location)),
        ("alert outbox", state.outbox_file),
    ]
    for label, path in rows:
        mark = "" if path.exists() else "  (not written)"
        print(f"  {label:<24} {path}{mark}")
    print(f"alerts: {', '.join(f'{n} {s}' for s, n in sorted(sent.items())) or 'nothing new to send'}")
    print(f"log dir: {log_dir}")
    print(
        "open the UI on these runs (same data, clock and settings, so the same verdicts): "
        + ui_command(ui_env)
    )
    print(f"total {total_s:.0f} s")


def ui_command(env: dict[str, str]) -> str:
    """The ``dagster dev`` command line, with the environment that makes it agree with the demo."""
    return (
        " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " .venv/bin/dagster dev -w workspace.yaml"
    )


def summary_lines(result: Any) -> list[str]:
    """What the run found, worst first: the topic's verdict and why, the assets' figures, then the
    checks (failed at ERROR, failed at WARN, passed), each check's partitions in the one order."""
    from offsetops.checks.dagster_checks import plain_metadata

    by_asset: dict[str, list[dict[str, Any]]] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        by_asset.setdefault(mat.asset_key.to_user_string(), []).append(plain_metadata(mat.metadata))
    topic = (by_asset.get("offsets_topic_summary") or [{}])[0]
    checks: dict[str, list[Any]] = {}
    for ev in result.get_asset_check_evaluations():
        checks.setdefault(f"{ev.asset_key.to_user_string()}.{ev.check_name}", []).append(ev)
    lines = _verdict_lines(topic, checks) + _asset_lines(by_asset)
    return lines + _check_lines(checks, _partition_ranks(topic))


def _verdict_lines(topic: dict[str, Any], checks: dict[str, list[Any]]) -> list[str]:
    """The topic's verdict first, with what makes it so, in the order the findings rank."""
    if not topic:
        return []
    expiry = next(iter(checks.get("offsets_topic_summary.topic_offsets_expiration") or []), None)
    meta = plain_metadata_of(expiry)
    why = []
    if int(meta.get("groups_lost") or 0):
        why.append(f"{meta['groups_lost']} groups lost committed offsets")
    critical = int(topic.get("critical_partitions") or 0)
    degraded = int(topic.get("degraded_partitions") or 0)
    if critical:
        why.append(_cleaner_counts(critical, degraded))
    if int(topic.get("forecast_groups") or 0):
        why.append(f"{topic['forecast_groups']} groups lose offsets within the window")
    if degraded and not critical:
        why.append(_cleaner_counts(critical, degraded))
    verdict = topic.get("topic_verdict") or "unknown"
    return [f"topic verdict        {verdict}" + (f": {'; '.join(why)}" if why else "")]


def _cleaner_counts(critical: int, degraded: int) -> str:
    """``Log Cleaner CRITICAL on 1 partition, DEGRADED on 3``: each verdict with its own count."""
    parts = [
        f"{verdict} on {n} partition{'' if n == 1 else 's'}"
        for verdict, n in (("CRITICAL", critical), ("DEGRADED", degraded))
        if n
    ]
    return "Log Cleaner " + ", ".join(parts)


def plain_metadata_of(evaluation: Any) -> dict[str, Any]:
    """A check evaluation's metadata as plain Python (empty without one)."""
    from offsetops.checks.dagster_checks import plain_metadata

    return plain_metadata(evaluation.metadata) if evaluation is not None else {}


def _asset_lines(by_asset: dict[str, list[dict[str, Any]]]) -> list[str]:
    topic = (by_asset.get("offsets_topic_summary") or [{}])[0]
    lines = []
    if topic:
        worst = topic.get("worst_partitions") or []
        lines.append(
            f"cleaner audit        {topic['cleaner_verdict']}: {topic['critical_partitions']} critical, "
            f"{topic['degraded_partitions']} degraded of {topic['partitions_audited']} partitions"
            + (
                f"; worst: partition {worst[0]['partition']} {worst[0]['verdict']} {worst[0].get('code')}"
                if worst
                else ""
            )
        )
        lines.append(
            f"expiration plan      {topic['offset_tombstones']} offset tombstones, "
            f"{topic['dead_groups']} dead groups, {topic['forecast_groups']} groups lose "
            f"{topic['forecast_offsets']} offsets within the window"
        )
    cache = by_asset.get("coordinator_cache") or []
    if cache:
        totals = {
            k: sum(int(m.get(k) or 0) for m in cache)
            for k in ("groups", "offsets", "records", "bytes", "errors")
        }
        totals["records incl. control"] = totals.pop("records")
        lines.append("coordinator cache    " + ", ".join(f"{k}={v}" for k, v in totals.items()))
    if isinstance(topic.get("run_bytes_read"), int) and topic.get("topic_size_bytes"):
        by = topic.get("run_bytes_read_by_asset") or {}
        read, size = topic["run_bytes_read"], topic["topic_size_bytes"]
        lines.append(
            f"segment bytes read   {read} ({read / size:.2f}x the topic's {size})"
            + (": " + ", ".join(f"{a} {n}" for a, n in sorted(by.items())) if by else "")
        )
    for meta in (by_asset.get("cache_validation") or [])[:1]:
        lines.append(
            f"cache validation     success_error_level={meta.get('success_error_level')}, "
            f"expectations_passed={meta.get('expectations_passed')}, "
            f"expectations_failed={meta.get('expectations_failed')}"
        )
    return lines


def _partition_ranks(topic: dict[str, Any]) -> dict[str, dict[int, int]]:
    """Per asset, its partitions in the one worst-first order: the audit's worst partitions, and the
    plan's groups at risk (soonest expiry first), as the topic summary lists them."""
    ranks: dict[str, dict[int, int]] = {"cleaner_audit": {}, "expiration_plan": {}}
    for row in topic.get("worst_partitions") or []:
        ranks["cleaner_audit"].setdefault(int(row["partition"]), len(ranks["cleaner_audit"]))
    for row in topic.get("groups_at_risk") or []:
        if row.get("partition") is not None:
            ranks["expiration_plan"].setdefault(int(row["partition"]), len(ranks["expiration_plan"]))
    return ranks


def _check_lines(checks: dict[str, list[Any]], ranks: dict[str, dict[int, int]]) -> list[str]:
    """Failed at ERROR first, then failed at WARN, then passed; partitions worst first."""
    rows = []
    for name, evs in checks.items():
        failed = [e for e in evs if not e.passed]
        if not failed:
            rows.append(
                ((2, name), f"check {name}: passed" + (f" on {len(evs)} partitions" if len(evs) > 1 else ""))
            )
            continue
        order = ranks.get(name.split(".", 1)[0], {})
        failed.sort(
            key=lambda e: (
                e.severity.value != "ERROR",
                order.get(int(e.partition), len(order)) if e.partition is not None else -1,
                int(e.partition) if e.partition is not None else -1,
            )
        )
        named = [e for e in failed if e.partition is not None]
        where = and_more(named, 8, lambda e: f"{e.partition} ({e.severity.value})")
        level = failed[0].severity.value
        rows.append(
            (
                (0 if level == "ERROR" else 1, name),
                f"check {name}: FAILED ({level})"
                + (f" on {len(failed)} of {len(evs)} partitions: {where}" if where else ""),
            )
        )
    return [line for _, line in sorted(rows)]
