"""Validate a reloaded coordinator cache (Spark DataFrames) with Great Expectations 1.x.

One ephemeral GX context per run: a Spark datasource with one dataframe asset per table (batch
definition "whole dataframe"), one :class:`ExpectationSuite` per table, and one Checkpoint per table;
then one build of a static Data Docs site of every suite and result to ``OUTPUT/reports/data_docs``
(what an ``UpdateDataDocsAction`` on each checkpoint writes, without rebuilding the site's index once
per table). A Checkpoint passes the same batch parameters to all of its validation
definitions, and a dataframe asset takes its DataFrame as a batch parameter, hence one per table.
Our own summary goes to ``OUTPUT/reports/index.html``.

The caller's DataFrames are never mutated: GX sees an alias of each one (a new plan node), which we
cache and unpersist ourselves; GX's own ``persist`` is switched off. The live set is small next to the
log (thousands to millions of rows), and most of GX's metrics are a Spark job each, so a view holds one
partition per :data:`ROWS_PER_VIEW_PARTITION` rows: a job over a small table is one task, and a sample
(``limit``) is one job, not one per partition scanned.

The tables' checkpoints run from up to :data:`SUITE_THREADS` threads at once (most of a checkpoint is
waiting on the JVM for small jobs). Every validator shares the datasource's execution engine, which keys
batches and metrics by batch id; the SQL rules bind their batch to a view named per call
(``kafka_expectations.BatchRowsQueryTable``), where GX's own query metrics share one ``tmp_view``.
Results, Data Docs and the report are assembled in table order, whatever order the threads finish in.

Each checkpoint runs without samples (``suite_samples.COUNTS_FORMAT``); on its thread, the expectations
that failed or passed with unexpected rows then run again with samples (:data:`RESULT_FORMAT`), and the
merged result is stored again for the Data Docs (``suite_samples.add_samples``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import shutil
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import great_expectations as gx
from great_expectations.checkpoint.checkpoint import CheckpointResult
from great_expectations.core.expectation_validation_result import ExpectationValidationResult
from great_expectations.core.run_identifier import RunIdentifier
from great_expectations.data_context import AbstractDataContext
from great_expectations.data_context.types.base import ProgressBarsConfig
from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier
from offsetops.checks.data_docs import localize_site, site_config
from offsetops.checks.expectations import (
    DEFAULT_MAX_METADATA_BYTES,
    DEFAULT_SKEW_MS,
    LIVE_CROSSCHECK_SCHEMA,
    OFFSET_LOG_RANGES_SCHEMA,
    OPTIONAL_TABLES,
    REQUIRED_TABLES,
    TABLE_ORDER,
    CheckSpec,
    build_checks,
)
from offsetops.checks.live_crosscheck import (
    UNREACHABLE,
    CachedOffset,
    CrossCheckRow,
    LogRange,
    cross_check,
    live_log_ranges,
    log_dir_log_ranges,
)
from offsetops.checks.report import ExpectationOutcome, ValidationReport, write_summary
from offsetops.checks.suite_samples import COUNTS_FORMAT, add_samples
from offsetops.coordinator_core.kafka_client import KafkaClientConfig, KafkaClientError
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.sources.live import CONSUMER_OFFSETS
from offsetops.pipelines.tables import row_counts
from pyspark.sql import DataFrame, SparkSession
from pyspark.util import inheritable_thread_target

logger = logging.getLogger(__name__)

SUITE_PREFIX = "offsetops_cache"
"""Suites are named ``offsetops_cache.<table>``."""

DATA_DOCS_SITE = "offsetops"
DATASOURCE_NAME = "offsetops_cache"
BATCH_DEFINITION_NAME = "whole dataframe"
SAMPLE_SIZE = 5
RESULT_FORMAT: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": SAMPLE_SIZE}
"""What every result carries: ``SUMMARY``'s counts and up to :data:`SAMPLE_SIZE` values of what was wrong
(the suites run at ``suite_samples.COUNTS_FORMAT``, then at this for the results that can have a sample)."""

SUITE_THREADS = 4
"""Tables validated at once: enough to keep a local JVM's cores busy between the driver's round trips."""

ROWS_PER_VIEW_PARTITION = 1_000_000
"""Rows per partition of a validated view (a cached copy of a table, coalesced down to this size)."""


def suite_name(table: str) -> str:
    """The expectation suite (and validation definition, checkpoint) name of ``table``."""
    return f"{SUITE_PREFIX}.{table}"


def _context(data_docs_dir: Path) -> AbstractDataContext:
    """An ephemeral context whose only Data Docs site is a local directory, built with the offline views."""
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    for name in list(context.get_site_names()):
        context.delete_data_docs_site(name)
    # GX types site_config as a TypedDict; ours is the plain dict its docs show.
    context.add_data_docs_site(site_name=DATA_DOCS_SITE, site_config=cast(Any, site_config(data_docs_dir)))
    return context


def _json_safe(value: Any) -> Any:
    """Samples come back as Rows, dicts, datetimes...; keep them JSON-friendly."""
    return json.loads(json.dumps(value, default=str))


def _exception_message(result: ExpectationValidationResult) -> str | None:
    info = result.exception_info or {}
    if info.get("raised_exception"):
        return str(info.get("exception_message") or "exception")
    for nested in info.values():  # keyed by metric id when several metrics were resolved
        if isinstance(nested, dict) and nested.get("raised_exception"):
            return str(nested.get("exception_message") or "exception")
    return None


def _outcome(spec: CheckSpec, result: ExpectationValidationResult | None) -> ExpectationOutcome:
    """Turn one GX result into our outcome, pulling a count and a small sample of what was wrong."""
    description = spec.expectation.description or ""
    expectation_type = spec.expectation.expectation_type
    if result is None:
        return ExpectationOutcome(
            spec.check_id,
            spec.table,
            spec.severity,
            expectation_type,
            description,
            False,
            exception="no result returned by Great Expectations",
        )
    body: dict[str, Any] = dict(result.result or {})
    count = body.get("unexpected_count")
    sample: list[Any] = list(body.get("partial_unexpected_list") or [])
    details = body.get("details") or {}
    if "unexpected_rows" in details:  # UnexpectedRowsExpectation: observed_value is the row count
        sample = list(details["unexpected_rows"])
        count = body.get("observed_value")
    elif count is None and isinstance(body.get("observed_value"), int):
        count = body["observed_value"]  # e.g. a row count that should have been 0
    elif count is None and details.get("mismatched"):
        sample = [details["mismatched"]]
    return ExpectationOutcome(
        check_id=spec.check_id,
        table=spec.table,
        severity=spec.severity,
        expectation_type=expectation_type,
        description=description,
        success=bool(result.success),
        unexpected_count=None if count is None else int(count),
        sample=_json_safe(sample[:SAMPLE_SIZE]),
        exception=_exception_message(result),
    )


def validate_cache(
    spark: SparkSession,
    tables: Mapping[str, DataFrame],
    *,
    output_dir: str | Path,
    now_ms: int,
    num_partitions: int = 50,
    skew_ms: int = DEFAULT_SKEW_MS,
    max_metadata_bytes: int = DEFAULT_MAX_METADATA_BYTES,
    cache: bool = True,
    threads: int = SUITE_THREADS,
    counts: Mapping[str, int] | None = None,
) -> ValidationReport:
    """Run every check against the reload tables, build Data Docs and the summary page.

    ``tables`` must hold ``offsets``, ``groups``, ``members`` and ``decode_errors``;
    ``pending_offsets``, ``load_stats`` and the tables of :func:`operator_check_tables`
    (``offset_log_ranges``, ``live_crosscheck``) are validated when present. The DataFrames are not
    mutated (no persist, no new columns). ``cache`` caches an alias of each table for the run.
    ``threads`` is how many tables' checkpoints run at once (1: one after another). ``counts`` are the
    rows of some tables when the caller has them on the driver already; the others are counted by Spark.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    started = time.perf_counter()
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    unknown = sorted(set(tables) - set(REQUIRED_TABLES) - set(OPTIONAL_TABLES))
    if missing or unknown:
        raise ValueError(f"tables: missing {missing}, unknown {unknown}")
    names = [t for t in TABLE_ORDER if t in tables]

    reports_dir = Path(output_dir) / "reports"
    data_docs_dir = _fresh_data_docs_dir(reports_dir)
    checks = build_checks(
        now_ms=now_ms, num_partitions=num_partitions, skew_ms=skew_ms, max_metadata_bytes=max_metadata_bytes
    )
    specs = [s for s in checks if s.table in tables]
    run_time = dt.datetime.now(dt.UTC)
    run_id = RunIdentifier(run_name=f"offsetops-{run_time:%Y%m%dT%H%M%SZ}", run_time=run_time)

    rows = _row_counts(tables, names, counts or {})
    views = {t: _view(t, tables[t], rows[t]) for t in names}
    if cache:
        for view in views.values():
            view.cache()
    try:
        decode_errors_sample = _decode_errors_sample(views["decode_errors"]) if rows["decode_errors"] else []
        results = _run_suites(spark, views, specs, data_docs_dir, run_id, threads=threads)
    finally:
        if cache:
            for view in views.values():
                view.unpersist()

    # Every page is rewritten to the vendored CSS/JS; anything left pointing off the machine is a bug.
    leftover = localize_site(data_docs_dir)
    if leftover:
        logger.warning("Data Docs still reference %d remote resource(s): %s", len(leftover), leftover[:5])
    outcomes = [_outcome(spec, results.get(spec.check_id)) for spec in specs]
    report = ValidationReport(
        success_error_level=all(o.success for o in outcomes if o.severity == "error"),
        success=all(o.success for o in outcomes),
        counts=rows,
        outcomes=outcomes,
        data_docs_index=data_docs_dir / "index.html",
        summary_path=reports_dir / "index.html",
        run_name=run_id.run_name or "",
        now_ms=now_ms,
        num_partitions=num_partitions,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        decode_errors_sample=_json_safe(decode_errors_sample),
    )
    write_summary(report)
    logger.info(
        "validated %s: error-level %s, %d failed",
        ", ".join(names),
        "passed" if report.success_error_level else "FAILED",
        len(report.failed),
    )
    return report


