"""Share (KIP-932) and streams (KIP-1071) groups rebuilt by the loader, on the record sequences of Kafka's own
tests: each test names the apache/kafka test (``group-coordinator/src/test/java/.../GroupMetadataManagerTest``
unless said otherwise) whose records and expectations it ports."""

from __future__ import annotations

from offsetops.coordinator_core.group_replay import group_record
from offsetops.coordinator_core.share_group import SHARE_STATE_TOPIC, ShareGroup
from offsetops.coordinator_core.streams_group import StreamsGroup

from tests.support.modern_groups import (
    SUBTOPOLOGY,
    T0,
    load,
    share_join_records,
    share_member,
    streams_current,
    streams_join,
    streams_metadata,
)

# --- share groups --------------------------------------------------------------------------------


def test_share_member_joins_empty_group() -> None:
    """testShareGroupMemberJoinsEmptyGroupWithAssignments: epoch 1, one member owning foo-0..5."""
    group = load(*share_join_records()).groups["fooup"]
    assert (group.group_type, group.state, group.generation) == ("share", "Stable", 1)
    share = group.detail
    assert isinstance(share, ShareGroup)
    assert (share.group_epoch, share.assignment_epoch, share.metadata_hash) == (1, 1, 42)
    (member,) = share.members
    assert member.subscribed_topics == ("foo",)
    assert member.assigned_partitions == {"foo": (0, 1, 2, 3, 4, 5)}  # named by the state metadata
    assert share.target_assignment == {"m1": {"foo": (0, 1, 2, 3, 4, 5)}}
    assert share.initialized_topics == {"foo": (0, 1, 2, 3, 4, 5)}
    assert group.members[0].assignment == {"foo": [0, 1, 2, 3, 4, 5]}
    assert SHARE_STATE_TOPIC in share.to_json()["offsets_note"]


def test_share_target_assignment_metadata_creates_the_group() -> None:
    """testReplayShareGroupTargetAssignmentMetadata: the group is created if it does not exist."""
    group = load(group_record(12, "foo", None, {"assignmentEpoch": 10, "assignmentTimestamp": 12345})).groups[
        "foo"
    ]
    assert group.detail.assignment_epoch == 10
    assert group.state == "Empty"


def test_share_target_assignment_metadata_tombstone_of_no_group_is_a_no_op() -> None:
    """testReplayShareGroupTargetAssignmentMetadataTombstone: no group comes of it."""
    assert "foo" not in load(group_record(12, "foo")).groups


def test_share_target_assignment_metadata_tombstone_resets_the_epoch() -> None:
    """testReplayShareGroupTargetAssignmentMetadataTombstoneExisting: the epoch goes back to -1.

    The group is created by its epoch record here: a load sees only the newest record of each key, so a
    group whose only record was overwritten by a tombstone is gone, as after compaction on a broker."""
    created = group_record(11, "foo", None, {"epoch": 10, "metadataHash": 0})
    cache = load(created, group_record(12, "foo", None, {"assignmentEpoch": 10}), group_record(12, "foo"))
    assert cache.groups["foo"].detail.assignment_epoch == -1


def test_share_member_leaves_and_group_is_deleted() -> None:
    """The leave and delete sequences of the share heartbeat tests (current assignment, target, member
    tombstones, then the group's): the member goes first, then the whole group."""
    gid, mid = "fooup", "m1"
    leave = [group_record(14, gid, mid), group_record(13, gid, mid), group_record(10, gid, mid)]
    cache = load(*share_join_records(), *leave, group_record(11, gid, None, {"epoch": 2, "metadataHash": 0}))
    group = cache.groups[gid]
    assert (group.state, group.generation, group.members) == ("Empty", 2, [])
    assert group.detail.findings == ()
    deleted = load(
        *share_join_records(), *leave, group_record(12, gid), group_record(15, gid), group_record(11, gid)
    )
    assert gid not in deleted.groups


def test_share_member_tombstone_before_its_assignment_is_a_finding() -> None:
    """GroupMetadataManager.replay(ShareGroupMemberMetadataKey, null) refuses a member whose current
    assignment was not tombstoned first (IllegalStateException); we keep it as a finding."""
    cache = load(*share_join_records(), group_record(10, "fooup", "m1"))
    findings = cache.groups["fooup"].detail.findings
    assert any("before its current assignment" in f for f in findings)
    assert any("before its target assignment" in f for f in findings)


def test_share_group_from_kafka_4_0_is_early_access() -> None:
    """Kafka 4.0 wrote ShareGroupMetadataValue with the epoch alone and ShareGroupPartitionMetadata (type 9),
    which 4.1+ no longer defines: such a group is reported as early access, not mis-decoded."""
    from offsetops.coordinator_core.schema.codec import encode_versioned
    from offsetops.coordinator_core.schema.fields import F, message

    early_md = message("ShareGroupMetadataValue", "0", "0+", F("epoch", "int32"))
    key, _ = group_record(11, "old", None, {"epoch": 3, "metadataHash": 0})
    cache = load(share_member("old", "m1", ["foo"]), (key, encode_versioned(early_md, 0, {"epoch": 3})))
    group = cache.groups["old"]
    assert group.state == "EarlyAccess"
    assert group.generation == 3
    assert group.detail.early_access == ("ShareGroupMetadataValue (4.0)",)


# --- streams groups ------------------------------------------------------------------------------


