"""The sensors against the loopback Slack server: a forced run failure pages exactly once; the alert
sensor pages on a CRITICAL audit and sends RESOLVED when it clears; no token means outbox, no failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    DagsterInstance,
    MaterializeResult,
    StaticPartitionsDefinition,
    asset,
    build_run_status_sensor_context,
    build_sensor_context,
    job,
    materialize,
    op,
)
from offsetops.assets.alerting.sensors import offsetops_alerts, slack_on_run_failure
from offsetops.assets.resources import SlackResource, StateResource

from tests.support.slack_server import SlackTestServer
from tests.support.slack_server import slack_server_fixture as slack_server_fixture

TOKEN = "xoxb-test-token"


@op
def explode() -> None:
    raise RuntimeError("simulated failure: broker log dir unreadable")


@job
def doomed_job() -> None:
    explode()


def _failed_run(instance: DagsterInstance) -> tuple[Any, Any]:
    result = doomed_job.execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    return result.dagster_run, result.get_run_failure_event()


def _failure_context(
    instance: DagsterInstance, run: Any, event: Any, slack: SlackResource, state: StateResource
):
    return build_run_status_sensor_context(
        sensor_name="slack_on_run_failure",
        dagster_instance=instance,
        dagster_run=run,
        dagster_event=event,
        resources={"slack": slack, "state": state},
    ).for_run_failure()


def test_forced_failure_posts_exactly_one_slack_message(
    slack_server: SlackTestServer, tmp_path: Path
) -> None:
    slack = SlackResource(
        token=TOKEN, channel="#oncall", base_url=slack_server.base_url, dagster_url="http://dagster.test:3000"
    )
    state = StateResource(output_dir=str(tmp_path))
    with DagsterInstance.ephemeral() as instance:
        run, event = _failed_run(instance)
        slack_on_run_failure(_failure_context(instance, run, event, slack, state))
        # The daemon may hand the same failure over again (restart, retry): still one page.
        slack_on_run_failure(_failure_context(instance, run, event, slack, state))
    posts = slack_server.requests_to("chat.postMessage")
    assert len(posts) == 1
    body = posts[0].body
    assert body["channel"] == "#oncall"
    assert "doomed_job" in body["text"]
    blob = json.dumps(posts[0].blocks)
    assert f"http://dagster.test:3000/runs/{run.run_id}" in blob
    assert "simulated failure: broker log dir unreadable" in blob
    assert slack.notifier(state).pending() == []


def test_missing_token_goes_to_the_outbox_and_does_not_raise(
    slack_server: SlackTestServer, tmp_path: Path
) -> None:
    slack = SlackResource(token=None, base_url=slack_server.base_url)
    state = StateResource(output_dir=str(tmp_path))
    with DagsterInstance.ephemeral() as instance:
        run, event = _failed_run(instance)
        slack_on_run_failure(_failure_context(instance, run, event, slack, state))
    assert slack_server.requests_to("chat.postMessage") == []
    lines = state.outbox_file.read_text().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["key"] == f"run-failure:doomed_job:{run.run_id}"
    assert entry["error"] == "missing_token"


def test_invalid_token_goes_to_the_outbox(slack_server: SlackTestServer, tmp_path: Path) -> None:
    slack = SlackResource(token="xoxb-revoked", base_url=slack_server.base_url, max_retries=0)
    state = StateResource(output_dir=str(tmp_path))
    with DagsterInstance.ephemeral() as instance:
        run, event = _failed_run(instance)
        slack_on_run_failure(_failure_context(instance, run, event, slack, state))
    assert [r.status for r in slack_server.requests_to("chat.postMessage")] == [200]
    assert json.loads(state.outbox_file.read_text().splitlines()[0])["error"] == "invalid_auth"


def _record(instance: DagsterInstance, name: str, metadata: dict[int, dict[str, Any]]) -> None:
    """Materialize a stand-in for asset ``name`` recording ``metadata`` per partition."""

    @asset(name=name, partitions_def=StaticPartitionsDefinition([str(p) for p in range(50)]))
    def stand_in(context) -> MaterializeResult:  # untyped: string annotations are rejected by dagster
        return MaterializeResult(metadata=metadata[int(context.partition_key)])

    for partition in metadata:
        assert materialize([stand_in], instance=instance, partition_key=str(partition)).success


def _report_audit(instance: DagsterInstance, verdicts: dict[int, str]) -> None:
    recorded = {}
    for partition, verdict in verdicts.items():
        findings = (
            [
                {
                    "partition": partition,
                    "severity": "CRITICAL",
                    "code": "cleaner_stalled",
                    "message": "no checkpoint progress for 2 days",
                    "remedy": "restart the log cleaner thread",
                }
            ]
            if verdict == "CRITICAL"
            else []
        )
        recorded[partition] = {
            "verdict": verdict,
            "partition_verdicts": {str(partition): verdict},
            "findings": findings,
            "max_dirty_ratio": 0.9,
        }
    _record(instance, "cleaner_audit", recorded)


def test_alert_sensor_pages_critical_audit_and_resolves_it(
    slack_server: SlackTestServer, tmp_path: Path
) -> None:
    slack = SlackResource(token=TOKEN, channel="#oncall", base_url=slack_server.base_url)
    resources = {"slack": slack, "state": StateResource(output_dir=str(tmp_path))}
    with DagsterInstance.ephemeral() as instance:
        _report_audit(instance, {3: "HEALTHY", 7: "CRITICAL"})
        ctx = build_sensor_context(instance=instance, resources=resources)
        offsetops_alerts(ctx)
        posts = slack_server.requests_to("chat.postMessage")
        assert len(posts) == 1
        assert posts[0].body["text"] == (
            "[CRITICAL] Log Cleaner CRITICAL on 1 partition of __consumer_offsets (partition 7): "
            "`cleaner_stalled: no checkpoint progress for 2 days` · reasons `cleaner_stalled` · "
            "Operator report: `report.html` in the reports dir"
        )
        assert "restart the log cleaner thread" in json.dumps(posts[0].blocks)

        # A later audit of partition 7 only, HEALTHY: one RESOLVED, nothing else.
        _report_audit(instance, {7: "HEALTHY"})
        ctx = build_sensor_context(instance=instance, cursor=ctx.cursor, resources=resources)
        offsetops_alerts(ctx)
        posts = slack_server.requests_to("chat.postMessage")
        assert len(posts) == 2
        assert posts[1].body["text"] == (
            "[RESOLVED] Log Cleaner HEALTHY again on 1 partition of __consumer_offsets (partition 7) · "
            "Operator report: `report.html` in the reports dir"
        )


def test_alert_sensor_pages_error_level_validation_failure(
    slack_server: SlackTestServer, tmp_path: Path
) -> None:
    slack = SlackResource(token=TOKEN, channel="#oncall", base_url=slack_server.base_url)
    resources = {"slack": slack, "state": StateResource(output_dir=str(tmp_path))}
    with DagsterInstance.ephemeral() as instance:
        failed = [
            {"check_id": "offsets.key_unique", "severity": "error", "unexpected_count": 2},
            {"check_id": "members.assignment_subscribed", "severity": "warning", "unexpected_count": 1},
        ]
        _record(
            instance,
            "cache_validation",
            {0: {"success_error_level": False, "failed_checks": failed, "data_docs": "/tmp/dd/index.html"}},
        )
        offsetops_alerts(build_sensor_context(instance=instance, resources=resources))
    posts = slack_server.requests_to("chat.postMessage")
    assert len(posts) == 1
    blob = json.dumps(posts[0].blocks)
    assert "offsets.key_unique" in blob and "members.assignment_subscribed" not in blob


@pytest.mark.parametrize("dedupe", [3600])
def test_alert_sensor_dedupes_across_ticks(
    slack_server: SlackTestServer, tmp_path: Path, dedupe: int
) -> None:
    slack = SlackResource(token=TOKEN, base_url=slack_server.base_url, dedupe_window_s=dedupe)
    resources = {"slack": slack, "state": StateResource(output_dir=str(tmp_path))}
    with DagsterInstance.ephemeral() as instance:
        _report_audit(instance, {5: "CRITICAL"})
        ctx = build_sensor_context(instance=instance, resources=resources)
        offsetops_alerts(ctx)
        _report_audit(instance, {5: "CRITICAL"})  # the next hourly audit: still CRITICAL
        offsetops_alerts(build_sensor_context(instance=instance, cursor=ctx.cursor, resources=resources))
    assert len(slack_server.requests_to("chat.postMessage")) == 1


# -- the alert lifecycle over sequences of audit and plan states -----------------------------------
# Each step materializes what the assets would record (audit verdicts; a real expiration plan of
# real caches, written as the expiration_plan asset writes it), runs the sensor, and returns the
# exact texts Slack received in that step.

HOUR_MS = 3_600_000
RETENTION_MS = 7 * 24 * HOUR_MS
HORIZON_MS = 24 * HOUR_MS
T0 = 1_700_000_000_000  # when the groups last committed
PLAN_PARTITION = 3
RATIO = {"CRITICAL": 0.9, "DEGRADED": 0.6, "HEALTHY": 0.1}


def _standalone_group(group_id: str, committed_at: int, offsets: int = 2):
    """A consumer that assigns partitions itself and commits (no GroupMetadata record)."""
    from offsetops.coordinator_core.cache import GroupMetadata, OffsetAndMetadata

    return GroupMetadata(
        group_id=group_id,
        state="Empty",
        protocol_type=None,
        generation=0,
        offsets={
            ("orders", n): OffsetAndMetadata(100 + n, None, "", committed_at, None, n) for n in range(offsets)
        },
    )


class Lifecycle:
    """One Dagster instance, one state dir, one loopback Slack: the sensor as a deployment runs it."""

    def __init__(
        self, instance: DagsterInstance, server: SlackTestServer, tmp_path: Path, budget_s: float = 20
    ) -> None:
        self.instance = instance
        self.server = server
        self.slack = SlackResource(
            token=TOKEN,
            channel="#oncall",
            base_url=server.base_url,
            dagster_url="https://dagster.example.com",
            reports_url="https://reports.example.com/offsetops/reports",
            budget_s=budget_s,
        )
        self.state = StateResource(output_dir=str(tmp_path))
        self.cursor: str | None = None

    def audit(self, verdicts: dict[int, str]) -> None:
        """A cleaner audit of these partitions, each materialization carrying only its own facts
        (its verdict, a findings table without a partition column, its dirty ratio)."""
        from dagster import MetadataValue, TableColumn, TableRecord, TableSchema

        columns = TableSchema([TableColumn(c) for c in ("severity", "code", "message", "remedy")])
        recorded = {}
        for partition, verdict in verdicts.items():
            rows = []
            if verdict != "HEALTHY":
                rows.append(
                    TableRecord(
                        {
                            "severity": verdict,
                            "code": "dirty_ratio_high" if verdict == "DEGRADED" else "cleaner_stalled",
                            "message": f"dirty ratio {RATIO[verdict]} on partition {partition}",
                            "remedy": "restart the log cleaner thread"
                            if verdict == "CRITICAL"
                            else "watch the cleaner backlog",
                        }
                    )
                )
            recorded[partition] = {
                "verdict": verdict,
                "findings": MetadataValue.table(rows, schema=columns),
                "dirty_ratio": MetadataValue.float(RATIO[verdict] + partition / 1000),
                # the larger partition is the worse one at the same verdict and finding (the one order)
                "size_bytes": MetadataValue.int(1000 * partition),
                "as_of": MetadataValue.timestamp(1_763_625_600.0),
            }
        _record(self.instance, "cleaner_audit", recorded)

    def plan(self, groups: dict[str, int], now_ms: int) -> None:
        """The expiration plan of partition 3 holding ``groups`` (id -> last commit), as of ``now_ms``."""
        from dagster import AssetKey
        from offsetops.assets.expiration import _partition_plan_path, partition_plan_doc
        from offsetops.assets.metadata import write_json
        from offsetops.coordinator_core.cache import CoordinatorCache, LoadStats
        from offsetops.coordinator_core.expiration import plan_expiration

        _record(self.instance, "expiration_plan", {PLAN_PARTITION: {"as_of": str(now_ms)}})
        run_id = self.instance.fetch_materializations(AssetKey("expiration_plan"), limit=1).records[0].run_id
        cache = CoordinatorCache(
            partition=PLAN_PARTITION,
            groups={g: _standalone_group(g, ts) for g, ts in groups.items()},
            stats=LoadStats(),
        )
        plan = plan_expiration(
            [cache], now_ms=now_ms, retention_ms=RETENTION_MS, forecast_horizon_ms=HORIZON_MS
        )
        write_json(
            _partition_plan_path(self.state, PLAN_PARTITION), partition_plan_doc(plan, cache, run_id=run_id)
        )

    def evaluate(self) -> list[str]:
        """One sensor tick; the texts Slack received during it."""
        before = len(self.server.messages)
        ctx = build_sensor_context(
            instance=self.instance, cursor=self.cursor, resources={"slack": self.slack, "state": self.state}
        )
        offsetops_alerts(ctx)
        self.cursor = ctx.cursor
        return [m["text"] for m in self.server.messages[before:]]

    def last_blocks(self) -> str:
        return json.dumps(self.server.messages[-1]["blocks"])


@pytest.fixture
def lifecycle(slack_server: SlackTestServer, tmp_path: Path):
    with DagsterInstance.ephemeral() as instance:
        yield Lifecycle(instance, slack_server, tmp_path)


REPORT = " · <https://reports.example.com/offsetops/reports/report.html|Operator report>"
AT_RISK = (
    "[DEGRADED] 1 consumer group will lose committed offsets soon (partition 3): `payments` · reasons "
    "`offsets_expiring`" + REPORT
)
LOST = (
    "[CRITICAL] 1 consumer group lost committed offsets (partition 3): `payments` · reasons "
    "`offsets_expired`, `group_deleted`" + REPORT
)


def test_at_risk_then_expired_raises_lost_offsets_and_never_resolved(lifecycle: Lifecycle) -> None:
    expiry = T0 + RETENTION_MS
    lifecycle.plan({"payments": T0, "billing": expiry + 10 * HOUR_MS}, now_ms=expiry - 5 * HOUR_MS)
    assert lifecycle.evaluate() == [AT_RISK]
    blocks = lifecycle.last_blocks()
    assert "2 committed offset(s) expire within 1d, first at 2023-11-21T22:13:20+00:00 (in 5h)" in blocks
    assert "https://dagster.example.com/assets/expiration_plan?view=partitions&partition=3" in blocks

    # The plan made after the offsets expired: 2 offset tombstones and a dead group.
    lifecycle.plan({"payments": T0, "billing": expiry + 10 * HOUR_MS}, now_ms=expiry + HOUR_MS)
    assert lifecycle.evaluate() == [LOST]
    blocks = lifecycle.last_blocks()
    assert "2 committed offset(s) expired (no_protocol_type_commit_timestamp)" in blocks
    assert "no committed offset remains, so the group itself is deleted" in blocks
    assert "auto.offset.reset" in blocks
    assert "https://reports.example.com/offsetops/reports/report.html" in blocks

    # The broker's cleanup wrote the tombstones: the group is gone from the log. Still lost, silently.
    lifecycle.plan({"billing": expiry + 10 * HOUR_MS}, now_ms=expiry + 2 * HOUR_MS)
    assert lifecycle.evaluate() == []
    lifecycle.plan({"billing": expiry + 10 * HOUR_MS}, now_ms=expiry + 3 * HOUR_MS)
    assert lifecycle.evaluate() == []
    assert not any("RESOLVED" in m["text"] for m in lifecycle.server.messages)


def test_a_group_at_risk_that_vanishes_lost_its_offsets(lifecycle: Lifecycle) -> None:
    """On a live cluster the broker's own cleanup removes expired offsets before any plan shows them."""
    expiry = T0 + RETENTION_MS
    lifecycle.plan({"payments": T0, "billing": T0 + 3 * HORIZON_MS}, now_ms=expiry - HOUR_MS)
    assert lifecycle.evaluate() == [AT_RISK]
    lifecycle.plan({"billing": T0 + 3 * HORIZON_MS}, now_ms=expiry + HOUR_MS)
    assert lifecycle.evaluate() == [LOST.replace("`offsets_expired`, ", "")]  # gone: deleted, not planned
    assert "the group is gone from __consumer_offsets" in lifecycle.last_blocks()


