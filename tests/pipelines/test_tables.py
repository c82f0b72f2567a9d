"""Reload tables -> caches: what downstream steps (expiration) read back equals the reload itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from offsetops.coordinator_core.expiration import KIP848, LEGACY, plan_expiration
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.simulator import SimulationConfig, simulate
from offsetops.pipelines.tables import all_cache_rows, caches_from_rows


@pytest.fixture(scope="module")
def kip848_logdir(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("sim41") / "logdir"
    result = simulate(
        SimulationConfig(out_dir=Path(out), groups=30, partitions=6, days=0.3, seed=1, kafka_version="4.1")
    )
    return out, result


def test_tables_round_trip_to_the_same_caches(kip848_logdir):
    out, _ = kip848_logdir
    caches = load_log_dir(out, num_partitions=6)
    kinds = {g.group_type for c in caches for g in c.groups.values()}
    assert {"classic", "consumer"} <= kinds, kinds  # KIP-848 groups must be in the data
    assert any(g.pending_offsets for c in caches for g in c.groups.values())
    rebuilt = caches_from_rows(all_cache_rows(caches), num_partitions=6)
    assert [c.partition for c in rebuilt] == [c.partition for c in caches]
    for a, b in zip(caches, rebuilt, strict=True):
        assert b.to_json()["groups"] == a.to_json()["groups"]
        assert b.open_transactions == a.open_transactions
        assert (b.stats.records, b.stats.batches, len(b.stats.errors)) == (
            a.stats.records,
            a.stats.batches,
            len(a.stats.errors),
        )


@pytest.mark.parametrize("coordinator", [LEGACY, KIP848])
def test_expiration_planned_from_tables_equals_planning_from_the_log(kip848_logdir, coordinator):
    out, result = kip848_logdir
    caches = load_log_dir(out, num_partitions=6)
    rebuilt = caches_from_rows(all_cache_rows(caches), num_partitions=6)
    # Late enough that offsets and groups expire under a one-hour retention.
    now = result.simulated_until_ms + 2 * 3_600_000
    kwargs = {"now_ms": now, "retention_ms": 3_600_000, "coordinator": coordinator}
    expected = plan_expiration(caches, **kwargs).to_json()
    assert expected["tombstones"], "the scenario must expire something"
    assert plan_expiration(rebuilt, **kwargs).to_json() == expected


def test_share_and_streams_figures_from_the_tables_equal_the_replayed_detail(tmp_path):
    """The metrics' epochs and owned tasks, from the rows, are what the replayed detail gives."""
    from offsetops.coordinator_core.describe import describe_groups
    from offsetops.coordinator_core.metrics_snapshot import assignment_figures
    from offsetops.pipelines.tables import assignment_figures_from_rows

    out = tmp_path / "logdir"
    simulate(SimulationConfig(out_dir=out, groups=30, partitions=4, days=0.15, seed=11, kafka_version="4.2"))
    caches = load_log_dir(out, num_partitions=4)
    expected = assignment_figures(describe_groups(caches, {}))
    assert {a.group_type for a in expected} == {"share", "streams"}
    assert any(owned for a in expected for _t, owned in a.tasks or ())
    assert assignment_figures_from_rows(all_cache_rows(caches)) == expected


def test_error_summaries_keep_their_count_through_the_tables():
    """An ErrorLog summary stands for many problems: the row carries the count, the cache gets it back."""
    from offsetops.coordinator_core.errors import count_errors, error_total

    from tests.support.error_storm import error_storm_cache

    cache = error_storm_cache(3)
    [rebuilt] = caches_from_rows(all_cache_rows([cache]), num_partitions=50)
    assert (count_errors(rebuilt.stats.errors), error_total(rebuilt.stats.errors)) == (7, 8)
    assert rebuilt.stats.errors == cache.stats.errors


def test_partitions_without_rows_come_back_empty():
    [cache] = caches_from_rows({}, num_partitions=50, partitions=[7])
    assert cache.partition == 7 and cache.groups == {} and cache.stats.errors == []


