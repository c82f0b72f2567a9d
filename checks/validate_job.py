"""The ``validate`` Spark job: run the Great Expectations suite (``checks/``) over the reload tables.

``--input`` is either a reload output dir (``offsets/`` and the other tables are read back with their
explicit schemas) or a broker log dir (the segment-parallel reload runs first, in memory). The Data
Docs and the summary page go to ``OUTPUT/reports/`` (a driver-local path: GX writes plain files).
The exit code is 1 when an error-level expectation failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from offsetops.pipelines.cli_args import submit_main
from offsetops.pipelines.reload import (
    options_from_args,
    read_tables,
    reload_tables,
    session_from_args,
)
from offsetops.pipelines.schemas import TABLE_SCHEMAS
from offsetops.pipelines.source import InputPathError, list_log_dir, path_exists
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession


def is_reload_output(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` holds reload tables (an ``offsets/`` dir) rather than a broker log dir."""
    return path_exists(spark, path.rstrip("/") + "/offsets")


def validate_tables(
    spark: SparkSession,
    tables: dict[str, DataFrame],
    output: str,
    *,
    now_ms: int,
    num_partitions: int,
    log_dir: str | None = None,
):
    """Call the GX suite of ``checks/`` on the tables; returns its ValidationReport.

    With a local broker ``log_dir``, committed offsets are also checked against the bounds of the data
    partitions found in it.
    """
    from offsetops.checks.suite import operator_check_tables, validate_cache

    extra = operator_check_tables(spark, tables, log_dir=log_dir)
    return validate_cache(
        spark, {**tables, **extra}, output_dir=output, now_ms=now_ms, num_partitions=num_partitions
    )


def run(args: argparse.Namespace) -> int:
    spark = session_from_args(args, "validate")
    started = time.perf_counter()
    now_ms = args.run.now_ms  # the run model's clock: --now-ms, the input's declaration, else the wall
    blobs = None
    log_dir = None
    try:
        if is_reload_output(spark, args.input):
            tables = read_tables(spark, args.input)
        else:
            log_dir = args.input if os.path.isdir(args.input) else None  # local: data partitions too
            listing = list_log_dir(spark, args.input, partitions=args.partition)
            tables, blobs = reload_tables(spark, listing, options_from_args(args))
            blobs.persist(StorageLevel.MEMORY_AND_DISK)
    except InputPathError as exc:
        print(f"offsetops pipeline validate: {exc}", file=sys.stderr)
        return 2
    try:
        report = validate_tables(
            spark,
            {t: tables[t] for t in TABLE_SCHEMAS},
            args.output,
            now_ms=now_ms,
            num_partitions=args.num_partitions,
            log_dir=log_dir,
        )
    finally:
        if blobs is not None:
            blobs.unpersist()
    failed = report.failed
    print(
        f"validate: {'passed' if report.success_error_level else 'FAILED'} "
        f"({len(failed)} failed expectation(s)); rows {report.counts}; Data Docs {report.data_docs_index}; "
        f"summary {report.summary_path} in {time.perf_counter() - started:.1f} s"
    )
    for o in failed:
        print(f"  {o.severity}: {o.check_id}", file=sys.stderr)
    return 0 if report.success_error_level else 1


if __name__ == "__main__":
    submit_main("validate")
