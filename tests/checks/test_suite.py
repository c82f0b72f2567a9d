"""validate_cache on Spark: healthy data passes, each deliberate corruption is named with its severity."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from offsetops.checks.expectations import build_checks
from offsetops.checks.kafka_expectations import UnexpectedRowsWithSampleExpectation
from offsetops.checks.report import ValidationReport
from offsetops.checks.suite import suite_name, validate_cache
from offsetops.pipelines.schemas import TABLE_SCHEMAS

from tests.checks.conftest import (
    CORRUPTIONS,
    DECODE_ERROR_FILE,
    NOW_MS,
    good_rows,
    make_tables,
    unsubscribed_assignment_rows,
)
from tests.checks.failing_tables import failing_rows, make_loose_tables

pytestmark = pytest.mark.spark


def _scalars(value: Any) -> Iterator[Any]:
    """Every leaf of a sample (lists, tuples and dicts flattened)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        for item in value:
            yield from _scalars(item)
    else:
        yield value


def test_healthy_cache_passes_every_check(good_report: ValidationReport) -> None:
    # the operator tables (log ranges, live cross-check) are absent here: their checks do not run
    expected_ids = [s.check_id for s in build_checks(now_ms=NOW_MS) if s.table in TABLE_SCHEMAS]
    assert [o.check_id for o in good_report.outcomes] == expected_ids
    assert good_report.failed == [], [(o.check_id, o.sample, o.exception) for o in good_report.failed]
    assert good_report.success and good_report.success_error_level
    assert all(o.exception is None for o in good_report.outcomes)
    rows = good_rows()
    assert good_report.counts == {name: len(rows[name]) for name in TABLE_SCHEMAS}
    tally = good_report.by_severity
    assert tally["error"]["failed"] == tally["warning"]["failed"] == 0
    assert tally["error"]["passed"] + tally["warning"]["passed"] == len(expected_ids)


def test_report_paths_exist(good_report: ValidationReport) -> None:
    assert good_report.summary_path.name == "index.html"
    assert good_report.summary_path.parent.name == "reports"
    assert good_report.data_docs_index == good_report.summary_path.parent / "data_docs" / "index.html"
    assert good_report.data_docs_index.is_file()
    summary = good_report.summary_path.read_text(encoding="utf-8")
    assert 'href="data_docs/index.html"' in summary
    assert "http://" not in summary and "https://" not in summary  # no external fetches
    index = good_report.data_docs_index.read_text(encoding="utf-8")
    for table in TABLE_SCHEMAS:
        assert suite_name(table) in index


@pytest.mark.parametrize("check_id", sorted(CORRUPTIONS))
def test_each_corruption_is_named(corrupted_report: ValidationReport, check_id: str) -> None:
    severity, count, marker = CORRUPTIONS[check_id]
    outcome = corrupted_report.outcome(check_id)
    assert not outcome.success
    assert outcome.severity == severity
    assert outcome.exception is None
    assert outcome.unexpected_count == count
    assert outcome in corrupted_report.failed
    if marker is not None:
        assert marker in list(_scalars(outcome.sample)), outcome.sample


def test_corruptions_fail_exactly_their_checks(corrupted_report: ValidationReport) -> None:
    assert {o.check_id for o in corrupted_report.failed} == set(CORRUPTIONS)
    assert not corrupted_report.success_error_level
    assert corrupted_report.by_severity["error"]["failed"] == len(CORRUPTIONS)
    assert corrupted_report.counts["decode_errors"] == 1
    assert corrupted_report.decode_errors_sample[0]["file"] == DECODE_ERROR_FILE


def test_report_to_dict_round_trips_as_json(corrupted_report: ValidationReport) -> None:
    data = json.loads(json.dumps(corrupted_report.to_dict()))
    assert data["success_error_level"] is False
    failed = {f["check_id"]: f for f in data["failed"]}
    assert set(failed) == set(CORRUPTIONS)
    state = failed["groups.state_known"]
    assert (state["table"], state["severity"], state["unexpected_count"]) == ("groups", "error", 1)
    assert state["sample"] == ["Bogus"]
    assert data["summary_path"].endswith("reports/index.html")
    summary_json = json.loads((Path(data["summary_path"]).parent / "summary.json").read_text())
    assert summary_json["counts"] == data["counts"]


