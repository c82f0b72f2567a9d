"""Reload domain: the raw segment inventory, and the coordinator cache rebuilt by the Spark reload job.

Assets hand over through files, not IO managers: the reload tables are Parquet under
``StateResource.tables_location`` (every table partitioned by ``offsets_partition``), so each run
replaces exactly the offsets partitions it covers and Spark, GX and people read the same files.
"""

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    Definitions,
    Failure,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    asset,
)
from offsetops.assets.metadata import record_bytes_read, settings_metadata, write_json
from offsetops.assets.partitions import OFFSETS_PARTITIONS, run_partitions, scope_metadata
from offsetops.assets.reload_resume import resume_summary, resumed_to_staging
from offsetops.assets.reload_scan import cleaner_scan_request
from offsetops.assets.resources import OffsetsSourceResource, SparkResource, StateResource
from offsetops.coordinator_core.cleaner.model import format_bytes
from offsetops.coordinator_core.errors import NOTICE_KINDS
from offsetops.coordinator_core.escape import for_log
from offsetops.coordinator_core.timefmt import iso_utc
from offsetops.coordinator_core.untrusted import read_regular_file

if TYPE_CHECKING:
    from offsetops.coordinator_core.cache import CoordinatorCache
    from offsetops.pipelines.reload import ReloadOptions
    from offsetops.pipelines.reload_scan import CleanerScanRequest
    from pyspark.sql import DataFrame, SparkSession

GROUP = "reload"
INVENTORY_FILE = "segments.json"
RELOAD_SUMMARY_FILE = "reload.json"


# -- raw segments inventory ------------------------------------------------------------------------


def _inventory_files(source: OffsetsSourceResource, partitions: list[int]) -> dict[int, dict[str, Any]]:
    logdir = source.open_log_dir()
    by_number = {pd.partition: pd for pd in logdir.partitions}
    out: dict[int, dict[str, Any]] = {}
    for p in partitions:
        pd = by_number.get(p)
        if pd is None or not pd.segments:
            out[p] = {"present": False, "segments": 0, "bytes": 0}
            continue
        segs = pd.segments
        out[p] = {
            "present": True,
            "path": str(pd.path),
            "segments": len(segs),
            "bytes": pd.size_bytes,
            "log_start_offset": segs[0].base_offset,
            "active_segment_base_offset": segs[-1].base_offset,
            "oldest_segment_mtime_ms": min(s.mtime_ms for s in segs),
            "newest_segment_mtime_ms": max(s.mtime_ms for s in segs),
            "cleaner_checkpoint": logdir.cleaner_checkpoint.get((pd.topic, p)),
        }
    return out


def _inventory_uri(spark: "SparkSession", log_dir: str, partitions: list[int]) -> dict[int, dict[str, Any]]:
    """The same inventory for a Hadoop URI (``s3a://``, ``hdfs://``), listed through Spark."""
    from offsetops.pipelines.source import list_log_dir

    listing = list_log_dir(spark, log_dir)
    out: dict[int, dict[str, Any]] = {p: {"present": False, "segments": 0, "bytes": 0} for p in partitions}
    for s in listing.segments:
        if s.partition not in out:
            continue
        entry = out[s.partition]
        if not entry["present"]:
            entry.update(
                present=True,
                log_start_offset=s.base_offset,
                oldest_segment_mtime_ms=s.mtime_ms,
                newest_segment_mtime_ms=s.mtime_ms,
            )
        entry["segments"] += 1
        entry["bytes"] += s.size
        entry["active_segment_base_offset"] = s.base_offset
        entry["oldest_segment_mtime_ms"] = min(entry["oldest_segment_mtime_ms"], s.mtime_ms)
        entry["newest_segment_mtime_ms"] = max(entry["newest_segment_mtime_ms"], s.mtime_ms)
    return out


def _inventory_live(source: OffsetsSourceResource, partitions: list[int]) -> dict[int, dict[str, Any]]:
    with source.source().live() as live:
        present = [p for p in partitions if p in set(live.partitions())]
        start = live.start_offsets(present) if present else {}
        end = live.end_offsets(present) if present else {}
    return {
        p: (
            {
                "present": True,
                "log_start_offset": start[p],
                "log_end_offset": end[p],
                "records_span": end[p] - start[p],
            }
            if p in start
            else {"present": False}
        )
        for p in partitions
    }


