"""The ``reload`` Spark job: ``__consumer_offsets`` segments -> the coordinator cache as Parquet tables.

Kafka loads a partition sequentially (``GroupMetadataManager.doLoadGroupsAndOffsets``). The load is a
last-writer-wins fold by record offset with transactions resolved by their markers, so it splits:

1. per segment (``mapInArrow``): decode the segment with ``offsetops.coordinator_core.records.read_batches``
   into a :class:`~offsetops.coordinator_core.loader.PartitionFold` and pickle its state;
2. per partition (``repartition`` by partition + ``sortWithinPartitions`` by base offset +
   ``mapInArrow``): merge the folds in log order (``PartitionFold.merge``), ``finish()`` into a
   ``CoordinatorCache`` and turn it into Arrow tables, carried as IPC blobs (one row per table);
3. per table (``mapInArrow``): expand the blobs into rows with the explicit schema, write Parquet.

The merge step streams: a task holds one partition's running fold and one segment's fold at a time.
``mode="rows"`` runs the same work through plain RDDs of pickled Python rows, for comparison.

Why one module of about 500 lines: the three stages above are one Spark plan whose functions are
shipped to the executors together; the table expansion (``offsetops.pipelines.tables``), the input listing
(``offsetops.pipelines.source``) and the schemas already live apart.
"""

from __future__ import annotations

import argparse
import logging
import math
import pickle
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.errors import DecodeError, count_errors, printable
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.records.reader import Scan
from offsetops.coordinator_core.sources.logdir import segment_order_errors
from offsetops.pipelines import reload_scan
from offsetops.pipelines.cli_args import MODES, submit_main
from offsetops.pipelines.reload_scan import CleanerScanRequest, ScanPlan
from offsetops.pipelines.schemas import TABLE_SCHEMAS
from offsetops.pipelines.source import NO_SEGMENT, LogDirListing, list_log_dir, local_file, segment_rows
from offsetops.pipelines.tables import cache_rows, error_from_row, ipc_batches, rows_to_arrow, table_to_ipc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

log = logging.getLogger(__name__)

FOLD_SCHEMA = StructType(
    [
        StructField("offsets_partition", IntegerType(), False),
        StructField("base_offset", LongType(), False),
        StructField("fold", BinaryType(), False),
    ]
)
"""Stage 1 output: one pickled PartitionFold per segment."""

BLOB_SCHEMA = StructType(
    [
        StructField("offsets_partition", IntegerType(), False),
        StructField("table", StringType(), False),
        StructField("rows", LongType(), False),
        StructField("ipc", BinaryType(), False),
    ]
)
"""Stage 2 output: one Arrow IPC blob per (partition, table), with its row count."""

#: Tables written partitioned by ``offsets_partition`` (the big ones); the rest are single dirs.
PARTITIONED_TABLES = frozenset({"offsets", "members"})

#: Stage-2 emitter: a finished cache -> {table: rows in that table's schema order}.
Emitter = Callable[[CoordinatorCache], dict[str, list[tuple]]]


@dataclass(frozen=True, slots=True)
class ReloadOptions:
    """How to fold: replay semantics, CRC checks, partition count for ``partition_for``."""

    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS
    semantics: str = "java"
    verify_crc: bool = True
    partitions_per_task: int | None = None
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES


DEFAULT_OPTIONS = ReloadOptions()


@dataclass(slots=True)
class ReloadResult:
    """What a job wrote: row counts per table and timings (seconds)."""

    output: str
    counts: dict[str, int] = field(default_factory=dict)
    segments: int = 0
    partitions: int = 0
    elapsed_s: float = 0.0
    #: bytes of segment files read, per offsets partition (each file is read once, whole)
    bytes_read: dict[int, int] = field(default_factory=dict)

    def summary(self) -> str:
        tables = ", ".join(f"{t}={n}" for t, n in self.counts.items())
        return (
            f"{self.partitions} partitions, {self.segments} segments -> {self.output} "
            f"({tables}) in {self.elapsed_s:.1f} s"
        )


# -- stage 1: one fold per segment -------------------------------------------------------------------