def test_validation_does_not_mutate_tables(
    spark: Any,
    corrupted_report: ValidationReport,
    corrupted_tables: dict[str, Any],
    corrupted_snapshot: dict[str, Any],
) -> None:
    assert corrupted_report.outcomes  # the validation ran
    for name, df in corrupted_tables.items():
        rows, schema, storage, count = corrupted_snapshot[name]
        assert df.count() == count, name
        assert df.schema.json() == schema, name
        assert df.storageLevel == storage and not df.is_cached, name
        assert sorted(map(repr, df.collect())) == rows, name
    assert not spark.catalog.tableExists("tmp_view")  # GX's temp view is cleaned up


def test_unsubscribed_assignment_is_only_a_warning(spark: Any, tmp_path: Path) -> None:
    tables = make_tables(spark, unsubscribed_assignment_rows())
    report = validate_cache(spark, tables, output_dir=tmp_path, now_ms=NOW_MS)
    assert report.success_error_level
    assert not report.success
    assert [o.check_id for o in report.failed] == ["members.assignment_within_subscription"]
    outcome = report.failed[0]
    assert (outcome.severity, outcome.unexpected_count) == ("warning", 1)
    assert outcome.sample[0]["group_id"] == "payments-consumer"
    assert "audit-log" in json.dumps(outcome.sample)
    specs = [s for s in build_checks(now_ms=NOW_MS) if s.table in TABLE_SCHEMAS]
    warnings = [s for s in specs if s.severity == "warning"]
    assert report.by_severity["warning"] == {"passed": len(warnings) - 1, "failed": 1}
    assert "PASSED with warnings" in report.summary_path.read_text(encoding="utf-8")


def test_missing_required_table_is_refused(spark: Any, tmp_path: Path) -> None:
    tables = make_tables(spark, good_rows())
    del tables["decode_errors"]
    with pytest.raises(ValueError, match="decode_errors"):
        validate_cache(spark, tables, output_dir=tmp_path, now_ms=NOW_MS)


def test_kip848_group_states_are_kafka_states(spark: Any, tmp_path: Path) -> None:
    # Kafka 4.x consumer groups (KIP-848) report Assigning and Reconciling while members catch up.
    rows = good_rows()
    for group, state in zip(rows["groups"][:2], ("Assigning", "Reconciling"), strict=True):
        group["state"], group["group_type"] = state, "consumer"
    report = validate_cache(spark, make_tables(spark, rows), output_dir=tmp_path, now_ms=NOW_MS)
    assert report.outcome("groups.state_known").success
    assert report.success_error_level, [o.check_id for o in report.failed]


def test_notices_are_not_decode_errors(spark: Any, tmp_path: Path) -> None:
    rows = good_rows()
    rows["decode_errors"].append(
        {
            "offsets_partition": 12,
            "file": "/var/lib/kafka/data/__consumer_offsets-12/00000000000000000000.log",
            "position": 0,
            "offset": 7,
            "kind": "embedded_layout",
            "reason": "group 'g' member 'm': consumer-protocol subscription (22 bytes) is not the standard "
            "layout of its version: v1 header over the v0 layout",
            "count": 1,
        }
    )
    report = validate_cache(spark, make_tables(spark, rows), output_dir=tmp_path, now_ms=NOW_MS)
    assert "decode_errors.empty" not in [o.check_id for o in report.failed]
    assert report.success_error_level


RECORDED_OUTCOMES = Path(__file__).with_name("validation_outcomes.json")
"""The report fields of both table sets as the suite gave them when it ran one checkpoint after another on
uncoalesced views (commit 6e78dd5): however the suite is scheduled, the results may not move."""

_RECORDED_FIELDS = ("success", "success_error_level", "counts", "outcomes", "decode_errors_sample")


def _recorded_fields(report: ValidationReport) -> dict[str, Any]:
    data = json.loads(json.dumps(report.to_dict()))
    return {k: data[k] for k in _RECORDED_FIELDS}


def test_healthy_outcomes_are_the_recorded_ones(good_report: ValidationReport) -> None:
    recorded = json.loads(RECORDED_OUTCOMES.read_text(encoding="utf-8"))["healthy"]
    assert _recorded_fields(good_report) == recorded


def test_every_check_fails_with_the_recorded_outcome(spark: Any, tmp_path: Path) -> None:
    recorded = json.loads(RECORDED_OUTCOMES.read_text(encoding="utf-8"))["failing"]
    report = validate_cache(
        spark, make_loose_tables(spark, failing_rows()), output_dir=tmp_path, now_ms=NOW_MS
    )
    every_check = [s.check_id for s in build_checks(now_ms=NOW_MS)]
    assert [o.check_id for o in report.outcomes] == every_check
    assert not any(o.success for o in report.outcomes)
    assert all(o.exception is None for o in report.outcomes)
    got = _recorded_fields(report)
    for want, have in zip(recorded["outcomes"], got["outcomes"], strict=True):
        assert have == want, want["check_id"]
    assert got == recorded


