"""The canonical reload tables: published by ``coordinator_cache`` (through Spark, or from the driver's rows
with :mod:`offsetops.pipelines.driver_publish`), and read back by the assets after it.

A run's ``expiration_plan`` and ``offsets_metrics`` read the same tables ``coordinator_cache`` just
wrote: the rows it published (or the first of them read) are kept with the tables' files, and handed
out again while not one of those files changed, without a Spark job.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import Failure
from offsetops.assets.resources import StateResource

if TYPE_CHECKING:
    from offsetops.coordinator_core.cache import CoordinatorCache
    from offsetops.pipelines.driver_publish import PublishOutcome
    from pyspark.sql import DataFrame, SparkSession

#: How :func:`published_caches` got the rows: read through Spark, or kept from the publish or last read.
READ_BY_SPARK = "spark"
READ_FROM_MEMORY = "memory (the rows this run published or read; the files unchanged since)"


def empty_table(spark: "SparkSession", table: str) -> "DataFrame":
    """A reload table without rows, with its schema."""
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    return spark.createDataFrame([], TABLE_SCHEMAS[table])


def publish_tables(
    spark: "SparkSession", tables: dict[str, "DataFrame"], state: StateResource, partitions: list[int]
) -> None:
    """Replace ``partitions`` of every canonical table with ``tables`` (other partitions are kept).

    The tables are independent, so each is replaced from a thread of its own: Spark runs the writes side
    by side and their fixed costs overlap. Every one is waited for; the first failure is raised after
    the others have finished."""
    from concurrent.futures import ThreadPoolExecutor

    from offsetops.pipelines.driver_publish import forget_digests
    from offsetops.pipelines.source import is_local, local_file

    def replace(name: str, df: "DataFrame") -> None:
        location = state.table_location(name)
        if is_local(location):
            forget_digests(local_file(location))  # Spark's files are not the ones the digests name
        _delete_partition_dirs(spark, location, partitions)
        df.write.mode("append").partitionBy("offsets_partition").parquet(location)

    with ThreadPoolExecutor(max_workers=max(len(tables), 1), thread_name_prefix="offsetops-publish") as pool:
        futures = [pool.submit(replace, name, df) for name, df in tables.items()]
    for future in futures:
        future.result()


def publishes_on_driver(state: StateResource) -> bool:
    """Whether rows built on the driver can be published without Spark: the tables are on a local disk."""
    from offsetops.pipelines.source import is_local

    return is_local(state.tables_location)


def publish_rows_on_driver(
    state: StateResource, rows: dict[str, list[Any]], partitions: list[int]
) -> "PublishOutcome":
    """Replace ``partitions`` of every canonical table with ``rows`` (tuples in schema order) written on
    the driver (:func:`offsetops.pipelines.driver_publish.publish_rows`: Spark's layout and footer, atomic
    per partition, unchanged partitions left alone); the rows are kept for the readers of this run."""
    from offsetops.pipelines.driver_publish import publish_rows
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.source import local_file

    locations = {name: local_file(state.table_location(name)) for name in TABLE_SCHEMAS}
    outcome = publish_rows(locations, rows, partitions)
    _remember(state, partitions, outcome.rows)
    return outcome


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
            df = empty_table(spark, name)
        if partitions is not None:
            df = df.where(F.col("offsets_partition").isin(partitions))
        out[name] = df
    return out


@dataclass(frozen=True)
class PublishedTables:
    """The caches rebuilt from the published tables, their rows, and how the rows were got."""

    caches: list["CoordinatorCache"]
    rows: dict[str, list[Any]]
    read_by: str


def published_caches(
    session: Callable[[], "SparkSession"], state: StateResource, partitions: list[int], num_partitions: int
) -> PublishedTables:
    """The caches ``coordinator_cache`` published for ``partitions`` (an empty one for a partition
    without rows), rebuilt from the tables rather than by reading the log again; and the rows.
    ``session`` is only called (starting Spark) when the tables must be read through it."""
    from offsetops.pipelines.tables import caches_from_rows

    files = _local_files(state)
    rows = _kept(state, partitions, files)
    if rows is not None:
        read_by = READ_FROM_MEMORY
    else:
        spark = session()
        _require_tables(spark, state)
        rows = {name: df.collect() for name, df in read_cache_tables(spark, state, partitions).items()}
        _remember(state, partitions, rows, files)
        read_by = READ_BY_SPARK
    caches = caches_from_rows(rows, num_partitions=num_partitions, partitions=partitions)
    return PublishedTables(caches, rows, read_by)


def kept_rows(state: StateResource, partitions: list[int]) -> dict[str, list[Any]] | None:
    """The rows of every table for ``partitions`` as this run published or last read them (tuples in
    schema order), while not one of the tables' files changed since; None otherwise. No Spark."""
    return _kept(state, partitions, _local_files(state))


def _kept(
    state: StateResource, partitions: list[int], files: tuple[tuple[str, int, int], ...] | None
) -> dict[str, list[Any]] | None:
    """The kept rows (a copy of each table's list) when they stand for ``files``, the tables' files now."""
    key = (state.tables_location, tuple(partitions), files)
    if files is None or _LAST_READ.get("key") != key:
        return None
    return {name: list(got) for name, got in _LAST_READ["rows"].items()}


def _require_tables(spark: "SparkSession", state: StateResource) -> None:
    from offsetops.pipelines.source import path_exists

    if not path_exists(spark, state.table_location("load_stats")):
        raise Failure(
            f"no reload tables under {state.table_location('load_stats')}: materialize coordinator_cache "
            "for these partitions first"
        )


#: The rows :func:`published_caches` hands out without reading, and the tables' files they stand for
#: (the tables location, the partitions and every file with its size and modification time): the rows
#: ``coordinator_cache`` published from the driver, or the rows the expiration plan read, which the
#: metrics of the same run get from here instead of a Spark read.
_LAST_READ: dict[str, Any] = {}


def _remember(
    state: StateResource,
    partitions: list[int],
    rows: dict[str, list[Any]],
    files: tuple[tuple[str, int, int], ...] | None = None,
) -> None:
    """Keep ``rows`` as the tables' content for ``partitions`` while their files stay as they are now
    (``files``: as they were listed before the rows were read)."""
    files = _local_files(state) if files is None else files
    if files is None:
        _LAST_READ.clear()
        return
    key = (state.tables_location, tuple(partitions), files)
    _LAST_READ.update(key=key, rows={name: list(got) for name, got in rows.items()})


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
