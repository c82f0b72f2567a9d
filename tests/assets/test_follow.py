"""The ``offsets_follow`` sensor with a real Dagster instance, a simulated log dir and the loopback Slack
server: two evaluations with an append between them read only the appended bytes, observe the new
numbers, and page the group the append put past retention."""

from __future__ import annotations

import json
from pathlib import Path

from dagster import AssetKey, DagsterInstance, SensorResult, SkipReason, build_sensor_context
from offsetops.assets.follow import FOLLOWED, FollowCursor, offsets_follow
from offsetops.assets.resources import OffsetsSourceResource, SlackResource, StateResource

from tests.support.appends import FOLLOW_PARTITIONS, append_commits, groups_for
from tests.support.appends import follow_logdir as follow_logdir
from tests.support.appends import follow_simulated as follow_simulated
from tests.support.slack_server import SlackTestServer
from tests.support.slack_server import slack_server_fixture as slack_server_fixture

TOKEN = "xoxb-test-token"
PARTITIONS = FOLLOW_PARTITIONS
DAY_MS = 86_400_000


def headline(result: SensorResult) -> dict[str, float]:
    (event,) = result.asset_events
    assert event.asset_key == AssetKey(FOLLOWED)
    return {k: getattr(v, "value", v) for k, v in event.metadata.items()}


def evaluate(instance, resources, cursor: str | None = None) -> SensorResult | SkipReason:
    return offsets_follow(build_sensor_context(instance=instance, cursor=cursor, resources=resources))


def test_two_evaluations_with_an_append_between(
    follow_logdir: Path, tmp_path: Path, slack_server: SlackTestServer
) -> None:
    now_ms = json.loads((follow_logdir / "offsetops-clock.json").read_text())["as_of_ms"]
    state = StateResource(output_dir=str(tmp_path / "out"))
    resources = {
        "offsets_source": OffsetsSourceResource(log_dir=str(follow_logdir), num_partitions=PARTITIONS),
        "state": state,
        "slack": SlackResource(token=TOKEN, channel="#oncall", base_url=slack_server.base_url),
    }
    with DagsterInstance.ephemeral() as instance:
        first = evaluate(instance, resources)
        assert isinstance(first, SensorResult)
        one = headline(first)
        whole = sum(seg.stat().st_size for seg in follow_logdir.glob("__consumer_offsets-*/*.log"))
        assert (one["bytes_read"], one["partitions_resumed"]) == (whole, 0)
        assert sorted(p.name for p in state.resume_dir.iterdir() if p.suffix == ".state") == [
            f"__consumer_offsets-{p}.state" for p in range(PARTITIONS)
        ]
        pages_before = len(slack_server.requests_to("chat.postMessage"))

        # nothing appended: a look, no read
        assert isinstance(evaluate(instance, resources, first.cursor), SkipReason)

        # a group whose only commits are past offsets.retention.minutes (7 days on 3.9)
        (stale,) = groups_for(1, 1, "stale", PARTITIONS)
        commits = [(stale, "orders", p, 10 + p) for p in range(2)]
        appended = append_commits(follow_logdir / "__consumer_offsets-1", commits, now_ms=now_ms - 8 * DAY_MS)
        second = evaluate(instance, resources, first.cursor)
        assert isinstance(second, SensorResult)
        two = headline(second)
        assert (two["bytes_read"], two["partitions_resumed"]) == (appended, PARTITIONS)
        assert two["groups"] == one["groups"] + 1
        assert two["groups_lost"] == one["groups_lost"] + 1
        assert ["offsets:1:" + stale, "critical"] in json.loads(second.cursor or "{}")["findings"]
        assert FollowCursor.parse(second.cursor).findings != FollowCursor.parse(first.cursor).findings

    posts = slack_server.requests_to("chat.postMessage")
    assert len(posts) > pages_before
    assert stale in posts[-1].body["text"] + json.dumps(posts[-1].blocks)
    plan = json.loads((state.follow_plans_dir / "partition-1.json").read_text())
    assert plan["run_id"] is None and stale in plan["groups"]
    # the tombstone execution's own plans are not the sensor's to write
    assert not state.expiration_plans_dir.exists()


def test_a_cursor_in_another_shape_starts_over() -> None:
    assert FollowCursor.parse("not json") == FollowCursor()
    assert FollowCursor.parse('{"findings": 3}') == FollowCursor()
    round_trip = FollowCursor("abc", (("offsets:1:g", "warning"),), 12.5)
    assert FollowCursor.parse(round_trip.dump()) == round_trip
