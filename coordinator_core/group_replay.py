"""The replay that share groups (KIP-932) and streams groups (KIP-1071) share, as ``GroupMetadataManager``
does it: one method per record type, applied in log order, tombstones included.

Both group types keep the same five kinds of record (the group's epoch, each member's metadata, the target
assignment's epoch, each member's target assignment, each member's current assignment), plus records of
their own (a streams group's topology, a share group's state-partition metadata) that are kept as the last
value seen. What the Java coordinator would refuse (a tombstone deleting a group that still has members, a
member whose current assignment was not tombstoned first) is kept as a finding rather than failing the load.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.schema import GenericValue, GroupKey, encode_key, encode_value

# ``ConsumerGroupMember.LEAVE_GROUP_MEMBER_EPOCH``: the epoch a current-assignment tombstone leaves behind.
LEAVE_GROUP_MEMBER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class GroupRecordTypes:
    """Which record type plays which part for one group type (``CoordinatorRecordType``)."""

    kind: str
    metadata: int
    member: int
    target_metadata: int
    target_member: int
    current: int
    others: tuple[int, ...] = ()
    early_only: tuple[int, ...] = ()
    # Records kept beside the group, that never create it (the share-state partition metadata).
    detached: tuple[int, ...] = ()

    @property
    def all(self) -> frozenset[int]:
        core = (self.metadata, self.member, self.target_metadata, self.target_member, self.current)
        return frozenset((*core, *self.others, *self.early_only))


SHARE_RECORDS = GroupRecordTypes("share", 11, 10, 12, 13, 14, others=(15,), early_only=(9,), detached=(15,))
STREAMS_RECORDS = GroupRecordTypes("streams", 17, 19, 20, 21, 22, others=(23, 24), early_only=(18,))

# One record of a group: (log offset, record type, member id or None, value fields or None for a tombstone,
# the early-access layout the value was written in, or None).
GroupRecord = tuple[int, int, str | None, dict[str, Any] | None, str | None]


@dataclass(slots=True)
class ReplayedGroup:
    """What replaying a group's records leaves: the raw fields of each record kind, by member."""

    group_id: str
    exists: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    current: dict[str, dict[str, Any]] = field(default_factory=dict)
    target: dict[str, dict[str, Any]] = field(default_factory=dict)
    assignment_epoch: int = -1
    others: dict[int, dict[str, Any]] = field(default_factory=dict)
    early_access: set[str] = field(default_factory=set)
    findings: list[str] = field(default_factory=list)

    def member_epoch(self, member_id: str) -> int:
        return int(self.current.get(member_id, {}).get("memberEpoch", 0))


def _replay_metadata(g: ReplayedGroup, offset: int, value: dict[str, Any] | None) -> None:
    if value is not None:
        g.exists = True
        g.metadata = value
        return
    if g.members:
        g.findings.append(
            f"offset {offset}: the group's metadata was tombstoned while it still had "
            f"{len(g.members)} member(s); Kafka's replay refuses this (IllegalStateException)"
        )
    # removeGroup: everything of the group goes, whatever was left.
    g.exists = False
    g.metadata, g.members, g.current, g.target, g.others = {}, {}, {}, {}, {}
    g.assignment_epoch = -1


def _replay_member(g: ReplayedGroup, offset: int, member_id: str, value: dict[str, Any] | None) -> None:
    if value is not None:
        g.exists = True
        g.members[member_id] = value
        return
    if member_id not in g.members:
        return  # getMemberOrThrow fails and the tombstone is ignored
    if member_id in g.current and g.member_epoch(member_id) != LEAVE_GROUP_MEMBER_EPOCH:
        g.findings.append(
            f"offset {offset}: member {member_id!r} was tombstoned before its current assignment was"
        )
    if member_id in g.target:
        g.findings.append(
            f"offset {offset}: member {member_id!r} was tombstoned before its target assignment"
        )
    del g.members[member_id]
    g.current.pop(member_id, None)


def _replay_current(g: ReplayedGroup, member_id: str, value: dict[str, Any] | None) -> None:
    if value is not None:
        g.exists = True
        g.members.setdefault(member_id, {})  # getOrMaybeCreateMember(memberId, true)
        g.current[member_id] = value
    elif member_id in g.members:
        # The member stays until its metadata tombstone; it is left with no epoch and no assignment.
        g.current[member_id] = {
            "memberEpoch": LEAVE_GROUP_MEMBER_EPOCH,
            "previousMemberEpoch": -1,
            "state": 0,
        }


def replay(group_id: str, types: GroupRecordTypes, records: Iterable[GroupRecord]) -> ReplayedGroup:
    """Apply ``records`` (any order; sorted here by log offset) as ``GroupMetadataManager.replay`` does."""
    g = ReplayedGroup(group_id)
    for offset, rtype, member_id, value, early in sorted(records, key=lambda r: r[0]):
        if early is not None or rtype in types.early_only:
            g.early_access.add(early or f"record type {rtype}")
            if rtype in types.early_only:
                continue  # Kafka 4.1+ no longer defines these types and skips them
        if rtype == types.metadata:
            _replay_metadata(g, offset, value)
        elif rtype == types.member and member_id is not None:
            _replay_member(g, offset, member_id, value)
        elif rtype == types.current and member_id is not None:
            _replay_current(g, member_id, value)
        elif rtype == types.target_member and member_id is not None:
            if value is None:
                g.target.pop(member_id, None)
            else:
                g.exists = True
                g.target[member_id] = value
        elif rtype == types.target_metadata:
            g.exists = g.exists or value is not None
            g.assignment_epoch = -1 if value is None else int(value.get("assignmentEpoch", -1))
        elif rtype in types.others:
            if value is None:
                g.others.pop(rtype, None)
            else:
                g.exists = g.exists or rtype not in types.detached
                g.others[rtype] = value
    return g


def group_record(
    record_type: int, group_id: str, member_id: str | None = None, fields: dict[str, Any] | None = None
) -> tuple[bytes, bytes | None]:
    """One share or streams record as the coordinator writes it (``*CoordinatorRecordHelpers``): the key,
    and the version-0 value of ``fields`` (camelCase, as the schema tables name them), or None for a
    tombstone."""
    key_fields: dict[str, Any] = {"groupId": group_id}
    if member_id is not None:
        key_fields["memberId"] = member_id
    key = encode_key(GroupKey(record_type, group_id, key_fields))
    return key, None if fields is None else encode_value(GenericValue(record_type, 0, fields))


def task_ids(tasks: dict[str, list[int]] | None) -> list[dict[str, Any]]:
    """Subtopology -> partitions as the ``[]TaskIds`` of the streams records, sorted as Kafka writes them."""
    return [{"subtopologyId": s, "partitions": sorted(p)} for s, p in sorted((tasks or {}).items())]