def _row_counts(
    tables: Mapping[str, DataFrame], names: list[str], known: Mapping[str, int]
) -> dict[str, int]:
    """The rows of each of ``names``: ``known`` ones as given, the others counted in one Spark job."""
    stray = sorted(set(known) - set(names))
    bad = sorted(t for t, n in known.items() if isinstance(n, bool) or not isinstance(n, int) or n < 0)
    if stray or bad:
        raise ValueError(f"counts: tables not validated {stray}, not a count of rows {bad}")
    unknown = [t for t in names if t not in known]
    counted = row_counts({t: tables[t] for t in unknown}) if unknown else {}
    return {t: known[t] if t in known else counted.get((t,), 0) for t in names}


def _fresh_data_docs_dir(reports_dir: Path) -> Path:
    """``reports/data_docs``, emptied: only this run's results belong in the site."""
    data_docs_dir = reports_dir / "data_docs"
    if data_docs_dir.exists():
        shutil.rmtree(data_docs_dir)
    data_docs_dir.mkdir(parents=True)
    return data_docs_dir


def _decode_errors_sample(decode_errors: DataFrame) -> list[dict[str, Any]]:
    """The first decode errors in log order (partition, then position)."""
    rows = decode_errors.orderBy("offsets_partition", "position").limit(SAMPLE_SIZE).collect()
    return [r.asDict() for r in rows]


