"""The ``audit`` Spark job: Log Cleaner health per ``__consumer_offsets`` partition (``LogCleanerManager``).

The checkpoint files (``cleaner-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``) are read with Spark's text reader on the driver. The segments are
read with ``binaryFile``, routed to one task per group of partitions and sorted by base offset; a task
spools one partition's segments to its local scratch dir, runs ``offsetops.coordinator_core.cleaner``'s
``audit_partition`` + ``judge_partition`` on them, deletes them and moves on, so an executor holds at
most one partition on disk and one segment in memory. Output: ``cleaner_audit`` (one row per
partition, the full ``offsetops audit --json`` partition document in ``audit_json``) and
``cleaner_audit_topic`` (the topic verdict).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
from offsetops.coordinator_core.cleaner.audit import audit_partition_isolated
from offsetops.coordinator_core.cleaner.config import CleanerConfig
from offsetops.coordinator_core.cleaner.model import (
    RANK,
    PartitionAudit,
    PartitionFailure,
    Thresholds,
    worst,
)
from offsetops.coordinator_core.cleaner.rules import judge_partition, judge_topic
from offsetops.coordinator_core.sources.logdir import (
    CLEANER_CHECKPOINT,
    LOG_START_CHECKPOINT,
    OFFSETS_TOPIC,
    REPLICATION_CHECKPOINT,
    PartitionDir,
    Segment,
)
from offsetops.pipelines.audit_history import PartitionAuditError, judged_audit, topic_values
from offsetops.pipelines.cli_args import submit_main
from offsetops.pipelines.reload import merge_tasks, session_from_args
from offsetops.pipelines.source import (
    InputPathError,
    LogDirListing,
    list_log_dir,
    local_file,
    read_checkpoints,
)
from offsetops.pipelines.tables import rows_to_arrow
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)


def _f(name: str, data_type, nullable: bool, comment: str) -> StructField:
    return StructField(name, data_type, nullable, metadata={"comment": comment})


REASON = StructType(
    [
        StructField("severity", StringType(), False),
        StructField("code", StringType(), False),
        StructField("message", StringType(), False),
        StructField("remedy", StringType(), False),
    ]
)

CLEANER_AUDIT_SCHEMA = StructType(
    [
        _f("offsets_partition", IntegerType(), False, "The __consumer_offsets partition audited."),
        _f("verdict", StringType(), False, "HEALTHY, DEGRADED or CRITICAL (the worst reason)."),
        _f("reasons", ArrayType(REASON, False), False, "Findings, worst first, each with a remedy."),
        _f("size_bytes", LongType(), False, "Bytes of all segments."),
        _f("segments", IntegerType(), False, "Segment files."),
        _f("log_start_offset", LongType(), False, "Log start offset."),
        _f("log_end_offset", LongType(), False, "Log end offset."),
        _f("checkpoint", LongType(), True, "cleaner-offset-checkpoint entry; null when none."),
        _f("first_dirty_offset", LongType(), False, "Where the next clean starts."),
        _f("first_uncleanable_offset", LongType(), False, "Where cleaning must stop."),
        _f("last_stable_offset", LongType(), False, "Last stable offset (held by open transactions)."),
        _f("clean_bytes", LongType(), False, "Bytes below the first dirty offset."),
        _f("cleanable_bytes", LongType(), False, "Dirty bytes the cleaner may clean now."),
        _f("dirty_ratio", DoubleType(), False, "cleanable / (clean + cleanable) bytes."),
        _f("eligible", BooleanType(), False, "Whether grabFilthiestCompactedLog would pick the partition."),
        _f("uncleanable_reasons", ArrayType(StringType(), False), False, "Why cleaning stops where it does."),
        _f("open_transactions", IntegerType(), False, "Transactions with no COMMIT/ABORT marker."),
        _f("data_records", LongType(), False, "Data records scanned (control records left out)."),
        _f("reclaimable_records", LongType(), False, "Records a full clean would drop."),
        _f("reclaimable_bytes", LongType(), False, "Bytes a full clean would drop."),
        _f("tombstones", LongType(), False, "Tombstones in the log."),
        _f("expired_tombstones", LongType(), False, "Tombstones the next pass removes (KIP-534)."),
        _f("decode_errors", IntegerType(), False, "Decode errors while scanning."),
        _f("audit_json", StringType(), False, "The full partition document of `offsetops audit --json`."),
    ]
)
"""``cleaner_audit``: one row per partition."""

CLEANER_AUDIT_TOPIC_SCHEMA = StructType(
    [
        _f("audited_at_ms", LongType(), False, "When the audit ran (its `now`), epoch ms."),
        _f("verdict", StringType(), False, "Worst of the topic findings and every partition verdict."),
        _f("reasons", ArrayType(REASON, False), False, "Topic-level findings."),
        _f("partitions", IntegerType(), False, "Partitions audited."),
        _f("size_bytes", LongType(), False, "Bytes of all partitions."),
        _f("reclaimable_bytes", LongType(), False, "Bytes a full clean of every partition would drop."),
    ]
)
"""``cleaner_audit_topic``: one row for the topic."""

AUDIT_SCHEMAS: dict[str, StructType] = {
    "cleaner_audit": CLEANER_AUDIT_SCHEMA,
    "cleaner_audit_topic": CLEANER_AUDIT_TOPIC_SCHEMA,
}


def partition_row(doc: dict, partition: int) -> tuple:
    """A PartitionAudit document as a ``cleaner_audit`` row, in schema order."""
    special = {
        "offsets_partition": partition,
        "reasons": [dict(r) for r in doc["reasons"]],
        "open_transactions": len(doc["open_transactions"]),
        "decode_errors": len(doc["decode_errors"]),
        "audit_json": json.dumps(doc, sort_keys=True, allow_nan=False),
    }
    return tuple(special[n] if n in special else doc[n] for n in CLEANER_AUDIT_SCHEMA.fieldNames())


PARTITION_AUDIT_SCHEMA = StructType(
    [
        StructField("offsets_partition", IntegerType(), False),
        StructField("audit", BinaryType(), False),
    ]
)
"""Internal: one pickled, not yet judged ``PartitionAudit`` per partition (see :func:`partition_audits`)."""


def _scan_partition(
    scratch: Path,
    partition: int,
    files: list[tuple[int, bytes | None, int, str]],
    checkpoints: dict[str, dict[int, int]],
    config: CleanerConfig,
    now_ms: int,
    verify_crc: bool,
) -> PartitionAudit | PartitionFailure | None:
    """``audit_partition`` over ``files`` (base offset, content, mtime ms, original path): remote
    segments are written to a scratch dir; local ones (content ``None``) are read where they are.

    A partition the audit cannot compute comes back as a :class:`PartitionFailure` naming its original
    dir, so one odd partition never fails the job for the others."""
    segments = []
    originals: dict[str, str] = {}
    if files and all(content is None for _b, content, _m, _o in files):
        # A local listing: the executor reads the broker's own files in place (no copy, and memory
        # bounded by the scan, whatever a file holds).
        pdir_path = Path(local_file(files[0][3])).parent
        for base, _content, mtime_ms, original in sorted(files, key=lambda f: f[0]):
            path = Path(local_file(original))
            originals[str(path)] = str(path)
            segments.append(Segment(path, base, path.stat().st_size, mtime_ms))
        scratch_dir = None
    else:
        pdir_path = scratch_dir = scratch / f"{OFFSETS_TOPIC}-{partition}"
        pdir_path.mkdir(parents=True, exist_ok=True)
        for base, content, mtime_ms, original in sorted(files, key=lambda f: f[0]):
            path = pdir_path / f"{base:020d}.log"
            path.write_bytes(content or b"")
            os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
            originals[str(path)] = local_file(original)
            segments.append(Segment(path, base, len(content or b""), mtime_ms))
    try:
        audit = audit_partition_isolated(
            PartitionDir(pdir_path, OFFSETS_TOPIC, partition, tuple(segments)),
            config=config,
            now_ms=now_ms,
            checkpoint=checkpoints[CLEANER_CHECKPOINT].get(partition),
            log_start_checkpoint=checkpoints[LOG_START_CHECKPOINT].get(partition),
            high_watermark=checkpoints[REPLICATION_CHECKPOINT].get(partition),
            verify_crc=verify_crc,
        )
    finally:
        if scratch_dir is not None:
            shutil.rmtree(scratch_dir, ignore_errors=True)
    if isinstance(audit, PartitionFailure):
        original_dir = str(Path(next(iter(originals.values()), str(pdir_path))).parent)
        return PartitionFailure(partition, original_dir, audit.error)
    if audit is not None:
        # Errors name the segment as the user knows it, not our scratch copy.
        # (dataclasses.replace keeps a summary's count and the skipped bytes)
        audit.decode_errors = [
            dataclasses.replace(e, file=originals.get(e.file or "", e.file)) for e in audit.decode_errors
        ]
    return audit


def _audit_arrow(
    checkpoints: dict[str, dict[int, int]],
    config: CleanerConfig,
    thresholds: Thresholds,
    now_ms: int,
    verify_crc: bool,
    *,
    judged: bool = True,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        scratch = Path(tempfile.mkdtemp(prefix="offsetops-audit-"))
        current: int | None = None
        files: list[tuple[int, bytes | None, int, str]] = []

        def flush(partition: int) -> pa.RecordBatch | None:
            audit = _scan_partition(
                scratch,
                partition,
                files,
                checkpoints,
                config,
                now_ms,
                verify_crc,
            )
            files.clear()
            if audit is None:
                return None
            return _audit_batch(audit, partition, config, thresholds, now_ms, judged)

        try:
            for rb in batches:
                parts = rb.column("offsets_partition").to_pylist()
                bases = rb.column("base_offset").to_pylist()
                paths = rb.column("file").to_pylist()
                mtimes = rb.column("mtime_ms").to_pylist()
                contents = rb.column("content")
                for i in range(rb.num_rows):
                    if parts[i] != current:
                        if current is not None:
                            out = flush(current)
                            if out is not None:
                                yield out
                        current = parts[i]
                    files.append((bases[i], contents[i].as_py(), int(mtimes[i]), paths[i]))
            if current is not None:
                out = flush(current)
                if out is not None:
                    yield out
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    return run


def _audit_batch(
    audit: PartitionAudit | PartitionFailure,
    partition: int,
    config: CleanerConfig,
    thresholds: Thresholds,
    now_ms: int,
    judged: bool,
) -> pa.RecordBatch:
    if not judged:
        blob = pickle.dumps(audit, protocol=pickle.HIGHEST_PROTOCOL)
        return rows_to_arrow([(partition, blob)], PARTITION_AUDIT_SCHEMA).to_batches()[0]
    if isinstance(audit, PartitionFailure):
        # The cleaner_audit table has a row only for audited partitions; say which one failed and why.
        raise RuntimeError(f"{OFFSETS_TOPIC}-{partition} ({audit.path}) could not be audited: {audit.error}")
    audit.reasons = judge_partition(audit, config=config, thresholds=thresholds, now_ms=now_ms)
    audit.verdict = worst(audit.reasons)
    return rows_to_arrow([partition_row(audit.to_json(), partition)], CLEANER_AUDIT_SCHEMA).to_batches()[0]


def _scan(
    spark: SparkSession,
    listing: LogDirListing,
    fn: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    schema: StructType,
    partitions_per_task: int | None,
) -> DataFrame:
    """Every segment, grouped by partition in base-offset order, through ``fn`` (``mapInArrow``)."""
    from offsetops.pipelines.source import NO_SEGMENT, segment_rows

    tasks = merge_tasks(len(listing.partitions), partitions_per_task, spark.sparkContext.defaultParallelism)
    columns = ("offsets_partition", "base_offset", "file", "mtime_ms", "content")
    return (
        # Local listings carry paths only (the executors read the files in place); remote ones the bytes.
        segment_rows(spark, listing)
        .where(F.col("base_offset") != NO_SEGMENT)
        .select(*columns)
        .repartition(tasks, "offsets_partition")
        .sortWithinPartitions("offsets_partition", "base_offset")
        .mapInArrow(fn, schema)
    )


def partition_audits(
    spark: SparkSession,
    listing: LogDirListing,
    *,
    now_ms: int,
    config: CleanerConfig | None = None,
    partitions_per_task: int | None = None,
    verify_crc: bool = True,
) -> dict[int, PartitionAudit | PartitionFailure]:
    """The expensive, per-partition part of the audit (scanning every record), run on the executors.

    The results are not yet judged: ``audit_log_dir(..., partition_audits=...)`` adds history,
    broker-log marks and the verdicts on the driver, exactly as for a local audit.
    """
    checkpoints, _notes = read_checkpoints(spark, listing)
    fn = _audit_arrow(checkpoints, config or CleanerConfig(), Thresholds(), now_ms, verify_crc, judged=False)
    rows = _scan(spark, listing, fn, PARTITION_AUDIT_SCHEMA, partitions_per_task).collect()
    return {row.offsets_partition: pickle.loads(row.audit) for row in rows}  # audits or failures


def audit_table(
    spark: SparkSession,
    listing: LogDirListing,
    *,
    now_ms: int,
    config: CleanerConfig | None = None,
    thresholds: Thresholds | None = None,
    checkpoints: dict[str, dict[int, int]] | None = None,
    partitions_per_task: int | None = None,
    verify_crc: bool = True,
) -> DataFrame:
    """``cleaner_audit`` as a DataFrame (one row per partition)."""
    if checkpoints is None:
        checkpoints, _notes = read_checkpoints(spark, listing)
    fn = _audit_arrow(checkpoints, config or CleanerConfig(), thresholds or Thresholds(), now_ms, verify_crc)
    return _scan(spark, listing, fn, CLEANER_AUDIT_SCHEMA, partitions_per_task)


def topic_row(
    partition_rows: list,
    *,
    now_ms: int,
    config: CleanerConfig | None = None,
    thresholds: Thresholds | None = None,
) -> tuple:
    """The ``cleaner_audit_topic`` row from the collected partition rows (driver side)."""
    reasons = judge_topic(
        config=config or CleanerConfig(), thresholds=thresholds or Thresholds(), metrics=None, broker_log=None
    )
    verdict = max([worst(reasons), *(r["verdict"] for r in partition_rows)], key=RANK.__getitem__)
    return (
        now_ms,
        verdict,
        [r.to_json() for r in reasons],
        len(partition_rows),
        sum(r["size_bytes"] for r in partition_rows),
        sum(r["reclaimable_bytes"] for r in partition_rows),
    )


def _judged_tables(
    spark: SparkSession, listing: LogDirListing, args: argparse.Namespace, notes: list[str]
) -> tuple[list[str], tuple, list[str]]:
    """With ``--state-dir``: scans on the executors, verdicts on the driver with the history; the partition
    verdicts, the topic row and the audit's notes, its ``cleaner_audit`` table written to ``--output``."""
    from offsetops.pipelines.reload import options_from_args

    options = options_from_args(args)
    now_ms = args.run.now_ms
    scans = partition_audits(
        spark,
        listing,
        now_ms=now_ms,
        partitions_per_task=options.partitions_per_task,
        verify_crc=options.verify_crc,
    )
    audit = judged_audit(
        listing,
        scans,
        now_ms=now_ms,
        state_dir=args.state_dir,
        record_history=not args.no_record,
        checkpoint_notes=notes,
    )
    rows = [partition_row(pa.to_json(), pa.partition) for pa in audit.partitions]
    out = args.output.rstrip("/")
    spark.createDataFrame(rows, CLEANER_AUDIT_SCHEMA).write.mode("overwrite").parquet(out + "/cleaner_audit")
    return [pa.verdict for pa in audit.partitions], topic_values(audit), list(audit.notes)


