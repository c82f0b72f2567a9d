"""Streams groups (KIP-1071) in the expiration plan: ``StreamsGroup.offsetExpirationCondition`` (commit
time), ``StreamsGroup.isSubscribedToTopic`` (the topology's source and repartition source topics while the
group has members, none once it is Empty) and ``StreamsGroup.createGroupTombstoneRecords`` for a group whose
offsets have all expired; on groups rebuilt by the loader from the records Kafka's coordinator writes."""

from __future__ import annotations

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.expiration import KIP848, LEGACY, plan_expiration
from offsetops.coordinator_core.group_replay import group_record
from offsetops.coordinator_core.schema import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    encode_key,
    encode_value,
)

from tests.support.modern_groups import SUBTOPOLOGY, T0, load, streams_join, topology_record

DAY = 86_400_000
RET = 7 * DAY
NOW = T0 + 10 * DAY  # every commit below is at T0 (the batch time) unless said otherwise


def commit(gid: str, topic: str, partition: int, ts: int = T0) -> tuple[bytes, bytes]:
    return encode_key(OffsetCommitKey(gid, topic, partition)), encode_value(
        OffsetCommitValue(3, 42, 0, "", ts)
    )


def member_leaves(gid: str, mid: str) -> list[tuple[bytes, bytes | None]]:
    """The member's tombstones (current assignment, target assignment, member metadata)."""
    return [group_record(t, gid, mid) for t in (22, 21, 19)]


def with_repartition_source(gid: str) -> tuple[bytes, bytes | None]:
    """A topology whose subtopology also reads an internal repartition topic."""
    sub = {
        "subtopologyId": SUBTOPOLOGY,
        "sourceTopics": ["foo"],
        "sourceTopicRegex": [],
        "stateChangelogTopics": [],
        "repartitionSinkTopics": [],
        "repartitionSourceTopics": [
            {"name": "app-repartition", "partitions": 0, "replicationFactor": 0, "topicConfigs": []}
        ],
        "copartitionGroups": [],
    }
    return group_record(23, gid, None, {"epoch": 0, "subtopologies": [sub]})


def plan(cache: CoordinatorCache, coordinator: str = KIP848):
    return plan_expiration([cache], now_ms=NOW, retention_ms=RET, coordinator=coordinator)


def test_a_streams_group_with_members_keeps_what_its_topology_reads() -> None:
    cache = load(
        *streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]}),
        with_repartition_source("g"),
        commit("g", "foo", 0),
        commit("g", "app-repartition", 0),
        commit("g", "bar", 0),
    )
    assert cache.groups["g"].state == "Stable"
    got = plan(cache)
    # foo (a source topic) and app-repartition (a repartition source topic) are read; bar is not.
    assert [(t.topic, t.partition, t.reason) for t in got.tombstones] == [
        ("bar", 0, "streams_group_unread_topic")
    ]
    assert got.dead_groups == []


def test_a_streams_group_without_members_reads_no_topic_and_is_deleted() -> None:
    cache = load(
        *streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]}),
        commit("g", "foo", 0),
        commit("g", "bar", 1),
        *member_leaves("g", "m1"),
    )
    group = cache.groups["g"]
    assert (group.state, group.members) == ("Empty", [])
    got = plan(cache)
    offsets = [(t.topic, t.reason) for t in got.tombstones if t.kind == "offset_commit"]
    assert offsets == [("bar", "streams_group_unread_topic"), ("foo", "streams_group_unread_topic")]
    groups = [t for t in got.tombstones if t.kind == "group_metadata"]
    # StreamsGroup.createGroupTombstoneRecords of an Empty group: target assignment epoch, group
    # metadata, topology; after the offsets.
    assert [decode_key(t.key).record_type for t in groups] == [20, 17, 23]
    assert [t.reason for t in groups] == [
        "dead_group:streams_target_assignment_metadata",
        "dead_group:streams_group_metadata",
        "dead_group:streams_group_topology",
    ]
    assert [(d.group_id, d.group_type, d.tombstones, d.reason) for d in got.dead_groups] == [
        ("g", "streams", 3, "empty_without_offsets")
    ]
    # Appending the planned tombstones to the log leaves no group behind: the keys are the right ones.
    after = load(
        *streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]}),
        commit("g", "foo", 0),
        commit("g", "bar", 1),
        *member_leaves("g", "m1"),
        *[(t.key, None) for t in got.tombstones],
    )
    assert after.groups == {}


def test_an_empty_streams_group_with_a_recent_commit_stays() -> None:
    recent = NOW - DAY
    cache = load(
        *streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]}),
        commit("g", "foo", 0),
        commit("g", "foo", 1, ts=recent),
        *member_leaves("g", "m1"),
    )
    got = plan_expiration(
        [cache], now_ms=NOW, retention_ms=RET, coordinator=KIP848, forecast_horizon_ms=7 * DAY
    )
    assert [(t.topic, t.partition) for t in got.tombstones] == [("foo", 0)]
    assert got.dead_groups == []
    assert [(f.topic, f.partition, f.expires_at) for f in got.forecast] == [("foo", 1, recent + RET)]


def test_a_streams_group_without_a_topology_reads_nothing() -> None:
    cache = load(
        *streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]}), group_record(23, "g"), commit("g", "foo", 0)
    )
    assert cache.groups["g"].state == "NotReady"
    assert [(t.topic, t.reason) for t in plan(cache).tombstones] == [("foo", "streams_group_unread_topic")]


def test_the_legacy_coordinator_sees_an_offsets_only_group() -> None:
    """The Scala coordinator skips record types >= 3: the streams group's commits are a standalone group's."""
    cache = load(*streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]}), topology_record("g"), commit("g", "foo", 0))
    got = plan(cache, LEGACY)
    assert [(t.topic, t.reason) for t in got.tombstones] == [
        ("foo", "legacy_coordinator_ignores_group_records")
    ]