def _view(table: str, df: DataFrame, rows: int) -> DataFrame:
    """What GX validates of ``table``: an alias (the caller's DataFrame untouched) of at most one
    partition per :data:`ROWS_PER_VIEW_PARTITION` rows. ``coalesce`` only merges neighbouring
    partitions, so the rows keep their order and a sample is the same rows."""
    partitions = max(1, math.ceil(rows / ROWS_PER_VIEW_PARTITION))
    return df.coalesce(partitions).alias(f"offsetops_{table}")


def _run_suites(
    spark: SparkSession,
    views: Mapping[str, DataFrame],
    specs: list[CheckSpec],
    data_docs_dir: Path,
    run_id: RunIdentifier,
    *,
    threads: int,
) -> dict[str, ExpectationValidationResult]:
    """One suite, validation and checkpoint per table (in ``views``' order), run on its DataFrame, up to
    ``threads`` tables at once; then the Data Docs of every table's suite and results, built once (an
    ``UpdateDataDocsAction`` on each checkpoint would rebuild the site's index once per table). The
    results by check id."""
    context = _context(data_docs_dir)
    datasource = context.data_sources.add_spark(name=DATASOURCE_NAME, persist=False)
    checkpoints = {
        table: _checkpoint(context, datasource, table, [s for s in specs if s.table == table])
        for table in views
    }
    datasource.get_execution_engine()  # built here, once, before the threads share it

    def run(table: str) -> CheckpointResult:
        checkpoint = checkpoints[table]
        checkpoint_result = checkpoint.run(batch_parameters={"dataframe": views[table]}, run_id=run_id)
        batch_definition = checkpoint.validation_definitions[0].batch_definition
        for key, suite_result in checkpoint_result.run_results.items():
            add_samples(suite_result, batch_definition, views[table], RESULT_FORMAT)
            context.validation_results_store.set(key, suite_result)  # what the Data Docs render
        return checkpoint_result

    # The pool's threads carry the caller's Spark local properties and job tags (job group, scheduler pool).
    run = inheritable_thread_target(spark)(run)

    workers = min(threads, len(views))
    if workers <= 1:
        checkpoint_results = [run(table) for table in views]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="offsetops-gx") as pool:
            checkpoint_results = list(pool.map(run, views))
    results: dict[str, ExpectationValidationResult] = {}
    documented: list[Any] = []
    for table, checkpoint_result in zip(views, checkpoint_results, strict=True):
        documented += [*checkpoint_result.run_results, ExpectationSuiteIdentifier(name=suite_name(table))]
        for run_result in checkpoint_result.run_results.values():
            for r in run_result.results:
                meta = (r.expectation_config.meta if r.expectation_config else None) or {}
                if "check_id" in meta:
                    results[meta["check_id"]] = r
    context.build_data_docs(site_names=[DATA_DOCS_SITE], resource_identifiers=documented, build_index=True)
    return results


