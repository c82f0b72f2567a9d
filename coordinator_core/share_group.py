"""Share groups (KIP-932) as the Java coordinator holds them after loading: ``ShareGroup`` and its
``ShareGroupMember``s, rebuilt from record types 10-15 by :mod:`.group_replay`.

A share group's offsets are not in ``__consumer_offsets``: the share coordinator keeps each share-partition's
start offset and in-flight records in ``__share_group_state`` (``ShareSnapshot``/``ShareUpdate`` records).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from offsetops.coordinator_core.cache import EARLY_ACCESS_STATE
from offsetops.coordinator_core.group_replay import ReplayedGroup

SHARE_STATE_TOPIC = "__share_group_state"
SHARE_OFFSETS_NOTE = (
    "a share group's offsets (share-partition start offsets, in-flight records) live in "
    f"{SHARE_STATE_TOPIC}, not in __consumer_offsets"
)

# org.apache.kafka.coordinator.group.modern.consumer... MemberState (share members use the consumer one).
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}

TopicAssignment = Mapping[str, tuple[int, ...]]


def member_state_name(state: Any, names: Mapping[int, str] = MEMBER_STATES) -> str:
    """``MemberState.fromValue``: the name of a stored member state byte (UNKNOWN when unknown)."""
    return names.get(int(state or 0), "UNKNOWN")


def topic_partitions(
    entries: list[dict[str, Any]] | None, topic_names: Mapping[str, str]
) -> dict[str, tuple[int, ...]]:
    """``[{topicId, partitions}]`` -> topic name (or id when no record names it) -> sorted partitions."""
    out: dict[str, tuple[int, ...]] = {}
    for tp in entries or []:
        tid = str(tp.get("topicId"))
        topic = topic_names.get(tid, tid)
        out[topic] = tuple(sorted({*out.get(topic, ()), *(tp.get("partitions") or [])}))
    return dict(sorted(out.items()))


def share_topic_names(state_metadata: Mapping[str, Any]) -> dict[str, str]:
    """Topic id -> name from a ``ShareGroupStatePartitionMetadataValue`` (every list names its topics)."""
    names: dict[str, str] = {}
    for key in ("initializingTopics", "initializedTopics", "deletingTopics"):
        for t in state_metadata.get(key) or []:
            if t.get("topicName"):
                names[str(t.get("topicId"))] = t["topicName"]
    return names


@dataclass(frozen=True, slots=True)
class ShareGroupMember:
    """``ShareGroupMember``: what the member sent (rack, client, subscription) and what it was given."""

    member_id: str
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    member_epoch: int
    previous_member_epoch: int
    state: str
    assigned_partitions: TopicAssignment

    def to_json(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed_topics": list(self.subscribed_topics),
            "member_epoch": self.member_epoch,
            "previous_member_epoch": self.previous_member_epoch,
            "member_state": self.state,
            "assigned_partitions": {t: list(p) for t, p in self.assigned_partitions.items()},
        }


@dataclass(frozen=True, slots=True)
class ShareGroup:
    """``ShareGroup``: epochs, members, target assignment and the share-state partitions of the group."""

    group_id: str
    group_epoch: int
    metadata_hash: int
    assignment_epoch: int
    state: str
    members: tuple[ShareGroupMember, ...]
    target_assignment: Mapping[str, TopicAssignment]
    initializing_topics: TopicAssignment
    initialized_topics: TopicAssignment
    deleting_topics: tuple[str, ...]
    early_access: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()

    @property
    def group_type(self) -> str:
        return "share"

    def to_json(self) -> dict[str, Any]:
        return {
            "group_epoch": self.group_epoch,
            "metadata_hash": self.metadata_hash,
            "assignment_epoch": self.assignment_epoch,
            "state": self.state,
            "members": [m.to_json() for m in self.members],
            "target_assignment": {
                mid: {t: list(p) for t, p in a.items()} for mid, a in sorted(self.target_assignment.items())
            },
            "initializing_topics": {t: list(p) for t, p in self.initializing_topics.items()},
            "initialized_topics": {t: list(p) for t, p in self.initialized_topics.items()},
            "deleting_topics": list(self.deleting_topics),
            "early_access": list(self.early_access),
            "findings": list(self.findings),
            "offsets_note": SHARE_OFFSETS_NOTE,
        }


def _state_topics(entries: list[dict[str, Any]] | None) -> dict[str, tuple[int, ...]]:
    return {
        str(t.get("topicName") or t.get("topicId")): tuple(sorted(t.get("partitions") or []))
        for t in entries or []
    }


def share_group(g: ReplayedGroup, topic_names: Mapping[str, str]) -> ShareGroup:
    """The ``ShareGroup`` of a replay; its state as ``ShareGroup.maybeUpdateGroupState`` derives it."""
    state_md = g.others.get(15, {})
    names = {**topic_names, **share_topic_names(state_md)}
    members = []
    for mid in sorted(g.members):
        md = g.members[mid]
        cur = g.current.get(mid, {})
        members.append(
            ShareGroupMember(
                member_id=mid,
                rack_id=md.get("rackId"),
                client_id=md.get("clientId") or "",
                client_host=md.get("clientHost") or "",
                subscribed_topics=tuple(sorted(md.get("subscribedTopicNames") or [])),
                member_epoch=int(cur.get("memberEpoch", 0)),
                previous_member_epoch=int(cur.get("previousMemberEpoch", 0)),
                state=member_state_name(cur.get("state")),
                assigned_partitions=topic_partitions(cur.get("assignedPartitions"), names),
            )
        )
    if g.early_access:
        state = EARLY_ACCESS_STATE
    else:
        state = "Stable" if members else "Empty"
    return ShareGroup(
        group_id=g.group_id,
        group_epoch=int(g.metadata.get("epoch", 0)),
        metadata_hash=int(g.metadata.get("metadataHash", 0)),
        assignment_epoch=g.assignment_epoch,
        state=state,
        members=tuple(members),
        target_assignment={
            mid: topic_partitions(v.get("topicPartitions"), names) for mid, v in sorted(g.target.items())
        },
        initializing_topics=_state_topics(state_md.get("initializingTopics")),
        initialized_topics=_state_topics(state_md.get("initializedTopics")),
        deleting_topics=tuple(
            sorted(str(t.get("topicName") or t.get("topicId")) for t in state_md.get("deletingTopics") or [])
        ),
        early_access=tuple(sorted(g.early_access)),
        findings=tuple(g.findings),
    )
