"""The GX asset check results, built from a real suite run on Spark (healthy and corrupted caches)."""

from __future__ import annotations

import pytest
from dagster import AssetCheckSeverity
from offsetops.checks.dagster_checks import GX_ERROR_CHECK, GX_WARNING_CHECK, gx_result, plain_metadata, table
from offsetops.checks.report import ValidationReport

from tests.checks.conftest import CORRUPTIONS

pytestmark = pytest.mark.spark


def test_a_healthy_cache_passes_both_levels(good_report: ValidationReport) -> None:
    error, warning = gx_result(good_report, "error", "0-2"), gx_result(good_report, "warning", "0-2")
    assert (error.check_name, warning.check_name) == (GX_ERROR_CHECK, GX_WARNING_CHECK)
    assert error.passed and warning.passed
    assert error.description == "every error-level expectation passed"
    meta = plain_metadata(error.metadata)
    assert meta["failed"] == [] and meta["partitions"] == "0-2"
    assert meta["expectations_passed"] == len(good_report.outcomes) > 0
    assert meta["data_docs"] == str(good_report.data_docs_index)


def test_a_corrupted_cache_fails_the_error_level_with_error_severity_worst_first(
    corrupted_report: ValidationReport,
) -> None:
    result = gx_result(corrupted_report, "error", "0")
    assert not result.passed and result.severity == AssetCheckSeverity.ERROR
    failed = plain_metadata(result.metadata)["failed"]
    assert {f["check_id"] for f in failed} == {k for k, (sev, _, _) in CORRUPTIONS.items() if sev == "error"}
    assert all(f["severity"] == "error" for f in failed)
    counts = [f.get("unexpected_count", 0) for f in failed]
    assert counts == sorted(counts, reverse=True)  # the most unexpected rows lead
    assert result.description.startswith(f"{len(failed)} error-level expectation(s) failed: ")
    assert "offsets.key_unique (2 unexpected)" in result.description
    expected_passed = sum(o.success for o in corrupted_report.outcomes)
    assert plain_metadata(result.metadata)["expectations_passed"] == expected_passed
    warning = gx_result(corrupted_report, "warning", "0")
    assert warning.severity == AssetCheckSeverity.WARN
    assert all(f["severity"] == "warning" for f in plain_metadata(warning.metadata)["failed"])


def test_a_table_whose_rows_leave_different_cells_empty_is_still_a_table() -> None:
    """Groups where one has a next expiry and another none (Dagster refuses records whose fields differ)."""
    rows = [
        {"group_id": "a", "offsets": 3, "next_expiry": "2023-11-15T04:00:00Z"},
        {"group_id": "b", "offsets": 1, "next_expiry": None},
        {"group_id": "c", "offsets": 2, "extra": "kept"},
    ]
    value = table([("group_id", "string"), ("offsets", "int"), ("next_expiry", "string")], rows)
    assert [list(r.data) for r in value.records] == [["group_id", "offsets", "next_expiry", "extra"]] * 3
    assert plain_metadata({"t": value})["t"] == [
        {"group_id": "a", "offsets": 3, "next_expiry": "2023-11-15T04:00:00Z"},
        {"group_id": "b", "offsets": 1},
        {"group_id": "c", "offsets": 2, "extra": "kept"},
    ]
