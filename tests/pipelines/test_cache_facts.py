"""The reload's per-partition facts and summary: the same figures from Spark's DataFrames and from the
driver's rows, decode problems counted as ``count_errors`` counts them."""

from __future__ import annotations

from typing import Any

from offsetops.coordinator_core.errors import count_errors
from offsetops.pipelines.cache_facts import partition_facts, partition_facts_from_rows, summarise
from offsetops.pipelines.schemas import TABLE_SCHEMAS
from offsetops.pipelines.tables import all_cache_rows

from tests.support.driver_rows import PARTITIONS, all_kinds_rows  # noqa: F401 (fixture)
from tests.support.error_storm import error_storm_cache


def _frames(spark: Any, rows: dict[str, list[Any]]) -> dict[str, Any]:
    return {t: spark.createDataFrame(rows[t], schema) for t, schema in TABLE_SCHEMAS.items()}


def test_an_error_summary_counts_as_the_problems_it_stands_for(spark) -> None:
    """Six repeats summarised in one row, one example and a notice: seven errors, as count_errors says."""
    cache = error_storm_cache(4)
    rows = all_cache_rows([cache])
    for facts in (partition_facts(_frames(spark, rows)), partition_facts_from_rows(rows)):
        assert facts[4]["errors"] == count_errors(cache.stats.errors) == 7
        summary = summarise(TABLE_SCHEMAS, facts)
        assert summary["counts"]["decode_errors"] == 7
        assert summary["error_kinds"] == {"corrupt_record": 7, "zero_tail": 1}


def test_the_driver_s_facts_and_summary_equal_spark_s(spark, all_kinds_rows) -> None:  # noqa: F811
    """Every group type, members, assignments, decode errors of several kinds: one truth on both paths."""
    from_rows = partition_facts_from_rows(all_kinds_rows)
    from_spark = partition_facts(_frames(spark, all_kinds_rows))
    assert from_rows == from_spark
    assert sorted(from_rows) == list(range(PARTITIONS))
    summary = summarise(TABLE_SCHEMAS, from_rows)
    assert summary == summarise(TABLE_SCHEMAS, from_spark)
    assert set(summary["group_types"]) >= {"classic", "consumer", "share", "streams"}
    assert summary["counts"]["group_assignments"] > 0 and summary["counts"]["members"] > 0
    assert summary["error_kinds"]["corrupt_record"] >= 7 and summary["counts"]["decode_errors"] >= 8
