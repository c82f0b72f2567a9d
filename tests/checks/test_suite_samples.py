"""The validation's two passes: counts first, samples only where something was unexpected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import great_expectations as gx
import pytest
from great_expectations.core.result_format import ResultFormat
from great_expectations.expectations import ExpectColumnValuesToBeBetween, ExpectColumnValuesToNotBeNull
from great_expectations.expectations.expectation import (
    ColumnMapExpectation,
    ColumnPairMapExpectation,
    MulticolumnMapExpectation,
)
from offsetops.checks.expectations import build_checks
from offsetops.checks.kafka_expectations import (
    BatchRowsQueryRowCount,
    BatchRowsQueryTable,
    UnexpectedRowsWithSampleExpectation,
)
from offsetops.checks.suite import RESULT_FORMAT, validate_cache
from offsetops.checks.suite_samples import COUNTS_FORMAT, add_samples
from offsetops.pipelines.schemas import TABLE_SCHEMAS

from tests.checks.conftest import NOW_MS, good_rows, make_tables

pytestmark = pytest.mark.spark

SAMPLED = (
    ColumnMapExpectation,
    ColumnPairMapExpectation,
    MulticolumnMapExpectation,
    UnexpectedRowsWithSampleExpectation,
)
"""Expectations whose SUMMARY result carries a sample of unexpected values or rows (a Spark job each)."""


def test_healthy_validation_fetches_no_sample(spark: Any, tmp_path: Path) -> None:
    """A healthy cache's validation takes fewer Spark jobs than it has expectations with a sample: were
    the (empty) samples of passing expectations fetched again, each would be a job of its own."""
    sampled = [
        s
        for s in build_checks(now_ms=NOW_MS)
        if s.table in TABLE_SCHEMAS and isinstance(s.expectation, SAMPLED)
    ]
    sc = spark.sparkContext
    sc.setJobGroup("offsetops-validation-jobs", "a healthy validation, its jobs counted")
    try:
        report = validate_cache(spark, make_tables(spark, good_rows()), output_dir=tmp_path, now_ms=NOW_MS)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
    assert report.failed == []
    jobs = len(sc.statusTracker().getJobIdsForGroup("offsetops-validation-jobs"))
    assert 0 < jobs < len(sampled), (jobs, len(sampled))


def _validation(spark: Any) -> tuple[Any, Any, Any]:
    """A table of one column and a validation of three expectations on it: one that passes with an
    unexpected (null) row under ``mostly``, one that passes outright and a SQL rule that fails."""
    df = spark.createDataFrame([(1,), (None,), (3,), (4,)], "x int")
    context = gx.get_context(mode="ephemeral")
    asset = context.data_sources.add_spark(name="samples", persist=False).add_dataframe_asset(name="t")
    batch_definition = asset.add_batch_definition_whole_dataframe("whole dataframe")
    suite = context.suites.add(gx.ExpectationSuite(name="t"))
    suite.add_expectation(ExpectColumnValuesToNotBeNull(column="x", mostly=0.5))
    suite.add_expectation(ExpectColumnValuesToBeBetween(column="x", min_value=0, max_value=10))
    suite.add_expectation(
        UnexpectedRowsWithSampleExpectation(unexpected_rows_query="SELECT * FROM {batch} WHERE x > 2")
    )
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name="t", data=batch_definition, suite=suite)
    )
    return df, batch_definition, validation


def test_second_pass_gives_what_one_pass_gives(spark: Any) -> None:
    df, batch_definition, validation = _validation(spark)
    whole = validation.run(batch_parameters={"dataframe": df}, result_format=RESULT_FORMAT)
    first = validation.run(batch_parameters={"dataframe": df}, result_format=COUNTS_FORMAT)
    not_null, between, rule = first.results
    # the first pass counts what was unexpected and fetches none of it
    assert not_null.success and not_null.result["unexpected_count"] == 1
    assert not_null.result["partial_unexpected_list"] == []
    assert between.success and "partial_unexpected_counts" not in between.result
    assert not rule.success and rule.result == {"observed_value": 2, "details": {"unexpected_rows": []}}

    assert add_samples(first, batch_definition, df, RESULT_FORMAT)
    assert [r.to_json_dict() for r in first.results] == [r.to_json_dict() for r in whole.results]
    assert first.results[0].result["partial_unexpected_list"] == [None]
    assert first.results[2].result["details"] == {"unexpected_rows": [{"x": 3}, {"x": 4}]}
    assert first.statistics == whole.statistics and first.success == whole.success is False


def test_nothing_unexpected_needs_no_second_pass(spark: Any) -> None:
    df, batch_definition, validation = _validation(spark)
    healthy = df.na.fill(0).where("x <= 2")
    whole = validation.run(batch_parameters={"dataframe": healthy}, result_format=RESULT_FORMAT)
    first = validation.run(batch_parameters={"dataframe": healthy}, result_format=COUNTS_FORMAT)
    assert not add_samples(first, batch_definition, healthy, RESULT_FORMAT)
    assert [r.to_json_dict() for r in first.results] == [r.to_json_dict() for r in whole.results]


def test_sql_rule_fetches_its_rows_only_when_it_shows_them() -> None:
    rule = UnexpectedRowsWithSampleExpectation(unexpected_rows_query="SELECT * FROM {batch} WHERE x > 2")

    def metrics(result_format: Any) -> set[str]:
        deps = rule.get_validation_dependencies(runtime_configuration={"result_format": result_format})
        return set(deps.get_metric_names())

    assert metrics(COUNTS_FORMAT) == {BatchRowsQueryRowCount.metric_name}
    assert metrics("BASIC") == {BatchRowsQueryRowCount.metric_name}
    both = {BatchRowsQueryRowCount.metric_name, BatchRowsQueryTable.metric_name}
    assert metrics(RESULT_FORMAT) == both
    assert metrics("SUMMARY") == metrics(ResultFormat.SUMMARY) == both
    assert metrics({"result_format": ResultFormat.SUMMARY, "partial_unexpected_count": 5}) == both
    assert metrics({"result_format": ResultFormat.SUMMARY, "partial_unexpected_count": 0}) == {
        BatchRowsQueryRowCount.metric_name
    }
    assert metrics({"result_format": "COMPLETE", "partial_unexpected_count": 0}) == both
