"""KIP-848 groups rebuilt from their records: consumer groups (types 3-8, 16) from their surviving records,
and share groups (9-15) and streams groups (17-24) replayed record by record (:mod:`.group_replay`), as the
Java group coordinator does (``GroupMetadataManager.replay``)."""

from __future__ import annotations

from typing import Any

from offsetops.coordinator_core.cache import GroupMetadata, MemberMetadata
from offsetops.coordinator_core.group_replay import GroupRecord, GroupRecordTypes, replay
from offsetops.coordinator_core.schema import GroupKey
from offsetops.coordinator_core.share_group import ShareGroup, ShareGroupMember, share_group
from offsetops.coordinator_core.streams_group import StreamsGroup, StreamsGroupMember, streams_group


def _field(fields: dict, name: str, default: Any = None) -> Any:
    """Read a field whatever its spelling (Kafka's JSON uses PascalCase, the tools camelCase)."""
    if name in fields:
        return fields[name]
    alt = name[0].lower() + name[1:]
    return fields.get(alt, default)


def _fields(value: object) -> dict:
    f = getattr(value, "fields", None)
    return f if isinstance(f, dict) else {}


def consumer_group(
    gid: str, by_type: dict[int, list[tuple[GroupKey, object]]], topic_ids: dict[str, str]
) -> GroupMetadata:
    """Rebuild a KIP-848 ``ConsumerGroup`` and its state (``ConsumerGroup.maybeUpdateGroupState``).

    Topic ids are named by the group's partition metadata record, else by ``topic_ids`` (from the
    TopicId of v4 offset commits); an id neither knows stays an id.
    """
    group_epoch = 0
    for _k, v in by_type.get(3, []):
        group_epoch = _field(_fields(v), "Epoch", 0) or 0
    assignment_epoch = 0
    for _k, v in by_type.get(6, []):
        assignment_epoch = _field(_fields(v), "AssignmentEpoch", 0) or 0
    topic_names: dict[str, str] = dict(topic_ids)
    for _k, v in by_type.get(4, []):
        for t in _field(_fields(v), "Topics", []) or []:
            tid = _field(t, "TopicId")
            if tid is not None:
                topic_names[str(tid)] = _field(t, "TopicName")
    current: dict[str, dict] = {}
    for k, v in by_type.get(8, []):
        current[_field(k.fields, "memberId", "")] = _fields(v)
    members = []
    reconciling = False
    for k, v in by_type.get(5, []):
        mid = _field(k.fields, "memberId", "")
        f = _fields(v)
        cur = current.get(mid, {})
        assignment: dict[str, list[int]] = {}
        for tp in _field(cur, "AssignedPartitions", []) or []:
            tid = str(_field(tp, "TopicId"))
            assignment[topic_names.get(tid, tid)] = sorted(_field(tp, "Partitions", []) or [])
        member_epoch = _field(cur, "MemberEpoch")
        if member_epoch != assignment_epoch or (_field(cur, "State", 0) or 0) != 0:
            reconciling = True
        classic = _field(f, "ClassicMemberMetadata") or {}
        members.append(
            MemberMetadata(
                member_id=mid,
                group_instance_id=_field(f, "InstanceId"),
                client_id=_field(f, "ClientId", "") or "",
                client_host=_field(f, "ClientHost", "") or "",
                session_timeout_ms=_field(classic, "SessionTimeoutMs") if classic else None,
                rebalance_timeout_ms=_field(f, "RebalanceTimeoutMs"),
                subscribed_topics=sorted(_field(f, "SubscribedTopicNames", []) or []),
                assignment=assignment,
                member_epoch=member_epoch,
                rack_id=_field(f, "RackId"),
            )
        )
    if not members:
        state = "Empty"
    elif group_epoch > assignment_epoch:
        state = "Assigning"
    elif reconciling:
        state = "Reconciling"
    else:
        state = "Stable"
    return GroupMetadata(
        group_id=gid,
        state=state,
        protocol_type="consumer",
        generation=group_epoch,
        members=sorted(members, key=lambda m: m.member_id),
        group_type="consumer",
    )


def modern_group(
    gid: str, types: GroupRecordTypes, records: list[GroupRecord], topic_ids: dict[str, str]
) -> GroupMetadata | None:
    """A share or streams group replayed from its records (None when the replay leaves no group)."""
    replayed = replay(gid, types, records)
    if not replayed.exists and not replayed.early_access:
        return None
    detail: ShareGroup | StreamsGroup
    if types.kind == "share":
        detail = share_group(replayed, topic_ids)
        members = [
            _member_view(
                m.member_id, m, subscribed=list(m.subscribed_topics), assignment=dict(m.assigned_partitions)
            )
            for m in detail.members
        ]
    else:
        detail = streams_group(replayed)
        sources = (
            sorted({t for s in detail.topology.subtopologies for t in s.source_topics})
            if detail.topology
            else []
        )
        members = [
            _member_view(
                m.member_id,
                m,
                subscribed=sources,
                assignment=detail.member_partitions(m.assigned_tasks.active),
                instance_id=m.instance_id,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
            )
            for m in detail.members
        ]
    return GroupMetadata(
        group_id=gid,
        state=detail.state,
        protocol_type=types.kind,
        generation=detail.group_epoch,
        members=members,
        group_type=types.kind,
        detail=detail,
    )


def _member_view(
    member_id: str,
    m: ShareGroupMember | StreamsGroupMember,
    *,
    subscribed: list[str],
    assignment: dict[str, Any],
    instance_id: str | None = None,
    rebalance_timeout_ms: int | None = None,
) -> MemberMetadata:
    """The member as every group view shows it (topics subscribed and partitions owned)."""
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        session_timeout_ms=None,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topics=subscribed,
        assignment={t: list(p) for t, p in assignment.items()},
        member_epoch=m.member_epoch,
        rack_id=m.rack_id,
    )
