"""The topic's own checks: red when any partition is CRITICAL, partitions worst first, remedies as code."""

from __future__ import annotations

from dagster import AssetCheckSeverity
from offsetops.checks.topic_checks import not_evaluated, topic_cleaner_result, topic_expiration_result

REMEDY = "abort it with kafka-transactions.sh --bootstrap-server <broker> find-hanging --broker-id <leader>"


def _partition(p: int, verdict: str, code: str | None, size: int) -> dict:
    reasons = (
        [] if code is None else [{"severity": verdict, "code": code, "message": f"m{p}", "remedy": REMEDY}]
    )
    return {
        "partition": p,
        "verdict": verdict,
        "reasons": reasons,
        "size_bytes": size,
        "dirty_ratio": 0.0,
    }


AUDIT = {
    "verdict": "CRITICAL",
    "reasons": [],
    "partitions": [
        _partition(7, "DEGRADED", "cleaning_due", 3_000_000),
        _partition(6, "DEGRADED", "hanging_transaction", 300_000),
        _partition(47, "CRITICAL", "hanging_transaction", 2_000_000),
        _partition(1, "HEALTHY", None, 9_000_000),
    ],
}


def test_a_critical_partition_fails_the_topic_at_error_worst_first() -> None:
    result = topic_cleaner_result(AUDIT)
    assert not result.passed and result.severity == AssetCheckSeverity.ERROR
    assert result.metadata["worst_first"].value == "47, 6, 7"
    lines = result.description.splitlines()
    assert lines[0].startswith("**__consumer_offsets is CRITICAL**: 1 critical, 2 degraded of 4")
    assert [line.split()[2] for line in lines[1:]] == ["47", "6", "7"]
    # the remedy's command survives Markdown: a code span, placeholders verbatim
    assert "`kafka-transactions.sh --bootstrap-server <broker> find-hanging --broker-id <leader>`" in lines[1]


def test_a_healthy_topic_passes_and_a_missing_report_is_not_health() -> None:
    healthy = {"verdict": "HEALTHY", "reasons": [], "partitions": [_partition(1, "HEALTHY", None, 1)]}
    assert topic_cleaner_result(healthy).passed
    missing = not_evaluated("topic_cleaner_verdict", "audit")
    assert not missing.passed and missing.severity == AssetCheckSeverity.WARN


def test_expiration_is_degraded_at_warn_and_names_groups_soonest_first() -> None:
    at_risk = [
        {"group_id": "a*b*", "partition": 3, "offsets": 4, "first_expiry_in": "1 h"},
        {"group_id": "c", "partition": 9, "offsets": 2, "first_expiry_in": "2 h"},
    ]
    result = topic_expiration_result("DEGRADED", at_risk, 0)
    assert not result.passed and result.severity == AssetCheckSeverity.WARN
    assert result.metadata["verdict"].value == "DEGRADED"
    assert "`a*b*` (partition 3, 4 offsets, first in 1 h), `c` (partition 9" in result.description
    assert topic_expiration_result("CRITICAL", [], 2).severity == AssetCheckSeverity.ERROR