def _unjudged_tables(
    spark: SparkSession,
    listing: LogDirListing,
    args: argparse.Namespace,
    checkpoints: dict[str, dict[int, int]],
) -> tuple[list[str], tuple]:
    """Without history: each partition judged on the executors; the partition verdicts and the topic row."""
    from offsetops.pipelines.reload import options_from_args

    options = options_from_args(args)
    now_ms = args.run.now_ms
    df = audit_table(
        spark,
        listing,
        now_ms=now_ms,
        checkpoints=checkpoints,
        partitions_per_task=options.partitions_per_task,
        verify_crc=options.verify_crc,
    )
    out = args.output.rstrip("/")
    df.write.mode("overwrite").parquet(out + "/cleaner_audit")
    rows = spark.read.schema(CLEANER_AUDIT_SCHEMA).parquet(out + "/cleaner_audit").collect()
    return [r["verdict"] for r in rows], topic_row(rows, now_ms=now_ms)


def run(args: argparse.Namespace) -> int:
    spark = session_from_args(args, "audit")
    started = time.perf_counter()
    # The run model's clock: --now-ms, else the input's declared clock (a simulated or copied snapshot).
    now_ms = args.run.now_ms
    try:
        listing = list_log_dir(spark, args.input, partitions=args.partition)
    except InputPathError as exc:
        print(f"offsetops pipeline audit: {exc}", file=sys.stderr)
        return 2
    state_dir = getattr(args, "state_dir", None)
    if state_dir and os.path.exists(state_dir) and not os.path.isdir(state_dir):
        print(f"offsetops pipeline audit: --state-dir {state_dir}: not a directory", file=sys.stderr)
        return 2
    checkpoints, notes = read_checkpoints(spark, listing)
    if state_dir:
        try:
            verdicts, topic, notes = _judged_tables(spark, listing, args, notes)
        except (PartitionAuditError, OSError) as exc:  # OSError: the history could not be read or written
            print(f"offsetops pipeline audit: {exc}", file=sys.stderr)
            return 1
    else:
        verdicts, topic = _unjudged_tables(spark, listing, args, checkpoints)
    out = args.output.rstrip("/")
    table = spark.createDataFrame([topic], CLEANER_AUDIT_TOPIC_SCHEMA)
    table.coalesce(1).write.mode("overwrite").parquet(out + "/cleaner_audit_topic")
    verdict = topic[1]
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    by = {v: verdicts.count(v) for v in RANK}
    print(
        f"audit (now_ms={now_ms}): {verdict}; {len(verdicts)} partitions "
        f"({', '.join(f'{k}={n}' for k, n in by.items())}) -> {out} in {time.perf_counter() - started:.1f} s"
    )
    return 0


if __name__ == "__main__":
    submit_main("audit")
