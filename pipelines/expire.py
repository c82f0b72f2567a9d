"""The ``expire`` Spark job: the tombstone plan of one cleanup pass (``cleanupGroupMetadata``).

Same input and same segment-parallel reload as ``pipelines/reload.py``; each partition's finished
cache goes through ``offsetops.coordinator_core.expiration.plan_expiration`` on the executor, and the plan is
written as Parquet tables: ``tombstones`` (in the order the coordinator would append them, ``seq``),
``dead_groups`` and ``expiration_forecast``.
"""

from __future__ import annotations

import argparse
import sys
import time

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.expiration import (
    DEFAULT_RETENTION_MS,
    KIP848,
    ExpirationPlan,
    plan_expiration,
)
from offsetops.pipelines.cli_args import submit_main
from offsetops.pipelines.reload import (
    DEFAULT_OPTIONS,
    Emitter,
    ReloadOptions,
    ReloadResult,
    blob_counts,
    options_from_args,
    reload_tables,
    session_from_args,
    write_tables,
)
from offsetops.pipelines.source import InputPathError, list_log_dir
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType


def _f(name: str, data_type, nullable: bool, comment: str) -> StructField:
    return StructField(name, data_type, nullable, metadata={"comment": comment})


_PARTITION = _f("offsets_partition", IntegerType(), False, "The __consumer_offsets partition of the group.")

TOMBSTONES_SCHEMA = StructType(
    [
        _PARTITION,
        _f(
            "seq",
            IntegerType(),
            False,
            "Order in which the coordinator appends the tombstones of the partition.",
        ),
        _f("kind", StringType(), False, "offset_commit or group_metadata (KIP-848 group records included)."),
        _f("record_type", IntegerType(), False, "Record key type of the tombstone (1 offset, 2 group, 3-8)."),
        _f("group_id", StringType(), False, "Consumer group id."),
        _f("topic", StringType(), True, "Topic of an offset tombstone; null for group tombstones."),
        _f("partition", IntegerType(), True, "Partition of an offset tombstone; null for group tombstones."),
        _f("key_hex", StringType(), False, "The record key the tombstone is written with, hex."),
        _f("reason", StringType(), False, "The expiration rule that applied (stable code)."),
        _f("base_timestamp", LongType(), True, "Timestamp the retention was counted from, epoch ms."),
        _f("age_ms", LongType(), True, "now - base_timestamp, milliseconds."),
        _f("committed_offset", LongType(), True, "Committed offset being expired (offset tombstones)."),
    ]
)
"""``tombstones``: the records one cleanup pass appends, per partition in append order."""

DEAD_GROUPS_SCHEMA = StructType(
    [
        _PARTITION,
        _f("group_id", StringType(), False, "Group that goes Dead."),
        _f("group_type", StringType(), False, "classic, consumer, share or streams."),
        _f("protocol_type", StringType(), True, "Embedded protocol type; null for none."),
        _f("generation", IntegerType(), False, "Generation (group epoch) of the group."),
        _f("tombstones", IntegerType(), False, "Group tombstones written (0 for generation 0, legacy)."),
        _f("reason", StringType(), False, "Why the group is removed."),
    ]
)
"""``dead_groups``: groups the pass removes (Empty, no offsets left, no open transaction)."""

FORECAST_SCHEMA = StructType(
    [
        _PARTITION,
        _f("group_id", StringType(), False, "Consumer group id."),
        _f("topic", StringType(), False, "Topic of the offset."),
        _f("partition", IntegerType(), False, "Partition of the offset."),
        _f("reason", StringType(), False, "The expiration rule that will apply."),
        _f("base_timestamp", LongType(), False, "Timestamp the retention counts from, epoch ms."),
        _f("expires_at", LongType(), False, "When the offset expires, epoch ms."),
        _f("expires_in_ms", LongType(), False, "expires_at - now, milliseconds."),
    ]
)
"""``expiration_forecast``: offsets alive now that expire within the forecast horizon."""

EXPIRE_SCHEMAS: dict[str, StructType] = {
    "tombstones": TOMBSTONES_SCHEMA,
    "dead_groups": DEAD_GROUPS_SCHEMA,
    "expiration_forecast": FORECAST_SCHEMA,
}


