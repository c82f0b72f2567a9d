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
from offsetops.assets.published_tables import (
    empty_table,
    publish_rows_on_driver,
    publish_tables,
    publishes_on_driver,
)
from offsetops.assets.reload_resume import resume_summary, resumed_rows, resumed_to_staging
from offsetops.assets.reload_scan import cleaner_scan_request
from offsetops.assets.resources import OffsetsSourceResource, SparkResource, StateResource
from offsetops.coordinator_core.cleaner.model import format_bytes
from offsetops.coordinator_core.escape import for_log
from offsetops.coordinator_core.timefmt import iso_utc
from offsetops.coordinator_core.untrusted import read_regular_file

if TYPE_CHECKING:
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
    if _resumes_on_driver(source):
        return resumed_to_staging(spark, source, partitions, str(run["resume_state_dir"]), scan)
    present = _present_partitions(spark, source, partitions)
    if not present:
        return {t: empty_table(spark, t) for t in TABLE_SCHEMAS}, {"read_by": "spark", "bytes_read": {}}
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


def _resumes_on_driver(source: OffsetsSourceResource) -> bool:
    """Whether the run reads on the driver from the resume state (a log dir on this machine)."""
    return (
        bool(source.settings()["resume_state_dir"])
        and not source.is_live
        and "://" not in str(source.log_dir)
    )


def _publishes_from_driver(source: OffsetsSourceResource, state: StateResource) -> bool:
    """Whether the run's tables are built on the driver (:func:`_resumes_on_driver`) and published there
    (the tables are on a local disk): then the step starts no Spark session."""
    return _resumes_on_driver(source) and publishes_on_driver(state)


def _reload_on_driver(
    context: AssetExecutionContext, source: OffsetsSourceResource, state: StateResource, partitions: list[int]
) -> tuple[dict[int, dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """The resumed read's rows published with pyarrow (unchanged partitions left alone), and their facts
    and summary computed from the same rows: the figures the Spark path gives, without Spark."""
    from offsetops.pipelines.cache_facts import partition_facts_from_rows, summarise
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    scan = cleaner_scan_request(context, source, state)
    rows, read = resumed_rows(source, partitions, str(source.settings()["resume_state_dir"]), scan)
    outcome = publish_rows_on_driver(state, rows, partitions)
    for warning in outcome.warnings:
        context.log.warning(for_log(warning))
    facts = partition_facts_from_rows(outcome.rows)
    read.update(
        published_by="driver",
        table_partitions_written=sum(outcome.written.values()),
        table_partitions_unchanged=sum(outcome.unchanged.values()),
        publish_warnings=list(outcome.warnings),
    )
    return facts, summarise(TABLE_SCHEMAS, facts), read


def _reload_with_spark(
    context: AssetExecutionContext,
    source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
    partitions: list[int],
) -> tuple[dict[int, dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """The reload through Spark (the job from files, live fetches, or a resumed read published to a remote
    location), its facts and summary from Spark jobs, and the tables published by Spark."""
    from offsetops.pipelines.cache_facts import partition_facts, summarise
    from offsetops.pipelines.source import delete_path

    session = spark.get_session()
    # Staging sits next to the tables, so cluster executors can reach it (s3a://, hdfs://, a volume).
    staging = f"{state.tables_location}/_staging/reload-{context.run.run_id[:8]}-{uuid.uuid4().hex[:6]}"
    try:
        scan = cleaner_scan_request(context, source, state)
        tables, read = _reload_to_staging(session, source, partitions, staging, scan)
        facts = partition_facts(tables)
        summary = summarise(tables, facts)
        publish_tables(session, tables, state, partitions)
    finally:
        delete_path(session, staging)
    read["published_by"] = "spark"
    return facts, summary, read


def _publish_metadata(read: dict[str, Any]) -> dict[str, Any]:
    """Who wrote the tables; from the driver, how many table partitions it wrote and left unchanged."""
    meta: dict[str, Any] = {"published_by": read["published_by"]}
    for key in ("table_partitions_written", "table_partitions_unchanged"):
        if key in read:
            meta[key] = MetadataValue.int(int(read[key]))
    return meta


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
    """Reload this run's partitions and publish them into the canonical tables: through Spark, or, for a
    resumed read into local tables, from the driver's rows without starting Spark."""
    from offsetops.coordinator_core.kafka_client import KafkaClientError
    from offsetops.pipelines.source import InputPathError

    partitions = run_partitions(context)
    state.ensure()
    started = time.perf_counter()
    try:
        if _publishes_from_driver(offsets_source, state):
            by_partition, summary, read = _reload_on_driver(context, offsets_source, state, partitions)
        else:
            by_partition, summary, read = _reload_with_spark(
                context, offsets_source, spark, state, partitions
            )
    except InputPathError as exc:
        raise Failure(f"reload of {offsets_source.describe()} failed: {exc}") from exc
    except KafkaClientError as exc:
        raise Failure(f"reload failed: {exc}") from None
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
            **_publish_metadata(read),
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
