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

from assets.alerting.sensors import offsetops_alerts, slack_on_run_failure
from assets.resources import SlackResource, StateResource
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
            "cleaner_stalled: no checkpoint progress for 2 days"
        )
        assert "restart the log cleaner thread" in json.dumps(posts[0].blocks)

        # A later audit of partition 7 only, HEALTHY: one RESOLVED, nothing else.
        _report_audit(instance, {7: "HEALTHY"})
        ctx = build_sensor_context(instance=instance, cursor=ctx.cursor, resources=resources)
        offsetops_alerts(ctx)
        posts = slack_server.requests_to("chat.postMessage")
        assert len(posts) == 2
        assert posts[1].body["text"] == (
            "[RESOLVED] Log Cleaner HEALTHY again on 1 partition of __consumer_offsets (partition 7)"
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
