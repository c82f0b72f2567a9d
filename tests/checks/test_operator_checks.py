"""The checks an operator cares about, on Spark: each one fails on exactly the rows that break it.

Also: a group id that is an HTML payload reaches the Data Docs only escaped, and the site points at
nothing off the machine.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from offsetops.checks.data_docs import external_references
from offsetops.checks.live_crosscheck import MATCH, MISMATCH, NEWER, CrossCheckRow
from offsetops.checks.report import ValidationReport
from offsetops.checks.suite import operator_check_tables, validate_cache
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records.builder import build_record_batch
from offsetops.coordinator_core.sources.logdir import write_offset_checkpoint

from tests.checks.conftest import HOUR_MS, NOW_MS, NUM_PARTITIONS, good_rows, make_tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]

XSS = "<img src=x onerror=alert(1)>"


def _data_log_dir(root: Path) -> Path:
    """A broker log dir with one data partition: payments-0 holds offsets [100, 110)."""
    part = root / "payments-0"
    part.mkdir(parents=True)
    records = [(None, b"v", NOW_MS - HOUR_MS)] * 10
    (part / "00000000000000000100.log").write_bytes(build_record_batch(records, base_offset=100))
    write_offset_checkpoint(root / "log-start-offset-checkpoint", {("payments", 0): 100})
    return root


def _rows() -> dict[str, list[dict[str, Any]]]:
    rows = good_rows()
    offsets = rows["offsets"]
    pay = [o for o in offsets if o["group_id"] == "payments-consumer" and o["topic"] == "payments"]
    pay[0]["offset"] = 42  # partition 0: below log start 100 -> consumer resets
    offsets.append(
        dict(
            pay[2],
            group_id="audit-reader",
            offsets_partition=partition_for("audit-reader", 50),
            partition=0,
            offset=115,
        )
    )  # above log end 110 -> corruption
    late = next(o for o in offsets if o["group_id"] == "orders-stream-app")
    late["commit_timestamp"] = NOW_MS + 60_000  # after the as-of clock, within the skew
    meta = next(o for o in offsets if o["group_id"] == "connect-s3-sink")
    meta["metadata"] = "m" * 5000
    stable = next(g for g in rows["groups"] if g["group_id"] == "console-consumer-48213")
    stable["protocol"] = None
    evil = {
        "offsets_partition": 0,
        "group_id": XSS,
        "state": "Empty",
        "protocol_type": "consumer",
        "generation": 1,
        "protocol": None,
        "leader": None,
        "current_state_timestamp": NOW_MS - HOUR_MS,
        "member_count": 0,
        "group_type": "classic",
        "assignment_epoch": None,
    }
    rows["groups"].append(evil)  # and on the wrong partition: partition_for fails, showing the id
    assert partition_for(XSS, NUM_PARTITIONS) != 0
    return rows


@pytest.fixture(scope="module")
def report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> ValidationReport:
    root = tmp_path_factory.mktemp("operator")
    tables = make_tables(spark, _rows())
    extra = operator_check_tables(spark, tables, log_dir=str(_data_log_dir(root / "logdir")))
    assert set(extra) == {"offset_log_ranges"}
    rows = [
        CrossCheckRow("offset", 1, "payments-consumer", "payments", 0, "42", "42", MATCH, ""),
        CrossCheckRow("offset", 1, "payments-consumer", "payments", 1, "1001", "1003", NEWER, "later"),
        CrossCheckRow("offset", 1, "payments-consumer", "payments", 2, "1002", "990", MISMATCH, "x"),
        CrossCheckRow(
            "group", 1, "payments-consumer", None, None, "Stable/consumer", "Empty/consumer", MISMATCH, ""
        ),
    ]
    from offsetops.checks.expectations import LIVE_CROSSCHECK_SCHEMA

    names = LIVE_CROSSCHECK_SCHEMA.fieldNames()
    extra["live_crosscheck"] = spark.createDataFrame(
        [tuple(r.to_row()[n] for n in names) for r in rows], LIVE_CROSSCHECK_SCHEMA
    )
    return validate_cache(spark, {**tables, **extra}, output_dir=root / "out", now_ms=NOW_MS)


@pytest.mark.parametrize(
    ("check_id", "severity", "count"),
    [
        ("offset_log_ranges.not_below_log_start", "warning", 1),
        ("offset_log_ranges.not_above_log_end", "error", 1),
        ("offsets.commit_timestamp_not_after_as_of", "warning", 1),
        ("offsets.metadata_within_max_bytes", "warning", 1),
        ("groups.stable_has_members_and_protocol", "error", 1),
        ("live_crosscheck.offsets_agree", "error", 1),
        ("live_crosscheck.groups_agree", "warning", 1),
        ("groups.group_in_partition_for", "error", 1),
    ],
)
def test_operator_check_fails_on_its_rows(report: ValidationReport, check_id: str, severity: str, count: int):
    outcome = report.outcome(check_id)
    assert not outcome.success, check_id
    assert outcome.severity == severity
    assert outcome.unexpected_count == count, outcome.sample


def test_only_the_broken_rules_fail(report: ValidationReport) -> None:
    failed = {o.check_id for o in report.failed}
    assert failed == {
        "offset_log_ranges.not_below_log_start",
        "offset_log_ranges.not_above_log_end",
        "offsets.commit_timestamp_not_after_as_of",
        "offsets.metadata_within_max_bytes",
        "groups.stable_has_members_and_protocol",
        "live_crosscheck.offsets_agree",
        "live_crosscheck.groups_agree",
        "groups.group_in_partition_for",
    }
    # within the skew, so the far-future sanity check still passes
    assert report.outcome("offsets.commit_timestamp_sane").success
    mismatch = report.outcome("live_crosscheck.offsets_agree").sample
    assert [r["partition"] for r in mismatch] == [2]  # the newer commit is not a mismatch


def test_data_docs_escape_values_and_stay_local(report: ValidationReport) -> None:
    site = report.data_docs_index.parent
    pages = list(site.rglob("*.html"))
    assert len(pages) > 5
    assert external_references(site) == []
    shown = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "<img src=x" not in text, page
        assert not re.search(r"<script[^>]*src=[\"']https?:", text), page
        shown += text.count("&lt;img src=x onerror=alert(1)&gt;")
    assert shown >= 1  # the failing partition_for check shows the group id, as text
    assert (site / "static/vendor/bootstrap/css/bootstrap.min.css").is_file()


def test_data_partitions_the_caller_has_take_no_spark_job(spark: Any, tmp_path: Path) -> None:
    """The offsets' (topic, partition) given by the caller: the same bounds table, built without a job."""
    tables = make_tables(spark, _rows())
    log_dir = str(_data_log_dir(tmp_path / "logdir"))
    found = operator_check_tables(spark, tables, log_dir=log_dir)["offset_log_ranges"].collect()
    keys = sorted({(o["topic"], o["partition"]) for o in _rows()["offsets"]}, key=str)
    sc = spark.sparkContext
    sc.setJobGroup("offsets-keys-given", "operator tables from the caller's keys")
    try:
        given = operator_check_tables(spark, tables, log_dir=log_dir, data_partitions=keys)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert sc.statusTracker().getJobIdsForGroup("offsets-keys-given") == []
    assert sorted(given["offset_log_ranges"].collect()) == sorted(found) != []