def test_a_group_at_risk_that_commits_again_resolves(lifecycle: Lifecycle) -> None:
    expiry = T0 + RETENTION_MS
    lifecycle.plan({"payments": T0}, now_ms=expiry - HOUR_MS)
    assert lifecycle.evaluate() == [AT_RISK]
    lifecycle.plan({"payments": expiry - HOUR_MS / 2}, now_ms=expiry)  # the consumer committed again
    assert lifecycle.evaluate() == [
        "[RESOLVED] 1 consumer group committed offsets again, no longer at risk (partition 3): `payments`"
        + REPORT
    ]


def test_the_same_data_evaluated_twice_sends_nothing_new(lifecycle: Lifecycle) -> None:
    expiry = T0 + RETENTION_MS
    lifecycle.audit({7: "CRITICAL", 8: "DEGRADED", 9: "HEALTHY"})
    lifecycle.plan({"payments": T0}, now_ms=expiry - HOUR_MS)
    first = lifecycle.evaluate()
    assert first == [
        "[CRITICAL] Log Cleaner CRITICAL on 1 partition of __consumer_offsets (partition 7): "
        "`cleaner_stalled: dirty ratio 0.9 on partition 7` · reasons `cleaner_stalled`" + REPORT,
        "[DEGRADED] Log Cleaner DEGRADED on 1 partition of __consumer_offsets (partition 8): "
        "`dirty_ratio_high: dirty ratio 0.6 on partition 8` · reasons `dirty_ratio_high`" + REPORT,
        AT_RISK,
    ]
    # The same audit and plan again (re-running the demo, a retried run): new materializations, same data.
    lifecycle.audit({7: "CRITICAL", 8: "DEGRADED", 9: "HEALTHY"})
    lifecycle.plan({"payments": T0}, now_ms=expiry - HOUR_MS)
    assert lifecycle.evaluate() == []
    assert lifecycle.evaluate() == []  # and a tick with nothing new


