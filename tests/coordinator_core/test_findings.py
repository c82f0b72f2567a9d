"""The one findings model: vocabulary, the mappings to each surface, the worst-first order, and remedies."""

from __future__ import annotations

from offsetops.coordinator_core.findings import (
    CRITICAL,
    DEGRADED,
    HEALTHY,
    Finding,
    and_more,
    dagster_severity,
    finding_key,
    partition_findings,
    prometheus_value,
    remedy_html,
    remedy_markdown,
    remedy_parts,
    remedy_slack,
    severity_of_level,
    slack_level,
    worst,
    worst_first,
)

HANGING = "hanging_transaction"
DUE = "cleaning_due"
REMEDY = (
    "abort it with kafka-transactions.sh --bootstrap-server <broker> find-hanging --broker-id <leader>, "
    "then kafka-transactions.sh --bootstrap-server <broker> abort --topic __consumer_offsets --partition 47 "
    "--start-offset 5479"
)


def _row(partition: int, verdict: str, code: str | None, size: int) -> dict:
    reasons = [] if code is None else [{"severity": verdict, "code": code, "message": "m", "remedy": "r"}]
    return {"partition": partition, "verdict": verdict, "reasons": reasons, "size_bytes": size}


def test_one_vocabulary_mapped_once_to_each_surface() -> None:
    assert [dagster_severity(s) for s in (DEGRADED, CRITICAL)] == ["WARN", "ERROR"]
    assert [slack_level(s) for s in (HEALTHY, DEGRADED, CRITICAL)] == ["ok", "warning", "critical"]
    assert [severity_of_level(slack_level(s)) for s in (HEALTHY, DEGRADED, CRITICAL)] == [
        HEALTHY,
        DEGRADED,
        CRITICAL,
    ]
    assert [prometheus_value(s) for s in (HEALTHY, DEGRADED, CRITICAL, "bogus")] == [0, 1, 2, 2]
    assert worst([HEALTHY, DEGRADED]) == DEGRADED and worst([]) == HEALTHY


def test_worst_first_is_verdict_then_what_blocks_cleaning_then_size() -> None:
    """The demo's shape: a CRITICAL pinned partition with dirty ratio 0, two DEGRADED hanging
    transactions (small) and three DEGRADED partitions only due for cleaning (large)."""
    rows = [
        _row(6, DEGRADED, HANGING, 355_000),
        _row(7, DEGRADED, DUE, 3_200_000),
        _row(26, DEGRADED, HANGING, 459_000),
        _row(28, DEGRADED, DUE, 3_300_000),
        _row(39, DEGRADED, DUE, 4_500_000),
        _row(47, CRITICAL, HANGING, 2_500_000),
        _row(3, HEALTHY, None, 9_000_000),
    ]
    assert [r["partition"] for r in worst_first(rows)] == [47, 26, 6, 39, 28, 7, 3]
    # the same rows in any order give the same order (the key is total)
    assert worst_first(reversed(rows)) == worst_first(rows)


def test_findings_of_an_audit_follow_the_partition_order_with_topic_findings_ahead() -> None:
    rows = [_row(6, DEGRADED, HANGING, 10), _row(47, CRITICAL, HANGING, 5)]
    topic = [{"severity": DEGRADED, "code": "slow_cleaning", "message": "m", "remedy": "r"}]
    found = partition_findings(rows, topic)
    assert [(f.partition, f.code) for f in found] == [(47, HANGING), (None, "slow_cleaning"), (6, HANGING)]


def test_groups_losing_data_rank_by_the_soonest_expiry() -> None:
    late = Finding(DEGRADED, "offsets_expiring", "t", "r", partition=1, groups=("a",), expires_at_ms=900)
    soon = Finding(DEGRADED, "offsets_expiring", "t", "r", partition=9, groups=("b",), expires_at_ms=100)
    lost = Finding(CRITICAL, "offsets_expired", "t", "r", partition=5, groups=("c",))
    assert sorted([late, soon, lost], key=finding_key) == [lost, soon, late]


def test_a_list_cut_for_space_says_how_many_it_left_out() -> None:
    assert and_more([47, 26, 6, 39, 28, 7], 5) == "47, 26, 6, 39, 28 and 1 more"
    assert and_more([1, 2], 5) == "1, 2"
    assert and_more(["a", "b"], 0) == "2 more"


def test_remedy_commands_are_found_with_their_placeholders() -> None:
    commands = [text for is_cmd, text in remedy_parts(REMEDY) if is_cmd]
    assert commands == [
        "kafka-transactions.sh --bootstrap-server <broker> find-hanging --broker-id <leader>",
        "kafka-transactions.sh --bootstrap-server <broker> abort --topic __consumer_offsets --partition 47 "
        "--start-offset 5479",
    ]
    assert "".join(text for _, text in remedy_parts(REMEDY)) == REMEDY
    assert [t for c, t in remedy_parts("see (offsetops reload --partition 7 lists them)") if c] == [
        "offsetops reload --partition 7"
    ]


def test_placeholders_survive_every_renderer() -> None:
    md = remedy_markdown(REMEDY)
    assert "`kafka-transactions.sh --bootstrap-server <broker> find-hanging --broker-id <leader>`" in md
    assert "<code>kafka-transactions.sh --bootstrap-server &lt;broker&gt; find-hanging" in remedy_html(REMEDY)
    assert (
        "`kafka-transactions.sh --bootstrap-server &lt;broker&gt; find-hanging --broker-id &lt;leader&gt;`"
        in (remedy_slack(REMEDY))
    )
