"""SlackNotifier against a real HTTP server on loopback that speaks the Slack Web API."""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from offsetops.checks.alerting import Alert, SendStatus, SlackNotifier

from tests.support.slack_server import SlackTestServer
from tests.support.slack_server import slack_server_fixture as slack_server_fixture

TOKEN = "xoxb-test-token"
CHANNEL = "#offsetops-oncall"
RUN_URL = "http://dagster.local/runs/4f1c2a"


class FakeClock:
    """Epoch seconds that only move when the test says so."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_notifier(tmp_path: Path, slack_server: SlackTestServer, clock: FakeClock) -> Any:
    def make(token: str | None = TOKEN, **kwargs: Any) -> SlackNotifier:
        kwargs.setdefault("base_url", slack_server.base_url)
        kwargs.setdefault("state_path", tmp_path / "state" / "alerts.json")
        kwargs.setdefault("outbox_path", tmp_path / "outbox.jsonl")
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("max_retries", 2)
        return SlackNotifier(token, CHANNEL, **kwargs)

    return make


def make_alert(key: str = "audit:critical:partition-7", **overrides: Any) -> Alert:
    fields: dict[str, Any] = {
        "key": key,
        "severity": "critical",
        "title": "Log Cleaner stalled on __consumer_offsets",
        "partitions": (7, 12),
        "reason": "Dirty ratio 0.93 for 6h; the cleaner checkpoint has not moved.",
        "remedy": "Check the log-cleaner thread on broker 3 and restart it if it died.",
        "run_url": RUN_URL,
        "details": {"broker": 3, "dirty_ratio": 0.93},
    }
    fields.update(overrides)
    return Alert(**fields)


def outbox_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def block_texts(blocks: list[dict[str, Any]]) -> str:
    """Every text string in a list of blocks, joined, so tests can look for content."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("text", "url") and isinstance(v, str):
                    out.append(v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(blocks)
    return "\n".join(out)


# -- message content -----------------------------------------------------------------------------


def test_message_blocks_carry_severity_partitions_reason_remedy_and_run_link(
    make_notifier: Any, slack_server: SlackTestServer
) -> None:
    alert = make_alert()
    result = make_notifier().send(alert)

    assert result.status is SendStatus.SENT
    posts = slack_server.requests_to("chat.postMessage")
    assert len(posts) == 1
    req = posts[0]
    assert req.headers["Authorization"] == f"Bearer {TOKEN}"
    assert req.body["channel"] == CHANNEL
    assert result.ts == slack_server.messages[0]["ts"]

    assert req.body["text"].startswith("[CRITICAL] Log Cleaner stalled")
    assert "7, 12" in req.body["text"]

    blocks = req.blocks
    header = blocks[0]
    assert header["type"] == "header"
    assert header["text"]["text"] == ":rotating_light: Log Cleaner stalled on __consumer_offsets"

    fields = [f["text"] for f in blocks[1]["fields"]]
    assert fields[0] == "*Severity:*\nCRITICAL"
    assert fields[1] == "*Partitions:*\n7, 12"
    assert "*broker:*\n`3`" in fields  # details are data: code spans

    text = block_texts(blocks)
    assert alert.reason in text
    assert alert.remedy in text
    buttons = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert buttons == [
        {
            "type": "button",
            "text": {"type": "plain_text", "text": "Open Dagster run", "emoji": True},
            "url": RUN_URL,
            "action_id": "open_dagster_run",
        }
    ]
    context = next(b for b in blocks if b["type"] == "context")
    assert f"<{RUN_URL}|Dagster run>" in context["elements"][0]["text"]


def test_single_partition_warning_without_run_url_and_mrkdwn_escaped(
    make_notifier: Any, slack_server: SlackTestServer
) -> None:
    alert = make_alert(
        key="expire:warning:partition-3",
        severity="warning",
        partitions=[3],
        reason="Group <payments> & friends expire in 2h",
        run_url=None,
        details={},
    )
    assert make_notifier().send(alert).sent

    blocks = slack_server.requests_to("chat.postMessage")[0].blocks
    assert blocks[0]["text"]["text"].startswith(":warning: ")
    assert [f["text"] for f in blocks[1]["fields"]] == ["*Severity:*\nWARNING", "*Partition:*\n3"]
    assert "Group &lt;payments&gt; &amp; friends expire in 2h" in block_texts(blocks)
    assert not [b for b in blocks if b["type"] == "actions"]


def test_long_title_is_clipped_to_slack_header_limit(
    make_notifier: Any, slack_server: SlackTestServer
) -> None:
    assert make_notifier().send(make_alert(title="x" * 400, reason="r" * 5000)).sent
    blocks = slack_server.requests_to("chat.postMessage")[0].blocks
    assert len(blocks[0]["text"]["text"]) == 150
    assert all(len(b["text"]["text"]) <= 3000 for b in blocks if b["type"] == "section" and "text" in b)


# -- deduplication -------------------------------------------------------------------------------


def test_same_key_is_not_resent_inside_the_window_and_is_after_it(
    make_notifier: Any, slack_server: SlackTestServer, clock: FakeClock
) -> None:
    notifier = make_notifier(dedupe_window_s=600)
    alert = make_alert()

    assert notifier.send(alert).status is SendStatus.SENT
    clock.advance(599)
    second = notifier.send(alert)
    assert second.status is SendStatus.DEDUPLICATED
    assert "already notified to Slack" in second.reason
    assert len(slack_server.requests) == 1

    clock.advance(1)
    assert notifier.send(alert).status is SendStatus.SENT
    assert len(slack_server.requests_to("chat.postMessage")) == 2
    assert len(slack_server.messages) == 2


def test_different_keys_are_not_deduplicated_together(
    make_notifier: Any, slack_server: SlackTestServer
) -> None:
    notifier = make_notifier()
    assert notifier.send(make_alert("audit:critical:partition-7")).sent
    assert notifier.send(make_alert("audit:critical:partition-8")).sent
    assert len(slack_server.messages) == 2


def test_severity_escalation_is_sent_inside_the_window(
    make_notifier: Any, slack_server: SlackTestServer, clock: FakeClock
) -> None:
    notifier = make_notifier()
    assert notifier.send(make_alert("lag:group-x", severity="warning")).sent
    clock.advance(10)
    assert notifier.send(make_alert("lag:group-x", severity="critical")).sent
    clock.advance(10)
    assert notifier.send(make_alert("lag:group-x", severity="warning")).deduplicated
    assert len(slack_server.messages) == 2


def test_state_survives_a_new_notifier_instance(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path
) -> None:
    alert = make_alert()
    assert make_notifier().send(alert).sent

    state = json.loads((tmp_path / "state" / "alerts.json").read_text())
    assert list(state["firing"]) == [alert.key]
    assert state["firing"][alert.key]["delivered"] is True
    assert not [p for p in (tmp_path / "state").iterdir() if p.name.endswith(".tmp")]

    fresh = make_notifier()  # what the next sensor tick, in a new process, builds
    assert fresh.firing_keys() == [alert.key]
    assert fresh.send(alert).deduplicated
    assert len(slack_server.requests) == 1
    assert fresh.resolve(alert.key).sent
    assert slack_server.messages[-1]["text"].startswith("RESOLVED: ")


def test_unreadable_state_file_is_treated_as_empty(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state_path = tmp_path / "state" / "alerts.json"
    state_path.parent.mkdir(parents=True)
    state_path.write_text("{not json")
    with caplog.at_level(logging.WARNING):
        assert make_notifier().send(make_alert()).sent
    assert "unreadable" in caplog.text
    assert json.loads(state_path.read_text())["version"] == 2


# -- recovery ------------------------------------------------------------------------------------


def test_recovery_is_posted_once_after_the_key_clears(
    make_notifier: Any, slack_server: SlackTestServer, clock: FakeClock
) -> None:
    notifier = make_notifier()
    alert = make_alert()
    notifier.send(alert)
    clock.advance(2 * 3600 + 5 * 60)

    result = notifier.resolve(alert.key)
    assert result.status is SendStatus.SENT
    assert result.kind == "recovery"
    posts = slack_server.requests_to("chat.postMessage")
    assert len(posts) == 2
    recovery = posts[1]
    assert recovery.body["text"] == f"RESOLVED: {alert.title}"
    assert recovery.blocks[0]["text"]["text"] == f":white_check_mark: RESOLVED: {alert.title}"
    text = block_texts(recovery.blocks)
    assert "*Firing for:*\n2h 5m" in text
    assert "*Partitions:*\n7, 12" in text
    assert RUN_URL in text

    again = notifier.resolve(alert.key)
    assert again.status is SendStatus.SKIPPED
    assert len(slack_server.requests) == 2
    assert notifier.firing_keys() == []


def test_no_recovery_for_a_key_that_never_fired(make_notifier: Any, slack_server: SlackTestServer) -> None:
    result = make_notifier().resolve("audit:critical:partition-99")
    assert result.status is SendStatus.SKIPPED
    assert slack_server.requests == []


def test_reconcile_sends_active_and_resolves_cleared_keys_in_scope(
    make_notifier: Any, slack_server: SlackTestServer, clock: FakeClock
) -> None:
    notifier = make_notifier()
    a = make_alert("audit:critical:partition-7")
    b = make_alert("audit:critical:partition-8", partitions=(8,))
    other = make_alert("expire:warning:partition-1", severity="warning", partitions=(1,))

    assert [r.status for r in notifier.reconcile([a, b], scope="audit:")] == [SendStatus.SENT] * 2
    assert notifier.send(other).sent
    clock.advance(60)

    results = notifier.reconcile([a], scope="audit:")
    assert [(r.key, r.kind, r.status) for r in results] == [
        (a.key, "alert", SendStatus.DEDUPLICATED),
        (b.key, "recovery", SendStatus.SENT),
    ]
    assert [m["text"] for m in slack_server.messages][-1] == f"RESOLVED: {b.title}"
    assert notifier.firing_keys() == [a.key, other.key]  # the other sensor's key is left alone

    clock.advance(60)
    assert [r.status for r in notifier.reconcile([a], scope="audit:")] == [SendStatus.DEDUPLICATED]
    assert len(slack_server.messages) == 4


# -- rate limits and server errors ---------------------------------------------------------------


def test_rate_limited_then_success_delivers_exactly_one_message(
    make_notifier: Any, slack_server: SlackTestServer
) -> None:
    slack_server.rate_limit_next(1, retry_after=0)
    result = make_notifier().send(make_alert())

    assert result.status is SendStatus.SENT
    posts = slack_server.requests_to("chat.postMessage")
    assert len(posts) >= 2
    assert [p.status for p in posts] == [429, 200]
    assert len(slack_server.messages) == 1


def test_rate_limited_beyond_retries_goes_to_outbox(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path
) -> None:
    slack_server.rate_limit_next(10, retry_after=0)
    result = make_notifier(max_retries=1).send(make_alert())

    assert result.status is SendStatus.OUTBOXED
    assert result.error == "ratelimited"
    assert len(slack_server.requests) == 2  # the first try and one retry
    assert slack_server.messages == []
    assert [line["error"] for line in outbox_lines(tmp_path / "outbox.jsonl")] == ["ratelimited"]


def test_server_error_is_retried(make_notifier: Any, slack_server: SlackTestServer) -> None:
    slack_server.fail_next(1, status=500)
    assert make_notifier().send(make_alert()).sent
    assert [r.status for r in slack_server.requests] == [500, 200]
    assert len(slack_server.messages) == 1


# -- Slack unusable: outbox, one log line, no exception, no token anywhere ------------------------


def test_invalid_token_goes_to_outbox_and_logs_without_the_token(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "xoxb-1234-5678-NotAValidSecretAtAll"
    notifier = make_notifier(token=secret)
    alert = make_alert()

    with caplog.at_level(logging.DEBUG):
        result = notifier.send(alert)

    assert result.status is SendStatus.OUTBOXED
    assert result.error == "invalid_auth"
    assert len(slack_server.requests) == 1
    assert slack_server.requests[0].status == 200
    assert slack_server.messages == []

    lines = outbox_lines(tmp_path / "outbox.jsonl")
    assert len(lines) == 1
    assert lines[0]["kind"] == "alert"
    assert lines[0]["key"] == alert.key
    assert lines[0]["error"] == "invalid_auth"
    assert lines[0]["alert"] == alert.to_json()
    assert lines[0]["channel"] == CHANNEL
    assert lines[0]["blocks"][0]["type"] == "header"

    ours = [r for r in caplog.records if r.name.startswith("offsetops.checks.alerting")]
    assert len(ours) == 1
    assert ours[0].levelno == logging.ERROR
    assert "token is invalid" in ours[0].getMessage()
    assert str(tmp_path / "outbox.jsonl") in ours[0].getMessage()
    assert secret not in caplog.text
    assert all(secret not in r.getMessage() for r in caplog.records)
    assert secret not in repr(notifier)
    assert secret not in (tmp_path / "outbox.jsonl").read_text()


@pytest.mark.parametrize(
    "error", ["account_inactive", "token_revoked", "channel_not_found", "not_in_channel"]
)
def test_slack_api_errors_go_to_outbox(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path, error: str
) -> None:
    slack_server.error_next(error)
    result = make_notifier().send(make_alert())
    assert result.status is SendStatus.OUTBOXED
    assert result.error == error
    assert slack_server.messages == []
    assert [line["error"] for line in outbox_lines(tmp_path / "outbox.jsonl")] == [error]


@pytest.mark.parametrize("token", [None, "", "   "])
def test_missing_token_goes_to_outbox_with_zero_requests(
    make_notifier: Any,
    slack_server: SlackTestServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    token: str | None,
) -> None:
    notifier = make_notifier(token=token)
    assert not notifier.has_token
    assert "token=<missing>" in repr(notifier)

    with caplog.at_level(logging.INFO, logger="offsetops.checks.alerting"):
        result = notifier.send(make_alert())
        again = notifier.send(make_alert())

    assert result.status is SendStatus.OUTBOXED
    assert result.error == "missing_token"
    assert again.status is SendStatus.DEDUPLICATED  # no token: the outbox line is not repeated
    assert slack_server.requests == []
    assert len(outbox_lines(tmp_path / "outbox.jsonl")) == 1
    assert "no Slack token is configured" in caplog.text
    assert {r.levelno for r in caplog.records if r.name.startswith("offsetops.checks.alerting")} == {
        logging.WARNING
    }


def test_messages_queued_without_a_token_are_kept_to_what_still_holds(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path, clock: FakeClock
) -> None:
    """Months without a token must not become a flood of stale pages once a token is added."""
    stalled = "audit:critical:partition-7"
    gone = "audit:critical:partition-9"
    quiet = make_notifier(token=None)
    assert quiet.send(make_alert(stalled, severity="warning")).outboxed
    clock.advance(60)
    assert make_notifier(token=None).send(make_alert(stalled)).outboxed  # escalated while Slack was off
    clock.advance(60)
    assert make_notifier(token=None).send(make_alert(gone, partitions=(9,))).outboxed
    clock.advance(60)
    make_notifier(token=None).resolve(gone)  # cleared while Slack was off: nothing left to say
    # Only the escalation of the condition that still holds is kept.
    assert [(e["kind"], e["key"]) for e in outbox_lines(tmp_path / "outbox.jsonl")] == [("alert", stalled)]
    assert slack_server.requests == []

    clock.advance(60)
    make_notifier().flush()  # a token is configured now
    assert len(slack_server.messages) == 1
    assert slack_server.messages[0]["text"].startswith("[CRITICAL] Log Cleaner stalled")
    assert outbox_lines(tmp_path / "outbox.jsonl") == []


def test_unsent_messages_are_bounded_without_a_token(
    make_notifier: Any, tmp_path: Path, clock: FakeClock
) -> None:
    from offsetops.checks.alerting.notifier import MAX_UNSENT

    for i in range(MAX_UNSENT + 5):
        clock.advance(1)
        make_notifier(token=None).send(make_alert(f"audit:critical:partition-{i}", partitions=(i,)))
    keys = [e["key"] for e in outbox_lines(tmp_path / "outbox.jsonl")]
    assert len(keys) == MAX_UNSENT
    assert keys[0] == "audit:critical:partition-5"
    assert keys[-1] == f"audit:critical:partition-{MAX_UNSENT + 4}"


def test_network_failure_after_retries_goes_to_outbox(tmp_path: Path, clock: FakeClock) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again at once: connections are refused
    notifier = SlackNotifier(
        TOKEN,
        CHANNEL,
        base_url=f"http://127.0.0.1:{port}/api/",
        state_path=tmp_path / "alerts.json",
        outbox_path=tmp_path / "outbox.jsonl",
        max_retries=1,
        clock=clock,
    )
    result = notifier.send(make_alert())
    assert result.status is SendStatus.OUTBOXED
    assert result.error is not None and "Connection refused before the request was sent" in result.error
    assert len(outbox_lines(tmp_path / "outbox.jsonl")) == 1


def test_outboxed_alert_is_delivered_first_by_the_next_send_and_only_once(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path, clock: FakeClock
) -> None:
    slack_server.error_next("channel_not_found")
    assert make_notifier().send(make_alert()).outboxed
    assert outbox_lines(tmp_path / "outbox.jsonl")[0]["error"] == "channel_not_found"
    clock.advance(30)
    # The next evaluation (a new notifier) sends the outbox first; the same alert is then a duplicate.
    again = make_notifier().send(make_alert())
    assert again.deduplicated
    assert len(slack_server.messages) == 1
    delivered = slack_server.messages[0]
    assert delivered["text"].startswith("[CRITICAL] Log Cleaner stalled")
    assert "Delayed: queued 2023-11-14T22:13:20+00:00; not delivered then (channel_not_found)" in (
        block_texts(delivered["blocks"])
    )
    assert outbox_lines(tmp_path / "outbox.jsonl") == []
    clock.advance(30)
    assert make_notifier().send(make_alert()).deduplicated
    assert len(slack_server.messages) == 1


def test_recovery_of_an_outboxed_alert_follows_it_in_order(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path
) -> None:
    notifier = make_notifier()
    slack_server.error_next("channel_not_found")
    notifier.send(make_alert())
    # The same evaluation stopped using Slack at the error: the recovery waits behind the alert.
    assert notifier.resolve(make_alert().key).status is SendStatus.OUTBOXED
    assert [line["kind"] for line in outbox_lines(tmp_path / "outbox.jsonl")] == ["alert", "recovery"]
    assert notifier.firing_keys() == []

    assert [r.status for r in make_notifier().flush()] == [SendStatus.SENT, SendStatus.SENT]
    assert [m["text"].split(":")[0] for m in slack_server.messages] == [
        "[CRITICAL] Log Cleaner stalled on __consumer_offsets (partitions 7, 12)",
        "RESOLVED",
    ]
    assert outbox_lines(tmp_path / "outbox.jsonl") == []


def test_unwritable_state_never_raises(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state directory should be")
    notifier = make_notifier(state_path=blocker / "alerts.json")
    result = notifier.send(make_alert())
    # Without its dedupe memory the page still goes out (through the outbox), rather than not at all.
    assert result.status is SendStatus.SENT
    assert len(slack_server.messages) == 1
    assert outbox_lines(tmp_path / "outbox.jsonl") == []
    assert notifier.resolve("anything").status is SendStatus.FAILED
    assert notifier.firing_keys() == []


# -- the Alert value -----------------------------------------------------------------------------


def test_alert_is_a_frozen_hashable_value() -> None:
    alert = make_alert(partitions=[12, 7])
    assert alert.partitions == (12, 7)
    assert hash(alert) == hash(make_alert(partitions=(12, 7)))
    with pytest.raises(AttributeError):
        alert.title = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError, match="severity"):
        make_alert(severity="page")
    with pytest.raises(ValueError, match="key"):
        make_alert(key=" ")


# -- the time budget: a bad Slack never holds an evaluation past its deadline ---------------------
# Wall times are measured only to assert an upper bound that follows from the configured budget.

BUDGET_S = 1.5
MARGIN_S = 1.5  # thread start-up, the loopback round trips, a loaded CI machine


def _three_alerts() -> list[Alert]:
    return [make_alert(f"audit:critical:partition-{p}", partitions=(p,)) for p in (7, 8, 9)]


def _evaluate(notifier: SlackNotifier, alerts: list[Alert]) -> tuple[list[SendStatus], float]:
    started = time.monotonic()
    statuses = [notifier.send(alert).status for alert in alerts]
    return statuses, time.monotonic() - started


def _delivered_later(make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path) -> None:
    """The next evaluation, with Slack healthy again, sends the whole outbox once and in order."""
    results = make_notifier(budget_s=BUDGET_S).flush()
    assert [r.status for r in results] == [SendStatus.SENT] * 3
    assert [m["text"].split(" (")[0] for m in slack_server.messages] == [
        "[CRITICAL] Log Cleaner stalled on __consumer_offsets"
    ] * 3
    assert [m["text"].split("partition ")[1][0] for m in slack_server.messages] == ["7", "8", "9"]
    assert outbox_lines(tmp_path / "outbox.jsonl") == []
    assert make_notifier().flush() == []  # nothing is sent twice


def test_retry_after_beyond_the_cap_outboxes_at_once_and_the_next_evaluation_sends(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path
) -> None:
    slack_server.rate_limit_next(1, retry_after=20)
    notifier = make_notifier(budget_s=BUDGET_S, max_retry_after_s=5)
    statuses, elapsed = _evaluate(notifier, _three_alerts())

    assert statuses == [SendStatus.OUTBOXED] * 3
    assert elapsed < BUDGET_S + MARGIN_S  # not 20 s, and not 3 x anything
    assert [r.status for r in slack_server.requests] == [429]  # Slack was not hammered
    lines = outbox_lines(tmp_path / "outbox.jsonl")
    assert [line["key"] for line in lines] == [a.key for a in _three_alerts()]
    assert lines[0]["error"] == "ratelimited: Retry-After 20s exceeds the cap of 5s"
    _delivered_later(make_notifier, slack_server, tmp_path)


def test_a_server_that_never_answers_costs_one_budget_not_one_timeout_per_alert(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path
) -> None:
    slack_server.hang_next(5)
    notifier = make_notifier(budget_s=BUDGET_S, timeout_s=10)
    statuses, elapsed = _evaluate(notifier, _three_alerts())

    assert statuses == [SendStatus.OUTBOXED] * 3
    assert elapsed < BUDGET_S + MARGIN_S
    assert slack_server.connections_held == 1  # the other two were not even tried
    first = outbox_lines(tmp_path / "outbox.jsonl")[0]
    assert first["uncertain"] is True and "after the request was sent" in first["error"]
    slack_server.hang_next(0)
    _delivered_later(make_notifier, slack_server, tmp_path)
    # The request had left: Slack might have posted it, so the late copy says so.
    assert "this may repeat a message already posted" in block_texts(slack_server.messages[0]["blocks"])


def test_a_server_that_trickles_bytes_is_cut_off_at_the_deadline(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path
) -> None:
    slack_server.trickle_next(5, interval_s=0.05)  # each read succeeds: only a deadline ends it
    notifier = make_notifier(budget_s=BUDGET_S, timeout_s=10)
    statuses, elapsed = _evaluate(notifier, _three_alerts())

    assert statuses == [SendStatus.OUTBOXED] * 3
    assert elapsed < BUDGET_S + MARGIN_S
    assert slack_server.connections_held == 1
    slack_server.trickle_next(0)
    _delivered_later(make_notifier, slack_server, tmp_path)


def test_per_request_timeout_bounds_one_call_inside_a_longer_budget(
    make_notifier: Any, slack_server: SlackTestServer, tmp_path: Path
) -> None:
    slack_server.hang_next(1)
    notifier = make_notifier(budget_s=30, timeout_s=1)
    started = time.monotonic()
    assert notifier.send(make_alert()).status is SendStatus.OUTBOXED
    assert time.monotonic() - started < 1 + MARGIN_S


# -- escaping: data-derived strings never format, ping or link ------------------------------------

HOSTILE = "<!channel> & <http://evil.example|click me>\n\x1b[31m`x`"


def test_hostile_text_reaches_slack_escaped_in_text_and_blocks(
    make_notifier: Any, slack_server: SlackTestServer
) -> None:
    alert = make_alert(title=f"Group {HOSTILE} failed", reason=f"group {HOSTILE}", details={"group": HOSTILE})
    assert make_notifier().send(alert).sent
    body = slack_server.requests_to("chat.postMessage")[0].body
    wire = json.dumps(body)
    for raw in ("<!channel>", "<http://evil.example", "\x1b", "\\u001b"):
        assert raw not in wire
    assert "&lt;!channel&gt; &amp; &lt;http://evil.example|click me&gt;\\n\\x1b[31m" in body["text"]
    assert "&lt;!channel&gt;" in block_texts(body["blocks"])