def _checkpoint(
    context: AbstractDataContext, datasource: Any, table: str, specs: list[CheckSpec]
) -> gx.Checkpoint:
    """The suite of ``table``'s checks, its dataframe asset and the checkpoint that validates one with the
    other (GX's stores are written here, before any checkpoint runs)."""
    suite = context.suites.add(gx.ExpectationSuite(name=suite_name(table)))
    for spec in specs:
        suite.add_expectation(spec.expectation)
    asset = datasource.add_dataframe_asset(name=table)
    batch_definition = asset.add_batch_definition_whole_dataframe(BATCH_DEFINITION_NAME)
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name=suite_name(table), data=batch_definition, suite=suite)
    )
    return context.checkpoints.add(
        gx.Checkpoint(
            name=suite_name(table),
            validation_definitions=[validation],
            result_format=COUNTS_FORMAT,
        )
    )


def offset_log_ranges_table(spark: SparkSession, offsets: DataFrame, ranges: list[LogRange]) -> DataFrame:
    """Committed offsets (not -1) joined with their data partition's bounds; partitions of unknown bounds
    are left out."""
    from pyspark.sql import functions as F

    bounds = spark.createDataFrame(
        [(r.topic, r.partition, r.log_start_offset, r.log_end_offset, r.source) for r in ranges],
        "topic string, partition int, log_start_offset bigint, log_end_offset bigint, source string",
    )
    joined = offsets.where(F.col("offset") >= 0).join(bounds, ["topic", "partition"])
    return joined.select(*OFFSET_LOG_RANGES_SCHEMA.fieldNames())


