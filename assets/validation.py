"""Validation domain: the Great Expectations suite over the reload tables, with Data Docs.

The suite itself is :func:`offsetops.checks.suite.validate_cache`; this asset runs it on the canonical Parquet
tables of the run's partitions, records what a person reads in the UI and emits the ``gx_*`` asset
checks (``checks/dagster_checks.py``) from the suite's report, so a failing expectation shows on this asset.
"""

from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetSelection,
    BackfillPolicy,
    Config,
    Definitions,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    ScheduleEvaluationContext,
    asset,
    define_asset_job,
    schedule,
)
from offsetops.assets.metadata import clock_metadata, settings_metadata, write_json
from offsetops.assets.partitions import (
    OFFSETS_PARTITIONS,
    all_partitions_tags,
    partitions_label,
    run_partitions,
)
from offsetops.assets.published_tables import kept_rows, read_cache_tables
from offsetops.assets.reload import coordinator_cache, raw_segments
from offsetops.assets.resources import SCHEDULE_STATUS, OffsetsSourceResource, SparkResource, StateResource
from offsetops.checks.dagster_checks import gx_results, table, validation_check_specs
from offsetops.checks.report import ExpectationOutcome, ValidationReport
from pydantic import Field

GROUP = "validation"
VALIDATION_REPORT = "validation.json"


class ValidationConfig(Config):
    """Tolerances of the suite."""

    skew_ms: int = Field(
        default=3_600_000,
        ge=0,
        description="How far in the future a broker timestamp may be before it is insane.",
    )
    suite_threads: int = Field(
        default=4,
        ge=1,
        le=16,
        description="How many tables' Great Expectations checkpoints run at once (1: one after another).",
    )


@asset(
    group_name=GROUP,
    partitions_def=OFFSETS_PARTITIONS,
    backfill_policy=BackfillPolicy.single_run(),
    deps=[coordinator_cache],
    kinds={"spark", "great_expectations"},
    check_specs=validation_check_specs(),
    description="Great Expectations validation of the reload tables (error and warning level), with "
    "Data Docs and a one-page summary.",
)
def cache_validation(
    context: AssetExecutionContext,
    config: ValidationConfig,
    offsets_source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
) -> MaterializeResult:
    """Validate this run's partitions of the canonical tables; failures are reported, not raised."""
    from offsetops.checks.operator_report import report_url
    from offsetops.checks.suite import operator_check_tables, validate_cache

    partitions = run_partitions(context)
    state.ensure()
    session = spark.get_session()
    tables = read_cache_tables(session, state, partitions)
    kept = kept_rows(state, partitions)  # this run's published rows, while the files are unchanged
    # Live cross-check and data-partition bounds, from whatever source is configured.
    extra = operator_check_tables(
        session,
        tables,
        log_dir=offsets_source.log_dir,
        live=offsets_source.kafka_config() if offsets_source.is_live else None,
        topic=offsets_source.topic,
        max_batch_bytes=offsets_source.settings()["max_batch_bytes"],
        data_partitions=None if kept is None else _data_partitions(kept["offsets"]),
    )
    report = validate_cache(
        session,
        {**tables, **extra},
        output_dir=state.output_path,
        now_ms=offsets_source.clock().as_of_ms,
        num_partitions=offsets_source.settings()["num_partitions"],
        skew_ms=config.skew_ms,
        threads=config.suite_threads,
        counts=None if kept is None else {name: len(rows) for name, rows in kept.items()},
    )
    doc = {**report.to_dict(), "partitions": partitions}
    path = write_json(state.reports_path / VALIDATION_REPORT, doc)
    # Error level first, then the most unexpected rows: the worst failure leads.
    failed = sorted(
        report.failed, key=lambda o: (o.severity != "error", -(o.unexpected_count or 0), o.check_id)
    )
    context.log.info(
        f"validation {'passed' if report.success else 'FAILED'}: error level "
        f"{'ok' if report.success_error_level else 'FAILED'}, {len(failed)} of {len(report.outcomes)} failed"
    )
    label = partitions_label(partitions)
    # The suite validates the run's partitions together, so these are the run's figures and results.
    return MaterializeResult(
        check_results=gx_results(context, report, label),
        metadata={
            **clock_metadata(offsets_source.clock()),
            **settings_metadata(offsets_source.settings()),
            "validated_partitions": label,
            **_report_metadata(report, failed),
            "data_docs": MetadataValue.path(str(report.data_docs_index)),
            "data_docs_url": MetadataValue.url(report_url(state.reports_path, "data_docs/index.html")),
            "summary_page": MetadataValue.path(str(report.summary_path)),
            "report": MetadataValue.path(str(path)),
            "elapsed_s": MetadataValue.float(round(report.elapsed_ms / 1000, 2)),
        },
    )


def _data_partitions(offsets: list[Any]) -> list[tuple[str, int]]:
    """The distinct (topic, partition) of the offsets table's rows (tuples in schema order), in one order."""
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    names = TABLE_SCHEMAS["offsets"].fieldNames()
    topic, partition = names.index("topic"), names.index("partition")
    return sorted({(row[topic], row[partition]) for row in offsets}, key=str)


def _report_metadata(report: ValidationReport, failed: list[ExpectationOutcome]) -> dict[str, Any]:
    """The validation's figures: success, expectations passed and failed by severity, the failed checks
    (worst first) and the rows validated per table."""
    tally = report.by_severity
    return {
        "success": report.success,
        "success_error_level": report.success_error_level,
        "expectations": MetadataValue.int(len(report.outcomes)),
        "expectations_passed": MetadataValue.int(tally["error"]["passed"] + tally["warning"]["passed"]),
        "expectations_failed": MetadataValue.int(tally["error"]["failed"] + tally["warning"]["failed"]),
        "error_failed": MetadataValue.int(tally["error"]["failed"]),
        "warning_failed": MetadataValue.int(tally["warning"]["failed"]),
        "failed_checks": table(
            (
                ("check_id", "string"),
                ("severity", "string"),
                ("unexpected_count", "int"),
                ("description", "string"),
            ),
            (
                {
                    "check_id": o.check_id,
                    "severity": o.severity,
                    "unexpected_count": o.unexpected_count,
                    "description": o.description,
                }
                for o in failed
            ),
        ),
        "rows": table(
            (("table", "string"), ("rows", "int")),
            ({"table": name, "rows": n} for name, n in report.counts.items()),
        ),
    }


reload_validation_job = define_asset_job(
    "reload_and_validation_job",
    selection=AssetSelection.assets(raw_segments, coordinator_cache, cache_validation),
    partitions_def=OFFSETS_PARTITIONS,
    description="Full reload of every partition into the cache tables, then the GX validation.",
)


@schedule(
    job=reload_validation_job,
    cron_schedule="0 5 * * *",
    execution_timezone="UTC",
    default_status=SCHEDULE_STATUS,
    description="Daily at 05:00 UTC: full reload and validation, all partitions in one run.",
)
def daily_reload_and_validation(context: ScheduleEvaluationContext) -> RunRequest:
    """One run over every partition."""
    when = context.scheduled_execution_time
    return RunRequest(
        run_key=f"reload-validation-{when:%Y%m%d}" if when else None, tags=all_partitions_tags()
    )


defs = Definitions(
    assets=[cache_validation],
    jobs=[reload_validation_job],
    schedules=[daily_reload_and_validation],
)
