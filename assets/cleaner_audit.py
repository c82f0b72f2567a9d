"""Cleaner audit domain: Log Cleaner health of each ``__consumer_offsets`` partition, hourly.

The verdict (HEALTHY / DEGRADED / CRITICAL) and its reasons come from
:func:`coordinator_core.cleaner_audit.audit_log_dir`; the ``cleaner_verdict`` asset check
(``checks/dagster_checks.py``) turns them into a check result on this asset, and the alert sensor
pages on CRITICAL partitions.
"""

import dataclasses
from typing import Any

from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    Config,
    Definitions,
    Failure,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    ScheduleEvaluationContext,
    asset,
    define_asset_job,
    schedule,
)
from pydantic import Field

from assets.reload import raw_segments
from assets.resources import (
    OFFSETS_PARTITIONS,
    SCHEDULE_STATUS,
    OffsetsSourceResource,
    SparkResource,
    StateResource,
    all_partitions_tags,
    partitions_label,
    run_partitions,
    write_json,
)
from checks.dagster_checks import AUDIT_CHECKS

GROUP = "cleaner_audit"
AUDIT_REPORT = "cleaner_audit.json"


class CleanerAuditConfig(Config):
    """Broker settings the cleaner runs with, and verdict thresholds (defaults: Kafka's and ours)."""

    cleaner_config: dict[str, str] = Field(
        default_factory=dict,
        description="Kafka config keys, e.g. log.cleaner.dedupe.buffer.size, min.cleanable.dirty.ratio.",
    )
    thresholds: dict[str, str] = Field(
        default_factory=dict, description="Threshold overrides by name, e.g. hanging_transaction_ms."
    )
    record_history: bool = Field(
        default=True, description="Append this audit to the history in the state dir."
    )


def _reason_rows(audit: Any) -> list[dict[str, Any]]:
    rows = [{"partition": None, **r.to_json()} for r in audit.reasons]
    for p in audit.partitions:
        rows += [{"partition": p.partition, **r.to_json()} for r in p.reasons]
    return rows