def test_healthy_critical_healthy_sends_one_page_and_one_recovery(lifecycle: Lifecycle) -> None:
    lifecycle.audit({47: "HEALTHY", 6: "HEALTHY"})
    assert lifecycle.evaluate() == []
    lifecycle.audit({47: "CRITICAL", 6: "HEALTHY"})
    assert lifecycle.evaluate() == [
        "[CRITICAL] Log Cleaner CRITICAL on 1 partition of __consumer_offsets (partition 47): "
        "`cleaner_stalled: dirty ratio 0.9 on partition 47` · reasons `cleaner_stalled`" + REPORT
    ]
    blocks = lifecycle.last_blocks()
    assert "https://dagster.example.com/assets/cleaner_audit?view=partitions&partition=47" in blocks
    assert "restart the log cleaner thread" in blocks
    assert "*As of:*\\n2025-11-20T08:00:00+00:00" in blocks
    lifecycle.audit({6: "HEALTHY"})  # partition 47 not re-audited: no evidence, no change
    assert lifecycle.evaluate() == []
    lifecycle.audit({47: "HEALTHY"})
    assert lifecycle.evaluate() == [
        "[RESOLVED] Log Cleaner HEALTHY again on 1 partition of __consumer_offsets (partition 47)" + REPORT
    ]
    assert "was CRITICAL for" in lifecycle.last_blocks()
    lifecycle.audit({47: "HEALTHY"})
    assert lifecycle.evaluate() == []
    assert len(lifecycle.server.messages) == 2


