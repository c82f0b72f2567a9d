"""The ground truth of a simulated share or streams group: the ``GroupMetadata`` document the coordinator
caches, built from the simulator's own model (its state derived here, by the rules of ``ShareGroup`` and
``StreamsGroup.maybeUpdateGroupState``), never from the records it wrote."""

from __future__ import annotations

from typing import Any

from offsetops.coordinator_core.share_group import ShareGroup, ShareGroupMember
from offsetops.coordinator_core.simulator.model import Group, Member
from offsetops.coordinator_core.simulator.share_streams import ShareStreamsCoordinator, zone
from offsetops.coordinator_core.streams_group import (
    StreamsGroup,
    StreamsGroupMember,
    StreamsTopology,
    TasksTuple,
)

_STREAMS_MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_TASKS", 2: "UNRELEASED_TASKS"}


def _parts(assignment: dict[str, list[int]]) -> dict[str, tuple[int, ...]]:
    return {t: tuple(sorted(p)) for t, p in sorted(assignment.items()) if p}


def _tasks(tasks: dict[str, dict[str, set[int]]]) -> TasksTuple:
    def one(t: str) -> dict[str, tuple[int, ...]]:
        return {s: tuple(sorted(p)) for s, p in sorted(tasks.get(t, {}).items()) if p}

    return TasksTuple(one("active"), one("standby"), one("warmup"))


def _member_view(m: Member, subscribed: list[str], assignment: dict[str, list[int]], rebalance: Any) -> dict:
    return {
        "member_id": m.member_id,
        "group_instance_id": None,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "session_timeout_ms": None,
        "rebalance_timeout_ms": rebalance,
        "subscribed_topics": subscribed,
        "assignment": {t: sorted(p) for t, p in sorted(assignment.items()) if p},
    }


def _share_truth(sim: ShareStreamsCoordinator, g: Group, members: list[Member]) -> tuple[str, ShareGroup]:
    state = "Stable" if members else "Empty"

    def topics(status: str) -> dict[str, tuple[int, ...]]:
        return {
            t: tuple(range(sim.topics[t].partitions))
            for t, s in sorted(g.share_topics.items())
            if s == status
        }

    detail = ShareGroup(
        group_id=g.group_id,
        group_epoch=g.group_epoch,
        metadata_hash=g.metadata_hash,
        assignment_epoch=g.assignment_epoch,
        state=state,
        members=tuple(
            ShareGroupMember(
                member_id=m.member_id,
                rack_id=None,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topics=tuple(sorted(m.topics)),
                member_epoch=m.member_epoch,
                previous_member_epoch=m.previous_epoch,
                state="STABLE",
                assigned_partitions=_parts(m.assignment),
            )
            for m in members
        ),
        target_assignment={m.member_id: _parts(m.target) for m in members},
        initializing_topics=topics("initializing"),
        initialized_topics=topics("initialized"),
        deleting_topics=(),
    )
    return state, detail


def _streams_state(g: Group, members: list[Member]) -> str:
    if not members:
        return "Empty"
    if not g.ready:
        return "NotReady"
    if g.group_epoch > g.assignment_epoch:
        return "Assigning"
    if any(m.state != 0 or m.member_epoch != g.assignment_epoch for m in members):
        return "Reconciling"
    return "Stable"


def _streams_truth(sim: ShareStreamsCoordinator, g: Group, members: list[Member]) -> tuple[str, StreamsGroup]:
    state = _streams_state(g, members)
    endpoint = {
        m.member_id: None if m.endpoint is None else f"{m.endpoint[0]}:{m.endpoint[1]}" for m in members
    }
    detail = StreamsGroup(
        group_id=g.group_id,
        group_epoch=g.group_epoch,
        metadata_hash=g.metadata_hash,
        validated_topology_epoch=0 if g.ready else -1,
        assignment_configs={"num.standby.replicas": str(g.standby_replicas)},
        assignment_epoch=g.assignment_epoch,
        state=state,
        topology=StreamsTopology.from_record(sim._topology_json(g)),
        members=tuple(
            StreamsGroupMember(
                member_id=m.member_id,
                instance_id=None,
                rack_id=None,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout,
                topology_epoch=0,
                process_id=m.process_id,
                user_endpoint=endpoint[m.member_id],
                client_tags={"zone": zone(m)},
                member_epoch=m.member_epoch,
                previous_member_epoch=m.previous_epoch,
                state=_STREAMS_MEMBER_STATES[m.state],
                assigned_tasks=_tasks(m.tasks),
                tasks_pending_revocation=_tasks({"active": m.pending_tasks}),
            )
            for m in members
        ),
        target_assignment={m.member_id: _tasks(m.target_tasks) for m in members},
    )
    return state, detail


def modern_group_truth(sim: ShareStreamsCoordinator, g: Group) -> dict[str, Any]:
    """``GroupMetadata.to_json`` (without offsets) of a live share or streams group, from the model."""
    members = sorted(g.members, key=lambda m: m.member_id)
    if g.kind == "share":
        state, detail = _share_truth(sim, g, members)
        views = [_member_view(m, sorted(m.topics), m.assignment, None) for m in members]
    else:
        state, detail = _streams_truth(sim, g, members)
        views = [_member_view(m, sorted(g.topics), m.assignment, m.rebalance_timeout) for m in members]
    return {
        "group_id": g.group_id,
        "group_type": g.kind,
        "state": state,
        "protocol_type": g.kind,
        "generation": g.group_epoch,
        "protocol": None,
        "leader": None,
        "current_state_timestamp": None,
        "members": views,
        g.kind: detail.to_json(),
    }
