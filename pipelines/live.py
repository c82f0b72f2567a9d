"""The live reload on Spark executors: ``__consumer_offsets`` fetched over the Kafka protocol by the tasks.

The single-process live reload (``offsetops reload --bootstrap``, Dagster's live mode by default)
fetches every partition through one process. For a large cluster this job spreads the fetch and the
fold over the executors, and gives the same tables:

1. **plan** (driver): Metadata and ListOffsets (log start, high watermark at READ_UNCOMMITTED); each
   partition is cut into :class:`~offsetops.coordinator_core.sources.live.FetchRange` s of at most
   ``--max-range-offsets`` offsets (``plan_fetch_ranges``);
2. **fetch and fold** (``mapInArrow``, one Spark partition per range, largest first): each task opens
   its own connection from the one
   :class:`~offsetops.coordinator_core.kafka_client.KafkaClientConfig` (shipped inside the task, never
   logged: its ``repr`` masks the passwords; SASL and TLS as on the driver),
   fetches its range from the partition leader and folds the batches the range owns (``fold_range``,
   the fold of the single-process reload) into a pickled ``PartitionFold``. A task that cannot reach
   or authenticate to the cluster returns its error as a row, so the driver stops with one line naming
   the executor and the cluster instead of Spark retrying an unreachable cluster;
3. **merge and expand**: the file reload's stages (``offsetops.pipelines.reload.partition_outputs`` and
   ``expand_table``): folds of one partition are merged in offset order with ``PartitionFold.merge``,
   which settles transactions whose records and markers fell into different ranges.

``spark-submit pipelines/live.py --client-config client.properties --output DIR`` or
``offsetops pipeline live --bootstrap HOST:PORT --output DIR``.
"""

from __future__ import annotations

import argparse
import logging
import pickle
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from offsetops.coordinator_core.kafka_client import KafkaClientConfig, KafkaClientError
from offsetops.coordinator_core.sources.live import (
    CONSUMER_OFFSETS,
    DEFAULT_RANGE_OFFSETS,
    FetchRange,
    LiveSourceError,
    fold_range,
    plan_fetch_ranges,
)
from offsetops.coordinator_core.sources.source import ReadLimits, Source
from offsetops.pipelines.cli_args import submit_main
from offsetops.pipelines.reload import (
    DEFAULT_OPTIONS,
    FOLD_SCHEMA,
    ReloadOptions,
    expand_table,
    merge_tasks,
    partition_outputs,
    reload_emitter,
    write_blob_tables,
)
from offsetops.pipelines.schemas import TABLE_SCHEMAS
from offsetops.pipelines.secrets import allow_from_env, check_secret_shipping
from offsetops.pipelines.tables import arrow_schema
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

log = logging.getLogger(__name__)

RANGE_SCHEMA = StructType(
    [
        StructField("offsets_partition", IntegerType(), False),
        StructField("range_start", LongType(), False),
        StructField("range_end", LongType(), False),
        StructField("first", BooleanType(), False),
    ]
)
"""Stage 1 output: one row per fetch range."""

LIVE_FOLD_SCHEMA = StructType([*FOLD_SCHEMA.fields, StructField("error", StringType(), True)])
"""Stage 2 output: the pickled fold of one range (``base_offset`` = the range start), or its error."""

_MAX_REPORTED_FAILURES = 5


@dataclass(slots=True)
class LiveReloadResult:
    """What the job wrote, and how the log was cut."""

    output: str
    cluster: str
    counts: dict[str, int] = field(default_factory=dict)
    partitions: int = 0
    ranges: int = 0
    offsets: int = 0
    elapsed_s: float = 0.0

    def summary(self) -> str:
        tables = ", ".join(f"{t}={n}" for t, n in self.counts.items())
        return (
            f"{self.partitions} partitions in {self.ranges} fetch ranges ({self.offsets} offsets) from "
            f"{self.cluster} -> {self.output} ({tables}) in {self.elapsed_s:.1f} s"
        )


# -- stage 2: fetch and fold, one task per range --------------------------------------------------------