def test_warning_to_critical_is_an_escalation_not_a_recovery(lifecycle: Lifecycle) -> None:
    lifecycle.audit({12: "DEGRADED"})
    assert lifecycle.evaluate() == [
        "[DEGRADED] Log Cleaner DEGRADED on 1 partition of __consumer_offsets (partition 12): "
        "`dirty_ratio_high: dirty ratio 0.6 on partition 12` · reasons `dirty_ratio_high`" + REPORT
    ]
    lifecycle.audit({12: "CRITICAL"})
    assert lifecycle.evaluate() == [
        "[ESCALATED to CRITICAL] Log Cleaner CRITICAL on 1 partition of __consumer_offsets (was DEGRADED) "
        "(partition 12): `cleaner_stalled: dirty ratio 0.9 on partition 12` · reasons `cleaner_stalled`"
        + REPORT
    ]
    assert lifecycle.server.messages[-1]["blocks"][0]["text"]["text"].startswith(
        ":arrow_double_up: :rotating_light: ESCALATED to CRITICAL:"
    )


def test_critical_to_warning_is_a_downgrade_that_stays_open(lifecycle: Lifecycle) -> None:
    """On-call wants to hear that the urgency dropped and what still needs doing; not an all-clear."""
    lifecycle.audit({12: "CRITICAL", 30: "CRITICAL"})
    assert len(lifecycle.evaluate()) == 1
    lifecycle.audit({12: "DEGRADED", 30: "CRITICAL"})
    assert lifecycle.evaluate() == [
        "[DOWNGRADED to DEGRADED, not resolved] Log Cleaner DEGRADED on 1 partition of __consumer_offsets "
        "(was CRITICAL) (partition 12): `dirty_ratio_high: dirty ratio 0.6 on partition 12` · reasons "
        "`dirty_ratio_high`" + REPORT
    ]
    blocks = lifecycle.last_blocks()
    assert "watch the cleaner backlog" in blocks and "No action is needed" not in blocks
    lifecycle.audit({12: "HEALTHY"})
    assert lifecycle.evaluate() == [
        "[RESOLVED] Log Cleaner HEALTHY again on 1 partition of __consumer_offsets (partition 12)" + REPORT
    ]