def fold_segment(
    content: bytes | None,
    *,
    file: str,
    partition: int,
    semantics: str = "java",
    verify_crc: bool = True,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    also: Callable[[Any, Scan], object] | None = None,
) -> PartitionFold:
    """Fold one segment (the per-segment unit of the parallel reload).

    ``content`` is the segment's bytes, or None to map the local ``file`` here (bounded memory, as the
    single-process reload reads it). An empty ``file`` stands for a partition without segments.
    ``also`` gets the local file's mapping after the fold (``PartitionFold.add_segment``).
    """
    start = time.perf_counter()
    fold = PartitionFold(partition=partition, semantics=semantics)
    if content is not None:
        fold.add_buffer(content, file=file, verify_crc=verify_crc, max_batch_bytes=max_batch_bytes)
    elif file:
        fold.add_segment(file, verify_crc=verify_crc, max_batch_bytes=max_batch_bytes, also=also)
    # Each segment file counts once, with or without batches, as load_partition_dir counts them.
    fold.stats.segments = 1 if file else 0
    fold.stats.elapsed_ms = (time.perf_counter() - start) * 1000
    return fold


def _fold_arrow(
    semantics: str, verify_crc: bool, max_batch_bytes: int, plan: ScanPlan | None = None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        target = pa.schema(
            [
                pa.field("offsets_partition", pa.int32(), False),
                pa.field("base_offset", pa.int64(), False),
                pa.field("fold", pa.binary(), False),
                *([pa.field("scan", pa.binary(), True)] if plan is not None else []),
            ]
        )
        for rb in batches:
            parts = rb.column("offsets_partition").to_pylist()
            bases = rb.column("base_offset").to_pylist()
            files = rb.column("file").to_pylist()
            contents = rb.column("content")
            out, scans = [], []
            for i in range(rb.num_rows):
                content, file = contents[i].as_py(), local_file(files[i])
                scanner = plan.scanner(rb, i, file) if plan is not None else None
                fold = fold_segment(
                    content,
                    file=file,
                    partition=parts[i],
                    semantics=semantics,
                    verify_crc=verify_crc,
                    max_batch_bytes=max_batch_bytes,
                    also=scanner.local if scanner is not None else None,
                )
                out.append(pickle.dumps(fold, protocol=pickle.HIGHEST_PROTOCOL))
                scans.append(scanner.result(content, fold) if scanner is not None else None)
            columns = [pa.array(parts, pa.int32()), pa.array(bases, pa.int64()), pa.array(out, pa.binary())]
            if plan is not None:
                columns.append(pa.array(scans, pa.binary()))
            yield pa.RecordBatch.from_arrays(columns, schema=target)

    return run


def fold_segments(
    segments: DataFrame, options: ReloadOptions = DEFAULT_OPTIONS, plan: ScanPlan | None = None
) -> DataFrame:
    """Stage 1: ``read_segments`` rows -> one pickled PartitionFold per segment (``FOLD_SCHEMA``); with a
    cleaner scan ``plan``, each segment's pickled scan beside it (the same bytes, read once)."""
    columns = ["offsets_partition", "base_offset", "file", "content"]
    schema = FOLD_SCHEMA
    if plan is not None:
        columns += ["length", "mtime_ms"]
        schema = reload_scan.fold_schema(FOLD_SCHEMA)
    return segments.select(*columns).mapInArrow(
        _fold_arrow(options.semantics, options.verify_crc, options.max_batch_bytes, plan), schema
    )


# -- stage 2: merge per partition, in base-offset order ------------------------------------------------


def merge_segment(running: PartitionFold | None, fold: PartitionFold, base_offset: int) -> PartitionFold:
    """Merge the fold of the next segment (named ``base_offset``) into ``running``, in log order.

    The segment is checked against its name and the previous segment's last offset after the merge,
    so its errors come in the order the single-process reload reports them.
    """
    previous_last = running.stats.last_offset if running is not None else None
    merged = fold if running is None else running.merge(fold)
    if base_offset != NO_SEGMENT and fold.files:
        first, file = fold.files[0]
        merged.stats.errors.extend(
            segment_order_errors(file, fold.partition, base_offset, first, previous_last)
        )
    return merged


def merge_folds(
    folds: Sequence[PartitionFold],
    bases: Sequence[int] | None = None,
    anomalies: Sequence[DecodeError] = (),
) -> PartitionFold:
    """Merge the folds of consecutive segments of one partition (given in base-offset order).

    ``bases`` are the segments' base offsets (for the order checks); ``anomalies`` the partition's
    listing anomalies, reported first as the single-process reload reports them.
    """
    merged: PartitionFold | None = None
    for i, fold in enumerate(folds):
        merged = merge_segment(merged, fold, bases[i] if bases is not None else NO_SEGMENT)
    assert merged is not None
    merged.stats.errors[:0] = anomalies
    return merged


def finish_fold(fold: PartitionFold, num_partitions: int) -> CoordinatorCache:
    """``PartitionFold.finish`` with the decode time of every segment counted in ``elapsed_ms``."""
    start = time.perf_counter()
    decode_ms = fold.stats.elapsed_ms
    cache = fold.finish(num_partitions=num_partitions)
    cache.stats.elapsed_ms = decode_ms + (time.perf_counter() - start) * 1000
    return cache


def reload_emitter(cache: CoordinatorCache) -> dict[str, list[tuple]]:
    """The six reload tables of one cache."""
    return cache_rows(cache)


def _merge_arrow(
    emit: Emitter,
    schemas: dict[str, StructType],
    num_partitions: int,
    anomalies: dict[int, list[DecodeError]] | None = None,
    segment_checks: bool = True,
    plan: ScanPlan | None = None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        scans = reload_scan.ScanMerger(plan) if plan is not None else None
        target = pa.schema(
            [
                pa.field("offsets_partition", pa.int32(), False),
                pa.field("table", pa.string(), False),
                pa.field("rows", pa.int64(), False),
                pa.field("ipc", pa.binary(), False),
            ]
        )

        def flush(partition: int, fold: PartitionFold) -> pa.RecordBatch:
            fold.stats.errors[:0] = (anomalies or {}).get(partition, [])
            rows = emit(finish_fold(fold, num_partitions))
            names = [t for t in schemas if t in rows]
            blobs = [table_to_ipc(rows_to_arrow(rows[t], schemas[t])) for t in names]
            counts = [len(rows[t]) for t in names]
            audit = scans.finish(partition) if scans is not None else None
            if audit is not None:  # the partition's cleaner audit, not a table: see reload_scan
                names, blobs, counts = [*names, reload_scan.SCAN_BLOB_TABLE], [*blobs, audit], [*counts, 1]
            return pa.RecordBatch.from_arrays(
                [
                    pa.array([partition] * len(names), pa.int32()),
                    pa.array(names),
                    pa.array(counts, pa.int64()),
                    pa.array(blobs, pa.binary()),
                ],
                schema=target,
            )

        current: int | None = None
        running: PartitionFold | None = None
        for rb in batches:
            parts = rb.column("offsets_partition").to_pylist()
            bases = rb.column("base_offset").to_pylist()
            blobs = rb.column("fold")
            scan_blobs = rb.column("scan") if scans is not None else None
            for i in range(rb.num_rows):
                start = time.perf_counter()
                fold: PartitionFold = pickle.loads(blobs[i].as_py())
                base = bases[i] if segment_checks else NO_SEGMENT
                if parts[i] != current:
                    if running is not None and current is not None:
                        yield flush(current, running)
                    current, running = parts[i], merge_segment(None, fold, base)
                else:
                    running = merge_segment(running, fold, base)
                if scans is not None and scan_blobs is not None:
                    scans.add(parts[i], scan_blobs[i].as_py())
                running.stats.elapsed_ms += (time.perf_counter() - start) * 1000
        if running is not None and current is not None:
            yield flush(current, running)

    return run


def partition_outputs(
    folds: DataFrame,
    *,
    emit: Emitter,
    schemas: dict[str, StructType],
    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
    tasks: int | None = None,
    anomalies: dict[int, list[DecodeError]] | None = None,
    segment_checks: bool = True,
    plan: ScanPlan | None = None,
) -> DataFrame:
    """Stage 2: folds -> one Arrow IPC blob per (partition, table) (``BLOB_SCHEMA``), plus with a scan
    ``plan`` each partition's cleaner audit (``SCAN_BLOB_TABLE``, JSON).

    ``tasks`` Spark tasks merge the partitions (default: Spark's shuffle partition count); every
    segment of a partition goes to the same task, in base-offset order. ``segment_checks`` checks each
    fold against the segment its ``base_offset`` names (off for folds of fetch ranges, which name no
    file).
    """
    grouped = (
        folds.repartition(tasks, "offsets_partition") if tasks else folds.repartition("offsets_partition")
    )
    return grouped.sortWithinPartitions("offsets_partition", "base_offset").mapInArrow(
        _merge_arrow(emit, schemas, num_partitions, anomalies, segment_checks, plan), BLOB_SCHEMA
    )


# -- stage 3: blobs -> tables ------------------------------------------------------------------------------


def _expand(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for rb in batches:
        for blob in rb.column("ipc"):
            for out in ipc_batches(blob.as_py()):
                if out.num_rows:
                    yield out


def expand_table(blobs: DataFrame, table: str, schema: StructType) -> DataFrame:
    """Stage 3: the rows of ``table``, with exactly ``schema`` (types, nullability, comments)."""
    selected = blobs.where(F.col("table") == table).select("ipc")
    # One task per core is plenty to expand Arrow blobs; a task per offsets partition only adds overhead.
    cores = blobs.sparkSession.sparkContext.defaultParallelism
    return selected.coalesce(max(1, cores)).mapInArrow(_expand, schema)


def merge_tasks(n: int, partitions_per_task: int | None, cores: int) -> int:
    """Spark tasks for the merge stage of ``n`` partitions: ``ceil(n / partitions_per_task)``.

    ``None`` picks about four tasks per core (at most one per partition), which evens out skew
    between partitions without paying a Python task launch per small partition.
    """
    if partitions_per_task is None:
        return max(1, min(n, 4 * cores))
    return max(1, math.ceil(n / max(1, partitions_per_task)))


def reload_tables(
    spark: SparkSession,
    listing: LogDirListing,
    options: ReloadOptions = DEFAULT_OPTIONS,
    *,
    emit: Emitter = reload_emitter,
    schemas: dict[str, StructType] = TABLE_SCHEMAS,
    plan: ScanPlan | None = None,
) -> tuple[dict[str, DataFrame], DataFrame]:
    """The segment-parallel reload as DataFrames: ``({table: DataFrame}, blobs)``; with a cleaner scan
    ``plan``, the blobs carry each partition's audit too (:mod:`offsetops.pipelines.reload_scan`).

    ``blobs`` is the stage-2 DataFrame every table reads; persist it when more than one table is
    computed (``write_tables`` does), or each table recomputes the decode.
    """
    folds = fold_segments(segment_rows(spark, listing), options, plan)
    blobs = partition_outputs(
        folds,
        emit=emit,
        schemas=schemas,
        num_partitions=options.num_partitions,
        tasks=merge_tasks(
            len(listing.partitions), options.partitions_per_task, spark.sparkContext.defaultParallelism
        ),
        anomalies={p: listing.anomalies_of(p) for p in {p for p, _e in listing.anomalies}},
        plan=plan,
    )
    return {t: expand_table(blobs, t, s) for t, s in schemas.items()}, blobs


# -- the plain-RDD path (per-row pickling), for the Arrow comparison ---------------------------------------


def reload_tables_rows(
    spark: SparkSession,
    listing: LogDirListing,
    options: ReloadOptions = DEFAULT_OPTIONS,
    *,
    emit: Emitter = reload_emitter,
    schemas: dict[str, StructType] = TABLE_SCHEMAS,
) -> tuple[dict[str, DataFrame], object]:
    """The same reload through RDDs of Python objects: rows cross the JVM boundary one by one."""
    semantics, verify_crc, num_partitions = options.semantics, options.verify_crc, options.num_partitions
    max_batch_bytes = options.max_batch_bytes
    segments = segment_rows(spark, listing).select("offsets_partition", "base_offset", "file", "content")
    anomalies = {p: listing.anomalies_of(p) for p in listing.partitions}

    def to_fold(row) -> tuple[int, tuple[int, bytes]]:
        fold = fold_segment(
            None if row.content is None else bytes(row.content),
            file=local_file(row.file),
            partition=row.offsets_partition,
            semantics=semantics,
            verify_crc=verify_crc,
            max_batch_bytes=max_batch_bytes,
        )
        return row.offsets_partition, (row.base_offset, pickle.dumps(fold, protocol=pickle.HIGHEST_PROTOCOL))

    def finish(item: tuple[int, Iterable[tuple[int, bytes]]]) -> dict[str, list[tuple]]:
        part, blobs = item
        ordered = sorted(blobs, key=lambda x: x[0])
        folds = [pickle.loads(b) for _base, b in ordered]
        merged = merge_folds(folds, [base for base, _b in ordered], anomalies.get(part, []))
        return emit(finish_fold(merged, num_partitions))

    tasks = merge_tasks(
        len(listing.partitions), options.partitions_per_task, spark.sparkContext.defaultParallelism
    )
    per_partition = segments.rdd.map(to_fold).groupByKey(tasks).map(finish)
    per_partition.persist(StorageLevel.MEMORY_AND_DISK)
    tables = {
        t: spark.createDataFrame(per_partition.flatMap(lambda rows, t=t: rows.get(t, [])), s)
        for t, s in schemas.items()
    }
    return tables, per_partition


# -- writing -------------------------------------------------------------------------------------------------


def blob_counts(blobs: DataFrame, tables: Sequence[str]) -> dict[str, int]:
    """Rows per table, from the stage-2 blobs (no extra pass over the tables)."""
    got = {r["table"]: int(r["n"]) for r in blobs.groupBy("table").agg(F.sum("rows").alias("n")).collect()}
    return {t: got.get(t, 0) for t in tables}


def write_blob_tables(
    tables: dict[str, DataFrame],
    blobs: DataFrame,
    output: str,
    also: Callable[[DataFrame], object] | None = None,
) -> dict[str, int]:
    """Write the tables that expand ``blobs`` (persisted meanwhile, so the folds run once); the counts.
    ``also(blobs)`` runs while they are still persisted."""
    blobs.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = blob_counts(blobs, list(tables))
        write_tables(tables, output, counts)
        if also is not None:
            also(blobs)
    finally:
        blobs.unpersist()
    return counts


def write_tables(
    tables: dict[str, DataFrame],
    output: str,
    counts: dict[str, int],
    *,
    partitioned: frozenset[str] = PARTITIONED_TABLES,
) -> None:
    """Write each table as Parquet under ``OUTPUT/<table>/`` (overwrite).

    The big tables are partitioned by ``offsets_partition``, unless empty: a partitioned write of no
    rows leaves no Parquet file and so no schema to read back.

    Each write is a Spark job of its own; they are submitted together, from one thread each (Spark
    schedules jobs from several threads of one driver side by side), so the small tables do not wait
    behind the partitioned ones and the job's fixed costs overlap. Every write is waited for; the
    first failure is raised after the others have finished.
    """

    def write(name: str, df: DataFrame) -> None:
        writer = df.write.mode("overwrite")
        if name in partitioned and counts.get(name, 0) > 0:
            writer = writer.partitionBy("offsets_partition")
        writer.parquet(output.rstrip("/") + "/" + name)

    with ThreadPoolExecutor(max_workers=max(len(tables), 1), thread_name_prefix="offsetops-write") as pool:
        futures = [pool.submit(write, name, df) for name, df in tables.items()]
    for future in futures:  # all have finished (the pool's exit waits): raise the first failure
        future.result()


def read_tables(
    spark: SparkSession, output: str, schemas: dict[str, StructType] = TABLE_SCHEMAS
) -> dict[str, DataFrame]:
    """Read the tables back with their explicit schemas (columns in schema order)."""
    out = {}
    for name, schema in schemas.items():
        df = spark.read.schema(schema).parquet(output.rstrip("/") + "/" + name)
        out[name] = df.select(*schema.fieldNames())
    return out


def run_reload(
    spark: SparkSession,
    input_path: str,
    output: str,
    options: ReloadOptions = DEFAULT_OPTIONS,
    *,
    partitions: list[int] | None = None,
    mode: str = "arrow",
    scan: CleanerScanRequest | None = None,
) -> ReloadResult:
    """List, decode, merge and write the reload tables; the whole job. With ``scan``, the cleaner
    audit's record scan runs in the same pass and its audits are written to ``scan.output``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if scan is not None and mode != "arrow":
        raise ValueError("the cleaner scan runs in the reload's arrow mode only")
    started = time.perf_counter()
    listing = list_log_dir(spark, input_path, partitions=partitions)
    if mode == "arrow":
        plan, keep = reload_scan.scan_in_reload(spark, listing, scan) if scan is not None else (None, None)
        tables, blobs = reload_tables(spark, listing, options, plan=plan)
        counts = write_blob_tables(tables, blobs, output, keep)
    else:
        tables, rdd = reload_tables_rows(spark, listing, options)
        try:
            counts = {t: rdd.map(lambda rows, t=t: len(rows.get(t, []))).sum() for t in tables}  # type: ignore[attr-defined]
            write_tables(tables, output, counts)
        finally:
            rdd.unpersist()  # type: ignore[attr-defined]
    return ReloadResult(
        output=output,
        counts=counts,
        segments=len(listing.segments),
        partitions=len(listing.partitions),
        elapsed_s=time.perf_counter() - started,
        bytes_read=listing.bytes_per_partition(),
    )


# -- command line / spark-submit -----------------------------------------------------------------------------


def options_from_args(args: argparse.Namespace) -> ReloadOptions:
    return ReloadOptions(
        num_partitions=args.num_partitions,
        verify_crc=not args.no_verify_crc,
        partitions_per_task=args.partitions_per_task,
        max_batch_bytes=getattr(args, "max_batch_bytes", DEFAULT_MAX_BATCH_BYTES),
    )


def session_from_args(args: argparse.Namespace, job: str) -> SparkSession:
    from offsetops.pipelines.session import build_session, parse_conf

    return build_session(
        args.master, app_name=args.app_name or f"offsetops-{job}", conf=parse_conf(args.conf)
    )


def run(args: argparse.Namespace) -> int:
    """Run the job from parsed arguments; returns the exit code (errors are counted, not fatal)."""
    from offsetops.pipelines.source import InputPathError

    spark = session_from_args(args, "reload")
    try:
        result = run_reload(
            spark, args.input, args.output, options_from_args(args), partitions=args.partition, mode=args.mode
        )
    except InputPathError as exc:
        print(f"offsetops pipeline reload: {exc}", file=sys.stderr)
        return 2
    print(f"reload: {result.summary()}")
    return report_decode_errors(spark, args.output, strict=getattr(args, "strict", False))


def report_decode_errors(spark: SparkSession, output: str, *, strict: bool) -> int:
    """Print the first 20 decode errors of a finished reload on stderr; the job's exit code."""
    errors = read_decode_errors(spark, output)
    for err in errors[:20]:
        print(f"  {'notice' if err.is_notice else 'error'}: {printable(err)}", file=sys.stderr)
    if len(errors) > 20:
        print(f"  ... and {len(errors) - 20} more (see the decode_errors table)", file=sys.stderr)
    return 1 if strict and count_errors(errors) else 0


def read_decode_errors(spark: SparkSession, output: str) -> list[DecodeError]:
    """The ``decode_errors`` table of a finished reload, in partition and log order."""
    table = read_tables(spark, output, {"decode_errors": TABLE_SCHEMAS["decode_errors"]})["decode_errors"]
    errors = [error_from_row(r.asDict()) for r in table.collect()]
    errors.sort(key=lambda e: e.partition if e.partition is not None else -1)  # stable: log order kept
    return errors


if __name__ == "__main__":
    submit_main("reload")