def plan_rows(plan: ExpirationPlan, partition: int) -> dict[str, list[tuple]]:
    """An expiration plan (of one or more partitions) as rows of the three tables."""
    seq: dict[int, int] = {}
    tombstones = []
    for t in plan.tombstones:
        p = partition if t.offsets_partition is None else t.offsets_partition
        n = seq.get(p, 0)
        seq[p] = n + 1
        tombstones.append(
            (
                p,
                n,
                t.kind,
                t.record_type,
                t.group_id,
                t.topic,
                t.partition,
                t.key_hex,
                t.reason,
                t.base_timestamp,
                t.age_ms,
                t.committed_offset,
            )
        )
    dead = [
        (
            partition if d.offsets_partition is None else d.offsets_partition,
            d.group_id,
            d.group_type,
            d.protocol_type,
            d.generation,
            d.tombstones,
            d.reason,
        )
        for d in plan.dead_groups
    ]
    forecast = [
        (
            partition if f.offsets_partition is None else f.offsets_partition,
            f.group_id,
            f.topic,
            f.partition,
            f.reason,
            f.base_timestamp,
            f.expires_at,
            f.expires_in_ms,
        )
        for f in plan.forecast
    ]
    return {"tombstones": tombstones, "dead_groups": dead, "expiration_forecast": forecast}


def expiration_emitter(
    *, now_ms: int, retention_ms: int, coordinator: str, forecast_horizon_ms: int
) -> Emitter:
    """Stage-2 emitter: plan one partition's cleanup on the executor."""

    def emit(cache: CoordinatorCache) -> dict[str, list[tuple]]:
        plan = plan_expiration(
            [cache],
            now_ms=now_ms,
            retention_ms=retention_ms,
            coordinator=coordinator,
            forecast_horizon_ms=forecast_horizon_ms,
        )
        return plan_rows(plan, cache.partition if cache.partition is not None else -1)

    return emit


def expiration_tables(
    spark: SparkSession,
    input_path: str,
    *,
    now_ms: int,
    retention_ms: int = DEFAULT_RETENTION_MS,
    coordinator: str = KIP848,
    forecast_horizon_ms: int = 24 * 60 * 60 * 1000,
    options: ReloadOptions = DEFAULT_OPTIONS,
    partitions: list[int] | None = None,
) -> tuple[dict[str, DataFrame], DataFrame]:
    """``({table: DataFrame}, blobs)`` of the expiration plan; persist ``blobs`` for several tables."""
    listing = list_log_dir(spark, input_path, partitions=partitions)
    emit = expiration_emitter(
        now_ms=now_ms,
        retention_ms=retention_ms,
        coordinator=coordinator,
        forecast_horizon_ms=forecast_horizon_ms,
    )
    return reload_tables(spark, listing, options, emit=emit, schemas=EXPIRE_SCHEMAS)


def run(args: argparse.Namespace) -> int:
    spark = session_from_args(args, "expire")
    started = time.perf_counter()
    # The run model: --now-ms, else the input's declared clock (a simulated or copied snapshot); the
    # retention, coordinator and window from the flags, OFFSETOPS_*, the config file, the broker.
    now_ms = args.run.now_ms
    try:
        tables, blobs = expiration_tables(
            spark,
            args.input,
            now_ms=now_ms,
            retention_ms=args.run.retention_ms,
            coordinator=args.coordinator,
            forecast_horizon_ms=int(args.forecast_hours * 3_600_000),
            options=options_from_args(args),
            partitions=args.partition,
        )
    except InputPathError as exc:
        print(f"offsetops pipeline expire: {exc}", file=sys.stderr)
        return 2
    blobs.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = blob_counts(blobs, list(tables))
        write_tables(tables, args.output, counts, partitioned=frozenset())
    finally:
        blobs.unpersist()
    result = ReloadResult(args.output, counts, elapsed_s=time.perf_counter() - started)
    print(
        f"expire (now_ms={now_ms}): {', '.join(f'{t}={n}' for t, n in counts.items())} -> "
        f"{result.output} in {result.elapsed_s:.1f} s"
    )
    return 0


if __name__ == "__main__":
    submit_main("expire")