def test_streams_member_joins_with_missing_internal_topic_is_not_ready() -> None:
    """testStreamsGroupMemberJoiningWithMissingInternalTopic: the topology's changelog topic is missing, so
    the metadata record carries ValidatedTopologyEpoch -1 and the group is NOT_READY, with no tasks."""
    group = load(*streams_join("fooup", "m1", -1, {})).groups["fooup"]
    assert (group.group_type, group.state, group.generation) == ("streams", "NotReady", 2)
    streams = group.detail
    assert isinstance(streams, StreamsGroup)
    assert streams.assignment_configs == {"num.standby.replicas": "0"}
    assert streams.topology is not None and streams.topology.subtopologies[0].state_changelog_topics[
        0
    ].name == ("app-store-changelog")
    (member,) = streams.members
    assert (member.member_epoch, member.process_id, member.user_endpoint) == (
        2,
        "process-id",
        "localhost:9090",
    )
    assert member.client_tags == {"zone": "a"}
    assert member.assigned_tasks.is_empty


def test_streams_member_joins_and_owns_every_task_when_ready() -> None:
    """The join records of testStreamsGroupMemberJoiningWithMissingSourceTopic (member, topology, metadata,
    target, target epoch, current assignment), with the topology validated: the member gets active tasks
    0-5 of subtopology1 and the group is STABLE at epoch 2, as the describe of the join test before it
    in GroupMetadataManagerTest expects."""
    group = load(*streams_join("fooup", "m1", 0, {SUBTOPOLOGY: [0, 1, 2, 3, 4, 5]})).groups["fooup"]
    assert group.state == "Stable"
    (member,) = group.detail.members
    assert member.assigned_tasks.active == {SUBTOPOLOGY: (0, 1, 2, 3, 4, 5)}
    assert group.detail.target_assignment["m1"].active == {SUBTOPOLOGY: (0, 1, 2, 3, 4, 5)}
    # Task (subtopology1, p) reads partition p of the subtopology's source topic.
    assert group.members[0].assignment == {"foo": [0, 1, 2, 3, 4, 5]}
    assert group.members[0].subscribed_topics == ["foo"]


def test_streams_group_states() -> None:
    """StreamsGroupTest#testGroupState: ASSIGNING while the group epoch is ahead of the target assignment
    epoch; RECONCILING while a member is not at the target epoch or not STABLE; then STABLE."""
    base = streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]})
    assigning = load(*base, streams_metadata("g", 3, 0)).groups["g"]
    assert assigning.state == "Assigning"
    target_2 = group_record(20, "g", None, {"assignmentEpoch": 3})
    behind = load(*base, streams_metadata("g", 3, 0), target_2).groups["g"]
    assert behind.state == "Reconciling"  # m1 is STABLE but still at epoch 2
    unrevoked = load(*base, streams_current("g", "m1", 2, {SUBTOPOLOGY: [0]}, state=1)).groups["g"]
    assert unrevoked.state == "Reconciling"
    assert unrevoked.detail.members[0].state == "UNREVOKED_TASKS"
    caught_up = [streams_metadata("g", 3, 0), target_2, streams_current("g", "m1", 3, {SUBTOPOLOGY: [0]})]
    assert load(*base, *caught_up).groups["g"].state == "Stable"


def test_streams_current_assignment_tombstone_keeps_the_member_without_tasks() -> None:
    """replay(StreamsGroupCurrentMemberAssignmentKey, null): the member stays, at epoch -1 and no tasks."""
    cache = load(*streams_join("g", "m1", 0, {SUBTOPOLOGY: [0, 1]}), group_record(22, "g", "m1"))
    (member,) = cache.groups["g"].detail.members
    assert member.member_epoch == -1
    assert member.assigned_tasks.is_empty


def test_streams_topology_tombstone_makes_the_group_not_ready() -> None:
    """replay(StreamsGroupTopologyKey, null) removes the topology; a group with members is NOT_READY."""
    cache = load(*streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]}), group_record(23, "g"))
    assert cache.groups["g"].detail.topology is None
    assert cache.groups["g"].state == "NotReady"


def test_streams_group_delete() -> None:
    """The tombstones StreamsGroup.createGroupTombstoneRecords writes, after the member's (current
    assignment, target assignment, member metadata), leave no group behind."""
    gid = "g"
    tombstones = [group_record(t, gid, "m1") for t in (22, 21, 19)] + [
        group_record(t, gid) for t in (20, 23, 17)
    ]
    assert gid not in load(*streams_join(gid, "m1", 0, {SUBTOPOLOGY: [0]}), *tombstones).groups


def test_streams_group_json_is_in_reload_output() -> None:
    doc = load(*streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]})).groups["g"].to_json()
    assert doc["group_type"] == "streams"
    assert doc["streams"]["topology"]["subtopologies"][0]["source_topics"] == ["foo"]
    assert doc["streams"]["members"][0]["assigned_tasks"]["active"] == {SUBTOPOLOGY: [0]}


def test_offsets_committed_by_a_deleted_streams_group_leave_no_classic_group() -> None:
    """OffsetMetadataManager.replay creates a classic group for a commit only when no group exists: the
    commits of a streams group, deleted since with its offsets, leave nothing behind."""
    from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value

    key = encode_key(OffsetCommitKey("g", "foo", 0))
    commit = (key, encode_value(OffsetCommitValue(3, 42, 0, "", T0)))
    tombstones = [group_record(t, "g", "m1") for t in (22, 21, 19)] + [
        group_record(t, "g") for t in (20, 23, 17)
    ]
    cache = load(*streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]}), commit, (key, None), *tombstones)
    assert cache.groups == {}
    # A commit after the deletion is a standalone consumer's: that one does create a classic group.
    later = load(*streams_join("g", "m1", 0, {SUBTOPOLOGY: [0]}), *tombstones, commit, (key, None))
    assert later.groups["g"].group_type == "classic"