def _fetch_arrow(
    config: KafkaClientConfig, topic: str, semantics: str, verify_crc: bool, max_batch_bytes: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    target = arrow_schema(LIVE_FOLD_SCHEMA)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # One connection per task, opened at the first range and reused for the task's other ranges.
        limits = ReadLimits(max_batch_bytes=max_batch_bytes, verify_crc=verify_crc)
        with Source(client=config, topic=topic, limits=limits).live() as source:
            for rb in batches:
                parts, starts, blobs, errors = [], [], [], []
                for row in rb.to_pylist():
                    rng = FetchRange(
                        row["offsets_partition"], row["range_start"], row["range_end"], row["first"]
                    )
                    try:
                        fold = fold_range(source, rng, semantics=semantics, verify_crc=verify_crc)
                        blob, error = pickle.dumps(fold, protocol=pickle.HIGHEST_PROTOCOL), None
                    except KafkaClientError as exc:  # its message names the cluster, never a secret
                        blob, error = b"", config.redact(f"on executor {socket.gethostname()}: {exc}")
                    parts.append(rng.partition)
                    starts.append(rng.start)
                    blobs.append(blob)
                    errors.append(error)
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.array(parts, pa.int32()),
                        pa.array(starts, pa.int64()),
                        pa.array(blobs, pa.binary()),
                        pa.array(errors, pa.string()),
                    ],
                    schema=target,
                )

    return run


def range_rows(spark: SparkSession, ranges: Sequence[FetchRange]) -> DataFrame:
    """One Spark partition per range, the largest first (they are scheduled in that order)."""
    ordered = sorted(ranges, key=lambda r: (-r.span, r.partition, r.start))
    rows = [(r.partition, r.start, r.end, r.first) for r in ordered]
    rdd = spark.sparkContext.parallelize(rows, max(1, len(rows)))
    return spark.createDataFrame(rdd, RANGE_SCHEMA)


def fetch_folds(
    spark: SparkSession,
    config: KafkaClientConfig,
    ranges: Sequence[FetchRange],
    *,
    topic: str = CONSUMER_OFFSETS,
    options: ReloadOptions = DEFAULT_OPTIONS,
    allow_unencrypted_secrets: bool | None = None,
) -> DataFrame:
    """Stage 2: the ranges fetched and folded on the executors (``LIVE_FOLD_SCHEMA``). The client
    configuration travels inside the tasks: refused (:func:`check_secret_shipping`) when it holds a
    secret and the cluster's Spark neither authenticates nor encrypts."""
    sc = spark.sparkContext
    check_secret_shipping(
        sc.master,
        dict(sc.getConf().getAll()),
        config,
        allow_unencrypted=allow_from_env()
        if allow_unencrypted_secrets is None
        else allow_unencrypted_secrets,
    )
    return range_rows(spark, ranges).mapInArrow(
        _fetch_arrow(config, topic, options.semantics, options.verify_crc, options.max_batch_bytes),
        LIVE_FOLD_SCHEMA,
    )


def raise_failures(folds: DataFrame, config: KafkaClientConfig, topic: str) -> None:
    """Raise :class:`LiveSourceError` with the first failed ranges' errors, if any range failed."""
    failed = (
        folds.where(F.col("error").isNotNull())
        .select("offsets_partition", "base_offset", "error")
        .limit(_MAX_REPORTED_FAILURES)
        .collect()
    )
    if not failed:
        return
    first = failed[0]
    more = f" (and {len(failed) - 1} more ranges failed)" if len(failed) > 1 else ""
    raise LiveSourceError(
        config.redact(
            f"fetching {topic}-{first['offsets_partition']} from offset {first['base_offset']} failed "
            f"{first['error']}{more}"
        )
    )


