"""The GX asset check results, built from a real suite run on Spark (healthy and corrupted caches)."""

from __future__ import annotations

import pytest
from dagster import (
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    DagsterInstance,
    MaterializeResult,
    StaticPartitionsDefinition,
    asset,
    materialize,
)
from offsetops.checks.dagster_checks import (
    GX_ERROR_CHECK,
    GX_WARNING_CHECK,
    PartitionCheck,
    gx_result,
    partition_check_spec,
    partition_evaluations,
    plain_metadata,
    restate_worst,
)
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


def _latest_execution(failing: dict[int, AssetCheckSeverity]) -> tuple[str, str]:
    """A 50-partition asset emitting its check per partition as the offsetops assets do, run over all
    partitions at once on a real (ephemeral) instance: the partition and status of the check's latest
    execution, what the UI shows as "Latest execution"."""
    partitions = StaticPartitionsDefinition([str(p) for p in range(50)])
    rank = {AssetCheckSeverity.WARN: 1, AssetCheckSeverity.ERROR: 2}
    checks = [
        PartitionCheck(p, False, failing[p], f"partition {p}", rank[failing[p]])
        if p in failing
        else PartitionCheck(p, True, AssetCheckSeverity.WARN, f"partition {p}")
        for p in range(50)
    ]

    @asset(partitions_def=partitions, check_specs=[partition_check_spec("a", "v", partitions, "verdict")])
    def a(context):  # unannotated: Dagster cannot resolve a postponed annotation
        yield MaterializeResult()
        if failing:
            restate_worst(context, "a", max(failing, key=lambda p: rank[failing[p]]), {})
        yield from partition_evaluations(context, "a", "v", checks)

    with DagsterInstance.ephemeral() as instance:
        tags = {"dagster/asset_partition_range_start": "0", "dagster/asset_partition_range_end": "49"}
        assert materialize([a], instance=instance, tags=tags).success
        key = AssetCheckKey(AssetKey("a"), "v")
        latest = instance.event_log_storage.get_latest_asset_check_execution_by_key([key])[key]
        return str(latest.partition), latest.status.value


def test_a_partitioned_checks_latest_execution_is_the_runs_worst_partition() -> None:
    """Dagster plans one execution per partition in no set order; the worst is restated as the newest."""
    failing = {3: AssetCheckSeverity.WARN, 47: AssetCheckSeverity.ERROR, 12: AssetCheckSeverity.WARN}
    assert _latest_execution(failing) == ("47", "FAILED")


def test_a_run_where_every_partition_passes_shows_a_passed_execution() -> None:
    assert _latest_execution({})[1] == "SUCCEEDED"