def segment_inventory(
    source: OffsetsSourceResource, partitions: list[int], spark: SparkResource | None = None
) -> dict[int, dict[str, Any]]:
    """Per partition: present or not, segment count, bytes, offsets and ages (live: offset span)."""
    if source.log_dir and "://" in source.log_dir:
        if spark is None:
            raise ValueError("a URI log dir is listed through Spark; pass spark")
        return _inventory_uri(spark.get_session(), source.log_dir, partitions)
    if source.log_dir:
        return _inventory_files(source, partitions)
    return _inventory_live(source, partitions)


@asset(
    group_name=GROUP,
    partitions_def=OFFSETS_PARTITIONS,
    backfill_policy=BackfillPolicy.single_run(),
    kinds={"kafka", "python"},
    description="Segment files (or, live, the offset range) of each __consumer_offsets partition.",
)
def raw_segments(
    context: AssetExecutionContext,
    offsets_source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
) -> MaterializeResult:
    """Inventory the partitions of this run; a partition absent from the source is listed as absent."""
    from offsetops.coordinator_core.kafka_client import KafkaClientError
    from offsetops.coordinator_core.sources.logdir import LogDirError

    partitions = run_partitions(context)
    state.ensure()
    try:
        inventory = segment_inventory(offsets_source, partitions, spark)
    except (LogDirError, KafkaClientError) as exc:
        # One line naming the cluster and the reason (never a secret), not a traceback.
        raise Failure(str(exc)) from None
    path = state.reports_path / INVENTORY_FILE
    merged = _merge_partitions(path, inventory, source=offsets_source.describe())
    write_json(path, merged)
    present = [p for p in partitions if inventory[p].get("present")]
    for p in partitions:
        context.add_asset_metadata(
            {**scope_metadata(p), **inventory_metadata(inventory[p])}, partition_key=str(p)
        )
    context.log.info(
        f"{len(present)} of {len(partitions)} partitions present in {for_log(offsets_source.describe())}"
    )
    return MaterializeResult(
        metadata={
            "source": offsets_source.describe(),
            "inventory": MetadataValue.path(str(path)),
            **settings_metadata(offsets_source.settings()),
        }
    )


def inventory_metadata(entry: dict[str, Any]) -> dict[str, Any]:
    """One partition's inventory: the same keys whether present or not (numbers as numbers)."""
    meta: dict[str, Any] = {
        "present": bool(entry.get("present")),
        "segments": MetadataValue.int(int(entry.get("segments", 0))),
        "bytes": MetadataValue.int(int(entry.get("bytes", 0))),
        "size": format_bytes(int(entry.get("bytes", 0))),
    }
    for key in ("log_start_offset", "log_end_offset", "active_segment_base_offset", "cleaner_checkpoint"):
        if entry.get(key) is not None:
            meta[key] = MetadataValue.int(int(entry[key]))
    for key in ("oldest_segment_mtime_ms", "newest_segment_mtime_ms"):
        if entry.get(key) is not None:
            meta[key.removesuffix("_ms")] = iso_utc(int(entry[key]))
    if entry.get("path"):
        meta["path"] = MetadataValue.path(str(entry["path"]))
    return meta