def live_reload_tables(
    spark: SparkSession,
    config: KafkaClientConfig,
    ranges: Sequence[FetchRange],
    *,
    topic: str = CONSUMER_OFFSETS,
    options: ReloadOptions = DEFAULT_OPTIONS,
    allow_unencrypted_secrets: bool | None = None,
) -> tuple[dict[str, DataFrame], DataFrame, DataFrame]:
    """The distributed live reload as DataFrames: ``({table: DataFrame}, blobs, folds)``.

    The folds are fetched once (persisted) and checked for failed ranges before anything is merged;
    unpersist ``folds`` when done.
    """
    partitions = {r.partition for r in ranges}
    if options.semantics != "java" and len(ranges) > len(partitions):
        # PartitionFold.merge follows the Java coordinator's rules only; Scala replay reads whole.
        raise ValueError("with scala semantics, plan one range per partition (folds cannot be merged)")
    folds = fetch_folds(
        spark,
        config,
        ranges,
        topic=topic,
        options=options,
        allow_unencrypted_secrets=allow_unencrypted_secrets,
    )
    folds.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        raise_failures(folds, config, topic)
    except BaseException:
        folds.unpersist()
        raise
    blobs = partition_outputs(
        folds.drop("error"),
        emit=reload_emitter,
        schemas=TABLE_SCHEMAS,
        num_partitions=options.num_partitions,
        tasks=merge_tasks(
            len(partitions), options.partitions_per_task, spark.sparkContext.defaultParallelism
        ),
        segment_checks=False,
    )
    return {t: expand_table(blobs, t, s) for t, s in TABLE_SCHEMAS.items()}, blobs, folds


def run_live_reload(
    spark: SparkSession,
    config: KafkaClientConfig,
    output: str,
    options: ReloadOptions = DEFAULT_OPTIONS,
    *,
    topic: str = CONSUMER_OFFSETS,
    partitions: list[int] | None = None,
    max_range_offsets: int = DEFAULT_RANGE_OFFSETS,
    ranges: Sequence[FetchRange] | None = None,
    allow_unencrypted_secrets: bool | None = None,
) -> LiveReloadResult:
    """Plan (unless ``ranges`` are given), fetch and fold on the executors, merge, write the tables."""
    started = time.perf_counter()
    if ranges is None:
        with Source(client=config, topic=topic).live() as source:
            ranges = plan_fetch_ranges(source, partitions, max_offsets=max_range_offsets)
    result = LiveReloadResult(
        output=output,
        cluster=config.describe(),
        partitions=len({r.partition for r in ranges}),
        ranges=len(ranges),
        offsets=sum(r.span for r in ranges),
    )
    if not ranges:
        raise LiveSourceError(f"topic {topic!r} on {config.describe()} has no partitions to read")
    tables, blobs, folds = live_reload_tables(
        spark,
        config,
        ranges,
        topic=topic,
        options=options,
        allow_unencrypted_secrets=allow_unencrypted_secrets,
    )
    try:
        result.counts = write_blob_tables(tables, blobs, output)
    finally:
        folds.unpersist()
    result.elapsed_s = time.perf_counter() - started
    return result


# -- command line / spark-submit ----------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run the job from parsed arguments; returns the exit code (decode errors are counted, not fatal)."""
    from offsetops.coordinator_core.errors import printable
    from offsetops.pipelines.reload import options_from_args, report_decode_errors, session_from_args

    try:
        config = KafkaClientConfig.resolve(args.bootstrap, args.client_config)
        # Plan before starting Spark: a wrong address or credential fails in seconds, in one line.
        with Source(client=config, topic=args.topic).live() as source:
            ranges = plan_fetch_ranges(source, args.partition, max_offsets=args.max_range_offsets)
        spark = session_from_args(args, "live")
        result = run_live_reload(
            spark,
            config,
            args.output,
            options_from_args(args),
            topic=args.topic,
            ranges=ranges,
            allow_unencrypted_secrets=args.allow_unencrypted_secrets or None,
        )
    except KafkaClientError as exc:  # names the cluster (and the executor), never a secret
        print(f"offsetops pipeline live: {printable(exc)}", file=sys.stderr)
        return 2
    print(f"live: {result.summary()}")
    return report_decode_errors(spark, args.output, strict=args.strict)


if __name__ == "__main__":
    submit_main("live")