def live_crosscheck_table(
    spark: SparkSession,
    tables: Mapping[str, DataFrame],
    config: KafkaClientConfig,
    *,
    topic: str = CONSUMER_OFFSETS,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> DataFrame:
    """:func:`offsetops.checks.live_crosscheck.cross_check` of the cache's offsets and groups as a table.

    An unreachable cluster is one ``unreachable`` row (failing ``live_crosscheck.offsets_agree``
    with the reason), not an exception: the other checks still report.
    """
    cached = [
        CachedOffset(r.offsets_partition, r.group_id, r.topic, r.partition, r.offset, r.record_offset)
        for r in tables["offsets"]
        .select("offsets_partition", "group_id", "topic", "partition", "offset", "record_offset")
        .toLocalIterator()
    ]
    groups = {
        r.group_id: {
            "offsets_partition": r.offsets_partition,
            "state": r.state,
            "protocol_type": r.protocol_type,
        }
        for r in tables["groups"]
        .select("offsets_partition", "group_id", "state", "protocol_type")
        .toLocalIterator()
    }
    try:
        rows = [
            r.to_row()
            for r in cross_check(config, cached, groups, topic=topic, max_batch_bytes=max_batch_bytes)
        ]
    except KafkaClientError as exc:
        logger.warning("live cross-check: %s", exc)
        rows = [CrossCheckRow("cluster", None, "", None, None, None, None, UNREACHABLE, str(exc)).to_row()]
    names = LIVE_CROSSCHECK_SCHEMA.fieldNames()
    return spark.createDataFrame([tuple(r[n] for n in names) for r in rows], LIVE_CROSSCHECK_SCHEMA)


def operator_check_tables(
    spark: SparkSession,
    tables: Mapping[str, DataFrame],
    *,
    log_dir: str | None = None,
    live: KafkaClientConfig | None = None,
    topic: str = CONSUMER_OFFSETS,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    data_partitions: list[tuple[str, int]] | None = None,
) -> dict[str, DataFrame]:
    """The extra tables the operator checks need, from whatever is configured.

    ``offset_log_ranges`` from ListOffsets when a cluster is configured, else from the data topics'
    partition dirs of a local ``log_dir``; ``live_crosscheck`` only with a cluster. ``data_partitions``
    are the offsets table's distinct (topic, partition) when the caller has them on the driver already
    (else a Spark job finds them).
    """
    out: dict[str, DataFrame] = {}
    ranges: list[LogRange] = []
    if live is None and not (log_dir and Path(log_dir).is_dir()):
        return out
    keys = (
        [
            (r.topic, r.partition)
            for r in tables["offsets"].select("topic", "partition").distinct().toLocalIterator()
        ]
        if data_partitions is None
        else data_partitions
    )
    if live is not None:
        try:
            ranges = live_log_ranges(live, keys)
        except KafkaClientError as exc:
            logger.warning("ListOffsets of the data partitions: %s", exc)
        out["live_crosscheck"] = live_crosscheck_table(
            spark, tables, live, topic=topic, max_batch_bytes=max_batch_bytes
        )
    elif log_dir:  # always set here: the guard above returned otherwise
        ranges = log_dir_log_ranges(log_dir, keys)
    if ranges:
        out["offset_log_ranges"] = offset_log_ranges_table(spark, tables["offsets"], ranges)
    return out