def test_several_partitions_are_one_message_worst_first(lifecycle: Lifecycle) -> None:
    lifecycle.audit({6: "CRITICAL", 47: "CRITICAL", 20: "CRITICAL"})
    assert lifecycle.evaluate() == [
        "[CRITICAL] Log Cleaner CRITICAL on 3 partitions of __consumer_offsets (partitions 47, 20, 6): "
        "`cleaner_stalled: dirty ratio 0.9 on partition 47` · reasons `cleaner_stalled`" + REPORT
    ]


def test_hostile_group_ids_reach_slack_escaped_end_to_end(lifecycle: Lifecycle) -> None:
    hostile = "<!channel> pay&ments <http://evil.example|login>\n\x1b[2J`"
    expiry = T0 + RETENTION_MS
    lifecycle.plan({hostile: T0}, now_ms=expiry + HOUR_MS)
    texts = lifecycle.evaluate()
    assert texts == [
        "[CRITICAL] 1 consumer group lost committed offsets (partition 3): "
        "`&lt;!channel&gt; pay&amp;ments &lt;http://evil.example|login&gt;\\n\\x1b[2J\\x60` · reasons "
        "`offsets_expired`, `group_deleted`" + REPORT
    ]
    wire = json.dumps(lifecycle.server.requests_to("chat.postMessage")[-1].body)
    for raw in ("<!channel>", "<http://evil", "\\n\\u001b", "\\u001b"):
        assert raw not in wire
    assert "`&lt;!channel&gt; pay&amp;ments &lt;http://evil.example|login&gt;\\\\n\\\\x1b[2J\\\\x60`" in wire