def test_rules_never_read_a_view_another_suite_names(spark: Any, tmp_path: Path) -> None:
    """The race of suites run at once: GX's own SQL metrics bind every batch to one session-wide view,
    ``tmp_view``, so a suite replacing it between another's ``createOrReplaceTempView`` and its query
    made that query read the wrong table. Here a thread keeps pointing ``tmp_view`` at an unrelated
    table for the whole validation; no rule may notice, and each must still report its own table's
    rows."""
    recorded = json.loads(RECORDED_OUTCOMES.read_text(encoding="utf-8"))["failing"]
    decoy = spark.range(1).selectExpr("id AS unrelated")
    done = threading.Event()

    def hammer() -> None:
        while not done.is_set():
            decoy.createOrReplaceTempView("tmp_view")

    thread = threading.Thread(target=hammer, name="tmp-view-hammer")
    thread.start()
    try:
        report = validate_cache(
            spark, make_loose_tables(spark, failing_rows()), output_dir=tmp_path, now_ms=NOW_MS
        )
    finally:
        done.set()
        thread.join()
    spark.catalog.dropTempView("tmp_view")
    rules = [o for o in report.outcomes if o.expectation_type == "unexpected_rows_with_sample_expectation"]
    specs = build_checks(now_ms=NOW_MS)
    assert len(rules) == sum(isinstance(s.expectation, UnexpectedRowsWithSampleExpectation) for s in specs)
    assert [o.exception for o in rules] == [None] * len(rules)
    assert _recorded_fields(report) == recorded
    assert not [t.name for t in threading.enumerate() if t.name.startswith("offsetops-gx")]
    assert not [t.name for t in spark.catalog.listTables() if t.name.startswith("_pyspark_")]


def test_jobs_of_every_table_carry_the_callers_job_group(spark: Any, tmp_path: Path) -> None:
    """The checkpoints' threads inherit the caller's Spark local properties: a job group set around the
    validation (how a scheduler cancels or accounts for it) covers the jobs of every table."""
    sc = spark.sparkContext
    sc.setJobGroup("offsetops-validation-test", "validation under a job group")
    try:
        validate_cache(spark, make_tables(spark, good_rows()), output_dir=tmp_path, now_ms=NOW_MS)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
    grouped = sc.statusTracker().getJobIdsForGroup("offsetops-validation-test")
    # the driver thread's own jobs are the row count and nothing else on these tables
    assert len(grouped) > 2 * len(TABLE_SCHEMAS), len(grouped)


def test_counts_the_caller_has_are_not_counted_again(spark: Any, tmp_path: Path) -> None:
    """Rows the caller has on the driver already (a publish's) are taken as given: the same report, and
    the row-count job (over every table) is not run."""
    tables = make_tables(spark, good_rows())
    sc = spark.sparkContext

    def jobs(group: str, **counts: Any) -> tuple[ValidationReport, int]:
        sc.setJobGroup(group, "validation, its jobs counted")
        try:
            report = validate_cache(
                spark, tables, output_dir=tmp_path / group, now_ms=NOW_MS, threads=1, **counts
            )
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        return report, len(sc.statusTracker().getJobIdsForGroup(group))

    counted, by_spark = jobs("counted-by-spark")
    given, by_caller = jobs("counted-by-caller", counts={t: len(r) for t, r in good_rows().items()})
    assert given.counts == counted.counts == {t: len(r) for t, r in good_rows().items()}
    assert _recorded_fields(given) == _recorded_fields(counted)
    assert by_caller < by_spark  # the row count is a job or two (its shuffle), never one per table


@pytest.mark.parametrize(
    "counts",
    [{"offsets": -1}, {"offsets": True}, {"offsets": 2.0}, {"offset_log_ranges": 3}, {"nope": 1}],
)
def test_counts_that_are_not_row_counts_of_validated_tables_are_refused(
    spark: Any, tmp_path: Path, counts: dict[str, Any]
) -> None:
    tables = make_tables(spark, good_rows())
    with pytest.raises(ValueError, match="counts: "):
        validate_cache(spark, tables, output_dir=tmp_path, now_ms=NOW_MS, counts=counts)
