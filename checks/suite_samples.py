"""The validation's second pass: samples of what was wrong, fetched only where something was.

At ``SUMMARY``, Great Expectations resolves a map expectation's unexpected values (a ``filter``, a
``limit`` and a ``collect``: a Spark job of its own) beside its unexpected count (bundled with the
domain's other aggregates into one job), even when nothing is unexpected. So the suites first run at
:data:`COUNTS_FORMAT`: ``SUMMARY`` with ``partial_unexpected_count`` 0, whose ``limit(0)`` Spark's
optimizer turns into an empty relation collected without a job, and whose SQL rules resolve their row
count only (``kafka_expectations.UnexpectedRowsWithSampleExpectation``). Then the expectations whose
result could carry a sample (failed, or passed with unexpected rows under ``mostly``) run again at the
full ``SUMMARY`` on the same batch, and their results replace the first pass's: on a healthy cache the
second pass is empty, and either way every result is the one a single pass at ``SUMMARY`` gives.
"""

from __future__ import annotations

from typing import Any

import great_expectations as gx
from great_expectations.core.batch_definition import BatchDefinition
from great_expectations.core.expectation_validation_result import (
    ExpectationSuiteValidationResult,
    ExpectationValidationResult,
)
from great_expectations.validator.validation_statistics import calc_validation_statistics
from pyspark.sql import DataFrame

COUNTS_FORMAT: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": 0}
"""The first pass: ``SUMMARY``'s counts and observed values, no sample of unexpected values."""


def needs_sample(result: ExpectationValidationResult) -> bool:
    """Whether a first-pass result could carry a sample at the full ``SUMMARY``: it failed (an
    exception included), or it passed with unexpected rows (``mostly`` below 1)."""
    if not result.success:
        return True
    count = (result.result or {}).get("unexpected_count")
    return isinstance(count, int) and count > 0


def _id(result: ExpectationValidationResult) -> str | None:
    return result.expectation_config.id if result.expectation_config else None


def add_samples(
    suite_result: ExpectationSuiteValidationResult,
    batch_definition: BatchDefinition,
    dataframe: DataFrame,
    result_format: dict[str, Any],
) -> bool:
    """Give ``suite_result`` (a first pass at :data:`COUNTS_FORMAT`) the results a pass at ``result_format``
    gives: the expectations that :func:`needs_sample` validated again on the same batch, the others'
    empty samples completed. True when a second pass ran (``suite_result`` changed beyond the
    completion)."""
    wanted = []
    for result in suite_result.results:
        if not needs_sample(result):
            _complete_empty_sample(result)
        elif result.expectation_config:
            wanted.append(result.expectation_config)
    if not wanted:
        return False
    # Configurations (with their ids) rebuilt as a suite of the same name outside the context's stores.
    again = gx.ExpectationSuite(name=suite_result.suite_name, expectations=list(wanted))
    batch = batch_definition.get_batch(batch_parameters={"dataframe": dataframe})
    sampled = {_id(r): r for r in batch.validate(again, result_format=result_format).results}
    suite_result.results = [sampled.get(_id(r), r) for r in suite_result.results]
    statistics = calc_validation_statistics(suite_result.results)
    suite_result.success = statistics.success
    suite_result.statistics = {
        "evaluated_expectations": statistics.evaluated_expectations,
        "successful_expectations": statistics.successful_expectations,
        "unsuccessful_expectations": statistics.unsuccessful_expectations,
        "success_percent": statistics.success_percent,
    }
    return True


def _complete_empty_sample(result: ExpectationValidationResult) -> None:
    """A map expectation with no unexpected value lists none either way; at a sample size above 0 GX also
    gives their (empty) value counts, which the first pass leaves out."""
    body = result.result
    if body and body.get("partial_unexpected_list") == [] and "partial_unexpected_counts" not in body:
        body["partial_unexpected_counts"] = []
