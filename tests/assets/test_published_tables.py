"""The canonical reload tables: published by Spark or from the driver's rows (the same tables for every
reader), and handed to the assets after ``coordinator_cache`` without reading them back through Spark."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from offsetops.coordinator_core.cache import CoordinatorCache, LoadStats

from tests.assets.conftest import NUM_PARTITIONS
from tests.support.driver_rows import PARTITIONS, all_kinds_rows  # noqa: F401 (fixture)
from tests.support.error_storm import error_storm_cache


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.skip("no Java runtime: Spark tests need one")
    from offsetops.pipelines.session import build_session

    yield build_session("local[1]", app_name="offsetops-tests", quiet=True, ship_code=False)


def _spark_publish(spark: Any, state: Any, rows: dict[str, list[Any]], partitions: list[int]) -> None:
    from offsetops.assets.published_tables import publish_tables
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    tables = {t: spark.createDataFrame(rows[t], schema) for t, schema in TABLE_SCHEMAS.items()}
    publish_tables(spark, tables, state, partitions)


def _read_back(spark: Any, location: str) -> tuple[Any, list[Any]] | None:
    """What any Spark reader gets from a table dir (no schema given): its schema and rows; None when Spark
    wrote no data file (no partition had rows)."""
    from offsetops.pipelines.tables import comparable

    if not any(Path(location).glob("offsets_partition=*")):
        return None
    df = spark.read.parquet(location)
    return df.schema, comparable(df.collect(), df.schema)


def test_driver_published_tables_read_back_as_spark_published_ones(spark, all_kinds_rows, tmp_path) -> None:  # noqa: F811
    """Every table, its schema with the column comments (from the footer), its partition dirs and rows."""
    from offsetops.assets.published_tables import publish_rows_on_driver, read_cache_tables
    from offsetops.assets.resources import StateResource
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.tables import comparable

    partitions = list(range(PARTITIONS))
    by_spark, by_driver = (
        StateResource(output_dir=str(tmp_path / "s")),
        StateResource(output_dir=str(tmp_path / "d")),
    )
    _spark_publish(spark, by_spark, all_kinds_rows, partitions)
    publish_rows_on_driver(by_driver, all_kinds_rows, partitions)
    for table in TABLE_SCHEMAS:
        spark_dirs = sorted(p.name for p in Path(by_spark.table_location(table)).glob("offsets_partition=*"))
        driver_dirs = sorted(
            p.name for p in Path(by_driver.table_location(table)).glob("offsets_partition=*")
        )
        assert spark_dirs == driver_dirs, table
        assert _read_back(spark, by_driver.table_location(table)) == _read_back(
            spark, by_spark.table_location(table)
        )
    written = _read_back(spark, by_driver.table_location("groups"))
    assert written is not None
    comments = {f.name: f.metadata.get("comment") for f in written[0].fields}
    assert comments["group_id"] == TABLE_SCHEMAS["groups"]["group_id"].metadata["comment"]
    # and through the readers' own path, with the explicit schemas
    ours = {
        t: comparable(df.collect(), TABLE_SCHEMAS[t]) for t, df in read_cache_tables(spark, by_driver).items()
    }
    theirs = {
        t: comparable(df.collect(), TABLE_SCHEMAS[t]) for t, df in read_cache_tables(spark, by_spark).items()
    }
    assert ours == theirs and all(
        ours[t] for t in ("groups", "members", "group_assignments", "decode_errors")
    )


def test_a_spark_publish_after_a_driver_publish_drops_the_digests(spark, all_kinds_rows, tmp_path) -> None:  # noqa: F811
    from offsetops.assets.published_tables import publish_rows_on_driver
    from offsetops.assets.resources import StateResource
    from offsetops.pipelines.driver_publish import DIGEST_FILE

    state = StateResource(output_dir=str(tmp_path))
    publish_rows_on_driver(state, all_kinds_rows, list(range(PARTITIONS)))
    assert (Path(state.table_location("offsets")) / DIGEST_FILE).exists()
    _spark_publish(spark, state, all_kinds_rows, list(range(PARTITIONS)))
    assert not (Path(state.table_location("offsets")) / DIGEST_FILE).exists()
    again = publish_rows_on_driver(state, all_kinds_rows, list(range(PARTITIONS)))
    assert sum(again.unchanged.values()) == 0 and not again.warnings


def _jobs_in(spark: Any, group: str, fn: Any) -> tuple[Any, int]:
    """``fn()`` and the Spark jobs it ran (under job group ``group``)."""
    spark.sparkContext.setJobGroup(group, group)
    try:
        return fn(), len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)


def test_published_tables_are_read_again_only_when_their_files_changed(spark, tmp_path) -> None:
    """The expiration plan and the metrics of one run read the same published tables: the second read
    runs no Spark job; after a new publish the read is a new one, with the new rows."""
    from offsetops.assets.published_tables import READ_BY_SPARK, READ_FROM_MEMORY, published_caches
    from offsetops.assets.resources import StateResource
    from offsetops.pipelines.tables import all_cache_rows

    state = StateResource(output_dir=str(tmp_path))

    def read() -> Any:
        return published_caches(lambda: spark, state, [4], NUM_PARTITIONS)

    _spark_publish(spark, state, all_cache_rows([error_storm_cache(4)]), [4])
    first, jobs = _jobs_in(spark, "first", read)
    again, jobs_again = _jobs_in(spark, "again", read)
    assert jobs > 0 and jobs_again == 0
    assert (first.read_by, again.read_by) == (READ_BY_SPARK, READ_FROM_MEMORY)
    assert again.rows == first.rows and len(first.rows["decode_errors"]) > 0

    empty = CoordinatorCache(partition=4, groups={}, stats=LoadStats(), num_partitions=NUM_PARTITIONS)
    _spark_publish(spark, state, all_cache_rows([empty]), [4])
    after, jobs_after = _jobs_in(spark, "after", read)
    assert jobs_after > 0 and after.rows["decode_errors"] == []


def test_the_rows_published_from_the_driver_are_read_without_spark_until_a_file_changes(tmp_path) -> None:
    """No session is even asked for while the files are the ones the publish wrote."""
    from offsetops.assets.published_tables import READ_FROM_MEMORY, publish_rows_on_driver, published_caches
    from offsetops.assets.resources import StateResource
    from offsetops.pipelines.tables import all_cache_rows

    state = StateResource(output_dir=str(tmp_path))
    rows = all_cache_rows([error_storm_cache(4)])
    publish_rows_on_driver(state, rows, [4])

    def no_session() -> Any:
        raise AssertionError("the tables were read through Spark")

    got = published_caches(no_session, state, [4], NUM_PARTITIONS)
    assert got.read_by == READ_FROM_MEMORY and got.rows == rows
    assert [len(c.stats.errors) for c in got.caches] == [3]
    (Path(state.table_location("load_stats")) / "offsets_partition=4").rename(Path(tmp_path) / "moved")
    with pytest.raises(AssertionError, match="through Spark"):
        published_caches(no_session, state, [4], NUM_PARTITIONS)


def test_kept_rows_are_the_published_ones_while_no_file_changed(tmp_path) -> None:
    """What the validation takes its row counts and data partitions from: the rows the driver published,
    for the partitions published, and nothing once a file of the tables changed."""
    from offsetops.assets.published_tables import kept_rows, publish_rows_on_driver
    from offsetops.assets.resources import StateResource
    from offsetops.pipelines.tables import all_cache_rows

    state = StateResource(output_dir=str(tmp_path))
    rows = all_cache_rows([error_storm_cache(4)])
    publish_rows_on_driver(state, rows, [4])
    assert kept_rows(state, [4]) == rows
    assert kept_rows(state, [4, 5]) is None
    assert kept_rows(StateResource(output_dir=str(tmp_path / "other")), [4]) is None
    (Path(state.table_location("load_stats")) / "offsets_partition=4").rename(Path(tmp_path) / "moved")
    assert kept_rows(state, [4]) is None


def test_a_resumed_run_publishes_from_the_driver_and_plans_without_reading_through_spark(
    spark, simulated_log_dir, tmp_path
) -> None:
    """coordinator_cache and expiration_plan of a resumed run: no Spark job between them, the tables
    written by the driver, and the plan made from the rows the reload published."""
    from dagster import AssetKey, DagsterInstance, materialize
    from offsetops.assets.expiration import expiration_plan
    from offsetops.assets.partitions import all_partitions_tags
    from offsetops.assets.published_tables import READ_FROM_MEMORY
    from offsetops.assets.reload import coordinator_cache, raw_segments
    from offsetops.assets.resources import OffsetsSourceResource, SparkResource, StateResource
    from offsetops.checks.dagster_checks import plain_metadata

    def jobs() -> int:
        return len(spark.sparkContext.statusTracker().getJobIdsForGroup())

    def run() -> Any:
        result = materialize(
            [raw_segments, coordinator_cache, expiration_plan],
            resources={
                "offsets_source": OffsetsSourceResource(
                    log_dir=str(simulated_log_dir), resume_state_dir=str(tmp_path / "resume")
                ),
                "spark": SparkResource(master="local[1]"),
                "state": StateResource(output_dir=str(tmp_path / "out")),
            },
            instance=DagsterInstance.ephemeral(),
            tags=all_partitions_tags(NUM_PARTITIONS),
        )
        assert result.success
        return {
            (m.asset_key.path[-1], m.partition): plain_metadata(m.metadata)
            for e in result.get_asset_materialization_events()
            if (m := e.event_specific_data.materialization).asset_key != AssetKey("raw_segments")
        }

    before = jobs()
    first = run()
    second = run()
    assert jobs() == before
    for p in map(str, range(NUM_PARTITIONS)):
        assert first[("coordinator_cache", p)]["published_by"] == "driver"
        assert second[("coordinator_cache", p)]["resumed"] is True
        assert first[("expiration_plan", p)]["tables_read_by"] == READ_FROM_MEMORY
        assert second[("expiration_plan", p)]["tables_read_by"] == READ_FROM_MEMORY
    # nothing appended: only load_stats, whose row carries the load's elapsed time, is written again
    assert second[("coordinator_cache", "0")]["table_partitions_unchanged"] == 6 * NUM_PARTITIONS
    assert second[("coordinator_cache", "0")]["table_partitions_written"] == NUM_PARTITIONS


@pytest.mark.parametrize(
    ("tables_uri", "on_driver"),
    [
        (None, True),
        ("file:///srv/offsetops/tables", True),
        ("s3a://bucket/tables", False),
        ("hdfs://nn/t", False),
    ],
)
def test_only_tables_on_a_local_disk_are_published_from_the_driver(tmp_path, tables_uri, on_driver) -> None:
    from offsetops.assets.published_tables import publishes_on_driver
    from offsetops.assets.resources import StateResource

    assert publishes_on_driver(StateResource(output_dir=str(tmp_path), tables_uri=tables_uri)) is on_driver