def _merge_partitions(path: Path, update: dict[int, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The report at ``path`` with the entries of ``update``'s partitions replaced."""
    import json

    doc: dict[str, Any] = {"partitions": {}}
    if path.exists():
        try:
            doc = json.loads(read_regular_file(path, kind="report"))
        except ValueError:
            doc = {"partitions": {}}
    doc.setdefault("partitions", {})
    for p, entry in update.items():
        doc["partitions"][str(p)] = entry
    doc.update(extra, updated_at_ms=int(time.time() * 1000))
    doc["partitions"] = dict(sorted(doc["partitions"].items(), key=lambda kv: int(kv[0])))
    return doc


# -- the reloaded cache tables ---------------------------------------------------------------------


def _empty(spark: "SparkSession", table: str) -> "DataFrame":
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    return spark.createDataFrame([], TABLE_SCHEMAS[table])


def _present_partitions(
    spark: "SparkSession", source: OffsetsSourceResource, partitions: list[int]
) -> list[int]:
    from offsetops.pipelines.source import InputPathError, list_log_dir, path_exists

    log_dir = str(source.log_dir)
    if not path_exists(spark, log_dir):
        raise Failure(f"OffsetsSourceResource.log_dir {log_dir} does not exist")
    try:
        listing = list_log_dir(spark, log_dir)
    except InputPathError:
        return []  # a log dir without any segment: every partition is empty
    wanted = set(partitions)
    return [p for p in listing.partitions if p in wanted]


def _reload_to_staging(
    spark: "SparkSession",
    source: OffsetsSourceResource,
    partitions: list[int],
    staging: str,
    scan: "CleanerScanRequest | None" = None,
) -> tuple[dict[str, "DataFrame"], dict[str, Any]]:
    """The reload tables of ``partitions`` in ``staging``: the Spark job from files, or live fetches
    (in this process, or on the executors: ``OffsetsSourceResource.live_reload``); and how it was read.
    ``scan``: the cleaner audit's record scan runs in the same pass (``assets/reload_scan.py``)."""
    from offsetops.pipelines.reload import ReloadOptions, read_tables, run_reload
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    run = source.settings()
    options = ReloadOptions(
        num_partitions=run["num_partitions"],
        semantics=run["semantics"],
        max_batch_bytes=run["max_batch_bytes"],
    )
    if source.is_live:
        return _live_to_staging(spark, source, partitions, staging, options)
    if run["resume_state_dir"] and "://" not in str(source.log_dir):
        return resumed_to_staging(spark, source, partitions, str(run["resume_state_dir"]), scan)
    present = _present_partitions(spark, source, partitions)
    if not present:
        return {t: _empty(spark, t) for t in TABLE_SCHEMAS}, {"read_by": "spark", "bytes_read": {}}
    result = run_reload(spark, str(source.log_dir), staging, options, partitions=present, scan=scan)
    return read_tables(spark, staging), {"read_by": "spark", "bytes_read": result.bytes_read}


def _live_to_staging(
    spark: "SparkSession",
    source: OffsetsSourceResource,
    partitions: list[int],
    staging: str,
    options: "ReloadOptions",
) -> tuple[dict[str, "DataFrame"], dict[str, Any]]:
    from offsetops.coordinator_core.sources.live import plan_fetch_ranges
    from offsetops.coordinator_core.sources.ranges import fetch_on_executors
    from offsetops.pipelines.reload import read_tables
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.tables import all_cache_rows

    ranges = []
    if source.live_reload != "driver":
        with source.source().live() as live:
            present = set(live.partitions())
            # Folds merge under the Java coordinator's rules only: Scala replay reads whole partitions.
            cut = source.live_range_offsets if options.semantics == "java" else 1 << 62
            ranges = plan_fetch_ranges(live, [p for p in partitions if p in present], max_offsets=cut)
    master = spark.sparkContext.master or "local[*]"  # always set on a running context
    if not ranges or not fetch_on_executors(
        source.live_reload, master, ranges, source.live_executors_min_offsets
    ):
        rows = all_cache_rows(source.load_caches(partitions))
        tables = {t: spark.createDataFrame(rows[t], schema) for t, schema in TABLE_SCHEMAS.items()}
        return tables, {"read_by": "driver"}
    from offsetops.pipelines.live import run_live_reload

    run_live_reload(spark, source.kafka_config(), staging, options, topic=source.topic, ranges=ranges)
    tables = read_tables(spark, staging)
    # Partitions the topic lacks are empty caches, as the driver's read gives them.
    fetched = {r.partition for r in ranges}
    absent = all_cache_rows([source.empty_cache(p) for p in partitions if p not in fetched])
    tables = {
        t: df.unionByName(spark.createDataFrame(absent[t], TABLE_SCHEMAS[t])) if absent[t] else df
        for t, df in tables.items()
    }
    return tables, {"read_by": "executors", "fetch_ranges": len(ranges)}


def publish_tables(
    spark: "SparkSession", tables: dict[str, "DataFrame"], state: StateResource, partitions: list[int]
) -> None:
    """Replace ``partitions`` of every canonical table with ``tables`` (other partitions are kept).

    The tables are independent, so each is replaced from a thread of its own: Spark runs the writes side
    by side and their fixed costs overlap. Every one is waited for; the first failure is raised after
    the others have finished."""
    from concurrent.futures import ThreadPoolExecutor

    def replace(name: str, df: "DataFrame") -> None:
        location = state.table_location(name)
        _delete_partition_dirs(spark, location, partitions)
        df.write.mode("append").partitionBy("offsets_partition").parquet(location)

    with ThreadPoolExecutor(max_workers=max(len(tables), 1), thread_name_prefix="offsetops-publish") as pool:
        futures = [pool.submit(replace, name, df) for name, df in tables.items()]
    for future in futures:
        future.result()


def _delete_partition_dirs(spark: "SparkSession", location: str, partitions: list[int]) -> None:
    """Delete the ``offsets_partition=N`` dirs of ``partitions`` under ``location``: on a local disk
    directly; elsewhere one listing through its Hadoop FileSystem, then only the dirs that exist (not
    one round trip to the JVM per partition)."""
    import shutil

    from offsetops.pipelines.source import hadoop_fs, is_local, local_file

    if is_local(location):
        for p in partitions:
            old = Path(local_file(location)) / f"offsets_partition={p}"
            if old.exists():
                shutil.rmtree(old)
        return
    root, fs = hadoop_fs(spark, location)
    if not fs.exists(root):
        return
    wanted = {f"offsets_partition={p}" for p in partitions}
    for status in fs.listStatus(root):
        path = status.getPath()
        if path.getName() in wanted:
            fs.delete(path, True)


def read_cache_tables(
    spark: "SparkSession", state: StateResource, partitions: list[int] | None = None
) -> dict[str, "DataFrame"]:
    """The canonical reload tables (optionally only some offsets partitions), with their schemas."""
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.source import path_exists
    from pyspark.sql import functions as F

    out = {}
    for name, schema in TABLE_SCHEMAS.items():
        location = state.table_location(name)
        if path_exists(spark, location):
            df = spark.read.schema(schema).parquet(location).select(*schema.fieldNames())
        else:
            df = _empty(spark, name)
        if partitions is not None:
            df = df.where(F.col("offsets_partition").isin(partitions))
        out[name] = df
    return out


def published_caches(
    spark: "SparkSession", state: StateResource, partitions: list[int], num_partitions: int
) -> tuple[list["CoordinatorCache"], dict[str, list[Any]]]:
    """The caches ``coordinator_cache`` published for ``partitions`` (an empty one for a partition
    without rows), rebuilt from the tables rather than by reading the log again; and the rows."""
    from offsetops.pipelines.source import path_exists
    from offsetops.pipelines.tables import caches_from_rows

    if not path_exists(spark, state.table_location("load_stats")):
        raise Failure(
            f"no reload tables under {state.table_location('load_stats')}: materialize coordinator_cache "
            "for these partitions first"
        )
    key = (state.tables_location, tuple(partitions), _local_files(state))
    if key[2] is not None and _LAST_READ.get("key") == key:
        rows = {name: list(got) for name, got in _LAST_READ["rows"].items()}
    else:
        rows = {name: df.collect() for name, df in read_cache_tables(spark, state, partitions).items()}
        _LAST_READ.update(key=key, rows={name: list(got) for name, got in rows.items()})
    return caches_from_rows(rows, num_partitions=num_partitions, partitions=partitions), rows


#: The rows :func:`published_caches` read last and what they were read from (the tables location, the
#: partitions and every file with its size and modification time): the expiration plan and the metrics
#: of one run read the same tables, which the second gets from here instead of a Spark read.
_LAST_READ: dict[str, Any] = {}


def _local_files(state: StateResource) -> tuple[tuple[str, int, int], ...] | None:
    """Every file of the reload tables with its size and modification time, when they are on a local
    disk (each write adds files under new names); None elsewhere (never taken as unchanged)."""
    import os

    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.source import is_local, local_file

    if not is_local(state.tables_location):
        return None
    out = []
    for name in TABLE_SCHEMAS:
        for folder, _dirs, files in os.walk(local_file(state.table_location(name))):
            for file in files:
                st = os.stat(os.path.join(folder, file), follow_symlinks=False)
                out.append((os.path.join(folder, file), st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


def _problems() -> Any:
    """How many problems a ``decode_errors`` row stands for (its count; 1 in tables without one)."""
    from pyspark.sql import functions as F

    return F.coalesce(F.col("count"), F.lit(1))


def _summarise(
    tables: dict[str, "DataFrame"], by_partition: dict[int, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The run's totals: rows per table (decode errors as problems, notices left out), load statistics,
    group states and types, and problems by kind; added up from :func:`_per_partition`'s facts."""
    facts = _per_partition(tables) if by_partition is None else by_partition
    counts = {name: _total(facts, name) for name in tables}
    counts["decode_errors"] = _total(facts, "errors")
    counts["load_stats"] = sum(1 for f in facts.values() if "segments" in f)
    summary: dict[str, Any] = {"counts": counts}
    summary.update({c: _total(facts, c) for c in _LOAD_STATS})
    for key in ("group_states", "group_types", "error_kinds"):
        merged: dict[str, int] = {}
        for f in facts.values():
            for name, n in f.get(key, {}).items():
                merged[name] = merged.get(name, 0) + n
        summary[key] = merged
    return summary


def _total(facts: dict[int, dict[str, Any]], key: str) -> int:
    return sum(int(f.get(key, 0)) for f in facts.values())


def _offsets_table_schema() -> TableSchema:
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    return TableSchema(
        columns=[
            TableColumn(f.name, f.dataType.simpleString(), description=f.metadata.get("comment"))
            for f in TABLE_SCHEMAS["offsets"].fields
        ]
    )


@asset(
    group_name=GROUP,
    partitions_def=OFFSETS_PARTITIONS,
    backfill_policy=BackfillPolicy.single_run(),
    deps=[raw_segments],
    kinds={"spark", "parquet"},
    pool="offsetops_tables",
    description="The group coordinator's cache after doLoadGroupsAndOffsets, as Parquet tables "
    "(offsets, pending_offsets, groups, members, decode_errors, load_stats).",
)
def coordinator_cache(
    context: AssetExecutionContext,
    offsets_source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
) -> MaterializeResult:
    """Run the Spark reload for this run's partitions and publish them into the canonical tables."""
    from offsetops.coordinator_core.kafka_client import KafkaClientError
    from offsetops.pipelines.source import InputPathError, delete_path

    partitions = run_partitions(context)
    state.ensure()
    session = spark.get_session()
    # Staging sits next to the tables, so cluster executors can reach it (s3a://, hdfs://, a volume).
    staging = f"{state.tables_location}/_staging/reload-{context.run.run_id[:8]}-{uuid.uuid4().hex[:6]}"
    started = time.perf_counter()
    try:
        scan = cleaner_scan_request(context, offsets_source, state)
        tables, read = _reload_to_staging(session, offsets_source, partitions, staging, scan)
        by_partition = _per_partition(tables)
        summary = _summarise(tables, by_partition)
        publish_tables(session, tables, state, partitions)
    except InputPathError as exc:
        raise Failure(f"reload of {offsets_source.describe()} failed: {exc}") from exc
    except KafkaClientError as exc:
        raise Failure(f"reload failed: {exc}") from None
    finally:
        delete_path(session, staging)
    elapsed = time.perf_counter() - started
    counts = summary["counts"]
    # From files: each segment file the job read; live: the batch bytes fetched (the load's own count).
    fetched = read.pop("bytes_read", None)
    resume = read.pop("resume", {})
    bytes_read = {
        p: int(fetched.get(p, 0) if fetched is not None else by_partition.get(p, {}).get("bytes", 0))
        for p in partitions
    }
    report = {
        "partitions": partitions,
        "source": offsets_source.describe(),
        "tables": state.tables_location,
        "elapsed_s": round(elapsed, 2),
        **read,
        **summary,
        "bytes_read": sum(bytes_read.values()),
        **resume_summary(resume),
    }
    path = write_json(state.reports_path / RELOAD_SUMMARY_FILE, report)
    read_meta = record_bytes_read(state.reports_path, "coordinator_cache", context.run.run_id, bytes_read)
    for p in partitions:
        context.add_asset_metadata(
            {
                **scope_metadata(p),
                **cache_metadata(by_partition.get(p, {})),
                **_read_metadata(bytes_read[p]),
                **resume.get(p, {}),
            },
            partition_key=str(p),
        )
    context.log.info(
        f"reloaded {len(partitions)} partitions: {counts['groups']} groups, {counts['offsets']} offsets, "
        f"{counts['decode_errors']} decode errors in {elapsed:.1f}s"
    )
    return MaterializeResult(
        metadata={
            "read_by": read["read_by"],
            **read_meta,
            **resume_summary(resume),
            "tables": MetadataValue.path(state.tables_location),
            "summary": MetadataValue.path(str(path)),
            "dagster/column_schema": _offsets_table_schema(),
            **settings_metadata(offsets_source.settings()),
        }
    )


_CACHE_FACTS = (
    "groups",
    "offsets",
    "pending_offsets",
    "members",
    "errors",
    "segments",
    "batches",
    "records",
    "bytes",
    "tombstones",
)


#: load_stats columns summed into the run's figures
_LOAD_STATS = ("segments", "batches", "records", "bytes", "tombstones")
#: tables whose rows are only counted per partition
_COUNTED = ("offsets", "pending_offsets", "members", "group_assignments")


def _per_partition(tables: dict[str, "DataFrame"]) -> dict[int, dict[str, Any]]:
    """Row counts, decode errors (problems, notices left out, as ``count_errors`` counts them, and by
    kind), group states and types and load statistics of each offsets partition in ``tables``: four
    small Spark jobs, one per kind of fact."""
    from offsetops.pipelines.tables import row_counts
    from pyspark.sql import functions as F

    out: dict[int, dict[str, Any]] = {}

    def put(p: int, key: str, value: Any) -> None:
        out.setdefault(int(p), {})[key] = value

    def bump(p: int, key: str, name: str, n: int) -> None:
        counts = out.setdefault(int(p), {}).setdefault(key, {})
        counts[name] = counts.get(name, 0) + n

    counted = row_counts({t: tables[t] for t in _COUNTED if t in tables}, "offsets_partition")
    for (table, p), n in counted.items():
        put(p, table, n)
    for row in tables["groups"].groupBy("offsets_partition", "state", "group_type").count().collect():
        p, n = row["offsets_partition"], int(row["count"])
        put(p, "groups", out.get(int(p), {}).get("groups", 0) + n)
        bump(p, "group_states", row["state"], n)
        bump(p, "group_types", row["group_type"], n)
    errors = tables["decode_errors"].groupBy("offsets_partition", "kind").agg(F.sum(_problems()).alias("n"))
    for row in errors.collect():
        p, n = row["offsets_partition"], int(row["n"])
        bump(p, "error_kinds", row["kind"], n)
        if row["kind"] not in NOTICE_KINDS:
            put(p, "errors", out.get(int(p), {}).get("errors", 0) + n)
    for row in tables["load_stats"].select("offsets_partition", *_LOAD_STATS).collect():
        for c in _LOAD_STATS:
            put(row["offsets_partition"], c, int(row[c] or 0))
    return out


def _read_metadata(n: int) -> dict[str, Any]:
    """The segment bytes one partition's materialization read, with a human twin."""
    return {"bytes_read": MetadataValue.int(n), "read": format_bytes(n)}


def cache_metadata(facts: dict[str, Any]) -> dict[str, Any]:
    """One partition's rebuilt cache: counts (0 when absent), bytes with a human twin, group states."""
    meta: dict[str, Any] = {key: MetadataValue.int(int(facts.get(key, 0))) for key in _CACHE_FACTS}
    meta["size"] = format_bytes(int(facts.get("bytes", 0)))
    meta["dagster/row_count"] = MetadataValue.int(int(facts.get("offsets", 0)))
    states = facts.get("group_states") or {}
    meta["group_states"] = (
        ", ".join(f"{n} {s}" for s, n in sorted(states.items(), key=lambda kv: -kv[1])) or "none"
    )
    return meta


defs = Definitions(assets=[raw_segments, coordinator_cache])