def test_docs_tables_page_matches_the_schemas():
    from offsetops.pipelines.table_docs import render_tables_markdown

    page = Path(__file__).resolve().parents[2] / "docs" / "tables.md"
    assert page.read_text(encoding="utf-8") == render_tables_markdown(), (
        "docs/tables.md is stale: regenerate it with offsetops.pipelines.table_docs.render_tables_markdown()"
    )
    for table in ("offsets", "groups", "tombstones", "expiration_forecast", "cleaner_audit"):
        assert f"## `{table}`" in page.read_text(encoding="utf-8")


def test_table_writes_run_together_and_a_failed_one_is_raised(spark, tmp_path) -> None:
    """The tables are written by concurrent Spark jobs: a failing table raises, after the others have
    been written in full."""
    from offsetops.pipelines.reload import write_tables
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType

    def explode(x: int) -> int:
        raise ValueError(f"cannot write row {x}")

    good = spark.createDataFrame([(p, p * 10) for p in range(4)], "offsets_partition int, n int")
    bad = good.select("offsets_partition", F.udf(explode, IntegerType())("n").alias("n"))
    tables = {"first": good, "broken": bad, "last": good}
    with pytest.raises(Exception, match="cannot write row"):
        write_tables(tables, str(tmp_path), {"first": 4, "last": 4}, partitioned=frozenset({"last"}))
    assert sorted(r.n for r in spark.read.parquet(str(tmp_path / "first")).collect()) == [0, 10, 20, 30]
    last = spark.read.parquet(str(tmp_path / "last"))
    assert sorted((r.offsets_partition, r.n) for r in last.collect()) == [(p, p * 10) for p in range(4)]
    assert sorted(p.name for p in (tmp_path / "last").glob("offsets_partition=*")) == [
        f"offsets_partition={p}" for p in range(4)
    ]


def test_assignments_collected_as_spark_rows_are_read_by_position_and_any_other_order_by_name(kip848_logdir):
    """``collect`` gives each assignment entry as a ``Row`` in the struct's order, read by position (a
    lookup by name searches the field names each time); a ``Row`` of another order still reads by name."""
    from offsetops.pipelines.schemas import ASSIGNMENT_ENTRY, TABLE_SCHEMAS
    from pyspark.sql import Row

    class ByPositionOnly(Row):
        def __getitem__(self, item):
            assert not isinstance(item, str), f"looked up {item!r} by name"
            return super().__getitem__(item)

    def collected(topic, partitions):
        row = ByPositionOnly.__new__(ByPositionOnly, topic, partitions)
        row.__fields__ = list(names)  # as pyspark.sql.types._create_row makes a collected struct
        return row

    out, _ = kip848_logdir
    caches = load_log_dir(out, num_partitions=6)
    rows = all_cache_rows(caches)
    at = TABLE_SCHEMAS["members"].fieldNames().index("assignment")
    names = ASSIGNMENT_ENTRY.fieldNames()
    as_collected, reordered = dict(rows), dict(rows)
    as_collected["members"] = [
        (*r[:at], [collected(a["topic"], a["partitions"]) for a in r[at]] if r[at] is not None else None,
         *r[at + 1:])
        for r in rows["members"]
    ]  # fmt: skip
    reordered["members"] = [
        (*r[:at], [Row(partitions=a["partitions"], topic=a["topic"]) for a in r[at]] if r[at] is not None
         else None, *r[at + 1:])
        for r in rows["members"]
    ]  # fmt: skip
    assigned = [r for r in rows["members"] if r[at]]
    assert assigned, "the data must have members with assignments"
    for variant in (as_collected, reordered):
        rebuilt = caches_from_rows(variant, num_partitions=6)
        for a, b in zip(caches, rebuilt, strict=True):
            assert b.to_json()["groups"] == a.to_json()["groups"]