def test_a_page_slack_did_not_take_goes_out_on_the_next_tick_even_with_nothing_new(
    slack_server: SlackTestServer, tmp_path: Path
) -> None:
    with DagsterInstance.ephemeral() as instance:
        lifecycle = Lifecycle(instance, slack_server, tmp_path, budget_s=1.0)
        lifecycle.audit({47: "CRITICAL"})
        slack_server.hang_next(1)
        assert lifecycle.evaluate() == []  # Slack never answered: the page waits in the outbox
        assert [e["text"][:40] for e in lifecycle.slack.notifier(lifecycle.state).pending()] == [
            "[CRITICAL] Log Cleaner CRITICAL on 1 par"
        ]
        assert lifecycle.evaluate() == [  # no new materialization, but the outbox is delivered
            "[CRITICAL] Log Cleaner CRITICAL on 1 partition of __consumer_offsets (partition 47): "
            "`cleaner_stalled: dirty ratio 0.9 on partition 47` · reasons `cleaner_stalled`" + REPORT
        ]
        assert "this may repeat a message already posted" in lifecycle.last_blocks()
        assert lifecycle.evaluate() == []
        assert lifecycle.slack.notifier(lifecycle.state).pending() == []


def test_a_lost_group_is_paged_once_however_long_the_evidence_stays(lifecycle: Lifecycle) -> None:
    from offsetops.assets.alerting.sensors import evaluate_alerts

    def evaluate(at_s: float) -> list[str]:
        before = len(lifecycle.server.messages)
        evaluate_alerts(lifecycle.instance, lifecycle.slack, lifecycle.state, now=at_s)
        return [m["text"] for m in lifecycle.server.messages[before:]]

    day_s = 24 * 3600.0
    expiry = T0 + RETENTION_MS
    lifecycle.plan({"payments": T0}, now_ms=expiry + HOUR_MS)
    assert evaluate(T0 / 1000) == [LOST]
    # An offline snapshot nobody executes keeps showing the tombstones: seen again, never re-paged.
    assert evaluate(T0 / 1000 + 8 * day_s) == []
    # The group is gone from the log: remembered as lost, then forgotten without a message.
    lifecycle.plan({}, now_ms=expiry + 9 * 24 * HOUR_MS)
    assert evaluate(T0 / 1000 + 9 * day_s) == []
    assert evaluate(T0 / 1000 + 17 * day_s) == []
    assert lifecycle.slack.notifier(lifecycle.state).store.load().conditions == {}