@asset(
    group_name=GROUP,
    partitions_def=OFFSETS_PARTITIONS,
    backfill_policy=BackfillPolicy.single_run(),
    deps=[raw_segments],
    kinds={"kafka", "spark"},
    description="Log Cleaner health per partition: dirty ratio, what blocks cleaning, what a clean would "
    "reclaim, progress since the previous audit; verdict HEALTHY, DEGRADED or CRITICAL.",
)
def cleaner_audit(
    context: AssetExecutionContext,
    config: CleanerAuditConfig,
    offsets_source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
) -> MaterializeResult:
    """Audit this run's partitions of the log dir; partitions absent from it are HEALTHY and empty.

    The record scans (the costly part: every record is read) run as a Spark job, one task per group of
    partitions; history, broker-log marks and verdicts are applied here.
    """
    from coordinator_core.cleaner.config import CleanerConfig
    from coordinator_core.cleaner_audit import CRITICAL, DEGRADED, HEALTHY, Thresholds, audit_log_dir
    from coordinator_core.sources.logdir import LogDirError
    from pipelines.audit import partition_audits
    from pipelines.source import InputPathError, list_log_dir

    partitions = run_partitions(context)
    state.ensure()
    if not offsets_source.log_dir:
        raise Failure(
            "the cleaner audit reads segment files: set OffsetsSourceResource.log_dir (a broker's data "
            "volume) alongside bootstrap_servers"
        )
    try:
        cleaner = CleanerConfig().with_values(config.cleaner_config, source="user")
        thresholds = Thresholds().with_overrides(config.thresholds)
    except ValueError as exc:
        raise Failure(f"CleanerAuditConfig: {exc}") from exc
    try:
        logdir = offsets_source.open_log_dir()
        wanted = set(partitions)
        logdir = dataclasses.replace(
            logdir, partitions=tuple(pd for pd in logdir.partitions if pd.partition in wanted)
        )
        present = [pd.partition for pd in logdir.partitions if pd.segments]
        now_ms = offsets_source.now_ms()
        scans = {}
        if present:
            session = spark.get_session()
            listing = list_log_dir(session, str(offsets_source.log_dir), partitions=present)
            scans = partition_audits(session, listing, now_ms=now_ms, config=cleaner)
        audit = audit_log_dir(
            logdir,
            config=cleaner,
            thresholds=thresholds,
            now_ms=now_ms,
            state_dir=state.audit_history_dir,
            record_history=config.record_history,
            partition_audits=scans,
        )
    except (LogDirError, InputPathError) as exc:
        raise Failure(str(exc)) from exc
    doc = {**audit.to_json(), "run_partitions": partitions}
    path = write_json(state.reports_path / AUDIT_REPORT, doc)
    write_json(state.reports_path / "cleaner_audit" / f"audit-{partitions_label(partitions)}.json", doc)
    verdicts = {str(p): HEALTHY for p in partitions}
    verdicts.update({str(p.partition): p.verdict for p in audit.partitions})
    reasons = _reason_rows(audit)
    table = "\n".join(
        f"| {r['partition'] if r['partition'] is not None else 'topic'} | {r['severity']} | {r['code']} "
        f"| {r['message']} | {r['remedy']} |"
        for r in reasons
        if r["severity"] != HEALTHY
    )[:20_000]
    summary = doc["summary"]
    context.log.info(
        f"cleaner audit {audit.verdict}: {summary['critical']} critical, {summary['degraded']} degraded "
        f"of {len(partitions)} partitions"
    )
    return MaterializeResult(
        metadata={
            "verdict": audit.verdict,
            "partitions": partitions_label(partitions),
            "partitions_audited": len(audit.partitions),
            "healthy": summary["healthy"] + (len(partitions) - len(audit.partitions)),
            "degraded": summary["degraded"],
            "critical": summary["critical"],
            "critical_partitions": MetadataValue.json(
                sorted(int(p) for p, v in verdicts.items() if v == CRITICAL)
            ),
            "degraded_partitions": MetadataValue.json(
                sorted(int(p) for p, v in verdicts.items() if v == DEGRADED)
            ),
            "partition_verdicts": MetadataValue.json(verdicts),
            "max_dirty_ratio": summary["max_dirty_ratio"],
            "bytes": summary["size_bytes"],
            "reclaimable_bytes": summary["reclaimable_bytes"],
            "reclaimable_ratio": summary["reclaimable_ratio"],
            "open_transactions": summary["open_transactions"],
            "findings": MetadataValue.json(
                [
                    {k: r[k] for k in ("partition", "severity", "code", "message", "remedy")}
                    for r in reasons
                    if r["severity"] != HEALTHY
                ][:50]
            ),
            "reasons": MetadataValue.md(
                "| partition | severity | code | what | remedy |\n|---|---|---|---|---|\n" + table
                if table
                else "No findings: every partition is HEALTHY."
            ),
            "report": MetadataValue.path(str(path)),
        }
    )


cleaner_audit_job = define_asset_job(
    "cleaner_audit_job",
    selection=[cleaner_audit],
    partitions_def=OFFSETS_PARTITIONS,
    description="The Log Cleaner audit of every partition (read-only).",
)


@schedule(
    job=cleaner_audit_job,
    cron_schedule="15 * * * *",
    execution_timezone="UTC",
    default_status=SCHEDULE_STATUS,
    description="Hourly at :15: the cleaner audit of every partition in one run.",
)
def hourly_cleaner_audit(context: ScheduleEvaluationContext) -> RunRequest:
    """One run over every partition."""
    when = context.scheduled_execution_time
    return RunRequest(run_key=f"cleaner-audit-{when:%Y%m%d%H}" if when else None, tags=all_partitions_tags())


defs = Definitions(
    assets=[cleaner_audit],
    asset_checks=AUDIT_CHECKS,
    jobs=[cleaner_audit_job],
    schedules=[hourly_cleaner_audit],
)