def test_topic_wide_findings_open_and_resolve_from_the_audit_state(lifecycle: Lifecycle) -> None:
    from offsetops.assets.metadata import write_json

    topic = lifecycle.state.audit_history_dir / "latest" / "topic.json"
    finding = {
        "severity": "CRITICAL",
        "code": "cleaner_thread_dead",
        "message": "the broker log says the log cleaner thread stopped",
        "remedy": "restart the broker",
    }
    lifecycle.audit({0: "HEALTHY"})
    assert lifecycle.evaluate() == []  # no topic-wide evidence yet: nothing
    write_json(topic, {"reasons": [finding]})
    lifecycle.audit({0: "HEALTHY"})
    assert lifecycle.evaluate() == [
        "[CRITICAL] Log Cleaner (topic-wide) CRITICAL for __consumer_offsets: "
        "`cleaner_thread_dead: the broker log says the log cleaner thread stopped` · reasons "
        "`cleaner_thread_dead`" + REPORT
    ]
    write_json(topic, {"reasons": []})
    lifecycle.audit({0: "HEALTHY"})
    assert lifecycle.evaluate() == [
        "[RESOLVED] Log Cleaner (topic-wide) HEALTHY again for __consumer_offsets" + REPORT
    ]


def test_failover_forecast_warns_worst_first_and_resolves(lifecycle: Lifecycle) -> None:
    from offsetops.assets.metadata import write_json
    from offsetops.coordinator_core.failover import PartitionLoad, forecast_failover

    def report(sizes: dict[int, int]) -> None:
        """The audit report as rebuild_audit_report writes it: the forecast at the default 20 MiB/s."""
        loads = [PartitionLoad(p, size, 10, 100, 5) for p, size in sizes.items()]
        forecast = forecast_failover(loads, threshold_ms=10_000)
        write_json(lifecycle.state.reports_path / "cleaner_audit.json",
                   {"audited_at_ms": T0, "partitions": [], "failover": forecast.to_json()})  # fmt: skip
        lifecycle.audit(dict.fromkeys(sizes, "HEALTHY"))

    mib = 2**20
    report({0: 10 * mib, 8: 640 * mib, 1: 300 * mib})  # 0.5 s, 32 s and 15 s at 20 MiB/s
    assert lifecycle.evaluate() == [
        "[DEGRADED] coordinator failover would stall consumer groups on 2 partitions of __consumer_offsets "
        "(partitions 8, 1): `a new coordinator replays 640.0 MiB: about 32.0 s of "
        "COORDINATOR_LOAD_IN_PROGRESS (threshold 10.0 s); replay at 20.0 MiB/s (assumed)` · reasons "
        "`slow_coordinator_load`" + REPORT
    ]
    blocks = lifecycle.last_blocks()
    assert "Partition 8 in Dagster" in blocks and "cleaner_audit" in blocks
    # every partition linked to its page in Dagster, worst first
    assert blocks.index("|__consumer_offsets-8>") < blocks.index("|__consumer_offsets-1>")
    report({0: 10 * mib, 8: 640 * mib, 1: 300 * mib})
    assert lifecycle.evaluate() == []  # the same forecast again: nothing new
    report({0: 10 * mib, 8: 100 * mib, 1: 100 * mib})  # compacted: 5 s each
    assert lifecycle.evaluate() == [
        "[RESOLVED] coordinator failover would load quickly again on 2 partitions of __consumer_offsets "
        "(partitions 1, 8)" + REPORT
    ]
