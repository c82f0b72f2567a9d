"""Streams groups (KIP-1071) as the Java coordinator holds them after loading: ``StreamsGroup``, its
``StreamsTopology`` and its ``StreamsGroupMember``s with their ``TasksTuple``s, rebuilt from record types
17-24 by :mod:`.group_replay`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from offsetops.coordinator_core.group_replay import ReplayedGroup
from offsetops.coordinator_core.share_group import EARLY_ACCESS_STATE, member_state_name

# org.apache.kafka.coordinator.group.streams.MemberState
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_TASKS", 2: "UNRELEASED_TASKS", 127: "UNKNOWN"}
TASK_TYPES = ("active", "standby", "warmup")

Tasks = Mapping[str, tuple[int, ...]]  # subtopology id -> partitions (task ids)


@dataclass(frozen=True, slots=True)
class TasksTuple:
    """``TasksTuple``: a member's active, standby and warmup tasks."""

    active: Tasks
    standby: Tasks
    warmup: Tasks

    @classmethod
    def from_record(cls, value: Mapping[str, Any], suffix: str = "") -> TasksTuple:
        def tasks(name: str) -> dict[str, tuple[int, ...]]:
            out: dict[str, tuple[int, ...]] = {}
            for t in value.get(name + suffix) or []:
                sid = str(t.get("subtopologyId"))
                out[sid] = tuple(sorted({*out.get(sid, ()), *(t.get("partitions") or [])}))
            return dict(sorted(out.items()))

        return cls(tasks("activeTasks"), tasks("standbyTasks"), tasks("warmupTasks"))

    def by_type(self) -> dict[str, Tasks]:
        return {"active": self.active, "standby": self.standby, "warmup": self.warmup}

    @property
    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def to_json(self) -> dict[str, Any]:
        return {k: {s: list(p) for s, p in v.items()} for k, v in self.by_type().items()}


EMPTY_TASKS = TasksTuple({}, {}, {})


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """``StreamsGroupTopologyValue.TopicInfo``: an internal topic the group needs (0: broker default)."""

    name: str
    partitions: int
    replication_factor: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
        }


@dataclass(frozen=True, slots=True)
class Subtopology:
    """``StreamsGroupTopologyValue.Subtopology``: its source, repartition and changelog topics."""

    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[TopicInfo, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    copartition_groups: int

    @property
    def input_topics(self) -> tuple[str, ...]:
        """The topics whose partition p is read by task (subtopology, p)."""
        return tuple(sorted({*self.source_topics, *(t.name for t in self.repartition_source_topics)}))

    def to_json(self) -> dict[str, Any]:
        return {
            "subtopology_id": self.subtopology_id,
            "source_topics": list(self.source_topics),
            "source_topic_regex": list(self.source_topic_regex),
            "repartition_sink_topics": list(self.repartition_sink_topics),
            "repartition_source_topics": [t.to_json() for t in self.repartition_source_topics],
            "state_changelog_topics": [t.to_json() for t in self.state_changelog_topics],
            "copartition_groups": self.copartition_groups,
        }


@dataclass(frozen=True, slots=True)
class StreamsTopology:
    """``StreamsTopology``: the topology epoch and its subtopologies."""

    epoch: int
    subtopologies: tuple[Subtopology, ...]

    @classmethod
    def from_record(cls, value: Mapping[str, Any]) -> StreamsTopology:
        def infos(items: list[dict[str, Any]] | None) -> tuple[TopicInfo, ...]:
            return tuple(
                TopicInfo(str(i.get("name")), int(i.get("partitions", 0)), int(i.get("replicationFactor", 0)))
                for i in items or []
            )

        subs = tuple(
            Subtopology(
                subtopology_id=str(s.get("subtopologyId")),
                source_topics=tuple(s.get("sourceTopics") or []),
                source_topic_regex=tuple(s.get("sourceTopicRegex") or []),
                repartition_sink_topics=tuple(s.get("repartitionSinkTopics") or []),
                repartition_source_topics=infos(s.get("repartitionSourceTopics")),
                state_changelog_topics=infos(s.get("stateChangelogTopics")),
                copartition_groups=len(s.get("copartitionGroups") or []),
            )
            for s in value.get("subtopologies") or []
        )
        return cls(int(value.get("epoch", 0)), tuple(sorted(subs, key=lambda s: s.subtopology_id)))

    def to_json(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "subtopologies": [s.to_json() for s in self.subtopologies]}


@dataclass(frozen=True, slots=True)
class StreamsGroupMember:
    """``StreamsGroupMember``: identity (process, endpoint, client tags), epochs and tasks."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: str | None
    client_tags: Mapping[str, str]
    member_epoch: int
    previous_member_epoch: int
    state: str
    assigned_tasks: TasksTuple
    tasks_pending_revocation: TasksTuple

    def to_json(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "topology_epoch": self.topology_epoch,
            "process_id": self.process_id,
            "user_endpoint": self.user_endpoint,
            "client_tags": dict(self.client_tags),
            "member_epoch": self.member_epoch,
            "previous_member_epoch": self.previous_member_epoch,
            "member_state": self.state,
            "assigned_tasks": self.assigned_tasks.to_json(),
            "tasks_pending_revocation": self.tasks_pending_revocation.to_json(),
        }


@dataclass(frozen=True, slots=True)
class StreamsGroup:
    """``StreamsGroup``: epochs, topology, members, target assignment, and the state derived from them."""

    group_id: str
    group_epoch: int
    metadata_hash: int
    validated_topology_epoch: int
    assignment_configs: Mapping[str, str]
    assignment_epoch: int
    state: str
    topology: StreamsTopology | None
    members: tuple[StreamsGroupMember, ...]
    target_assignment: Mapping[str, TasksTuple]
    early_access: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()

    @property
    def group_type(self) -> str:
        return "streams"

    def member_partitions(self, tasks: Tasks) -> dict[str, list[int]]:
        """Topic -> partitions read by ``tasks`` (task (s, p) reads partition p of each input topic of s)."""
        subs = {s.subtopology_id: s for s in self.topology.subtopologies} if self.topology else {}
        out: dict[str, set[int]] = {}
        for sid, parts in tasks.items():
            for topic in subs[sid].input_topics if sid in subs else ():
                out.setdefault(topic, set()).update(parts)
        return {t: sorted(p) for t, p in sorted(out.items())}

    def to_json(self) -> dict[str, Any]:
        return {
            "group_epoch": self.group_epoch,
            "metadata_hash": self.metadata_hash,
            "validated_topology_epoch": self.validated_topology_epoch,
            "assignment_configs": dict(self.assignment_configs),
            "assignment_epoch": self.assignment_epoch,
            "state": self.state,
            "topology": None if self.topology is None else self.topology.to_json(),
            "members": [m.to_json() for m in self.members],
            "target_assignment": {mid: t.to_json() for mid, t in sorted(self.target_assignment.items())},
            "early_access": list(self.early_access),
            "findings": list(self.findings),
        }


def _member(mid: str, md: Mapping[str, Any], cur: Mapping[str, Any]) -> StreamsGroupMember:
    endpoint = md.get("userEndpoint")
    return StreamsGroupMember(
        member_id=mid,
        instance_id=md.get("instanceId"),
        rack_id=md.get("rackId"),
        client_id=md.get("clientId") or "",
        client_host=md.get("clientHost") or "",
        rebalance_timeout_ms=int(md.get("rebalanceTimeoutMs", -1)),
        topology_epoch=int(md.get("topologyEpoch", 0)),
        process_id=md.get("processId") or "",
        user_endpoint=None if not endpoint else f"{endpoint.get('host')}:{endpoint.get('port')}",
        client_tags={t.get("key"): t.get("value") for t in md.get("clientTags") or []},
        member_epoch=int(cur.get("memberEpoch", 0)),
        previous_member_epoch=int(cur.get("previousMemberEpoch", 0)),
        state=member_state_name(cur.get("state"), MEMBER_STATES),
        assigned_tasks=TasksTuple.from_record(cur),
        tasks_pending_revocation=TasksTuple.from_record(cur, "PendingRevocation"),
    )


def derive_state(
    members: tuple[StreamsGroupMember, ...],
    topology: StreamsTopology | None,
    validated_topology_epoch: int,
    group_epoch: int,
    assignment_epoch: int,
) -> str:
    """``StreamsGroup.maybeUpdateGroupState``. Offline there is no metadata image to configure the topology
    against, so "ready" is what the coordinator recorded: ``ValidatedTopologyEpoch`` equals the topology's."""
    if not members:
        return "Empty"
    if topology is None or validated_topology_epoch != topology.epoch:
        return "NotReady"
    if group_epoch > assignment_epoch:
        return "Assigning"
    if any(m.state != "STABLE" or m.member_epoch != assignment_epoch for m in members):
        return "Reconciling"
    return "Stable"


def streams_group(g: ReplayedGroup) -> StreamsGroup:
    """Build the ``StreamsGroup`` from a replay."""
    md = g.metadata
    topology = StreamsTopology.from_record(g.others[23]) if 23 in g.others else None
    members = tuple(_member(mid, g.members[mid], g.current.get(mid, {})) for mid in sorted(g.members))
    group_epoch = int(md.get("epoch", 0))
    validated = int(md.get("validatedTopologyEpoch", -1))
    state = derive_state(members, topology, validated, group_epoch, g.assignment_epoch)
    return StreamsGroup(
        group_id=g.group_id,
        group_epoch=group_epoch,
        metadata_hash=int(md.get("metadataHash", 0)),
        validated_topology_epoch=validated,
        assignment_configs={c.get("key"): c.get("value") for c in md.get("lastAssignmentConfigs") or []},
        assignment_epoch=g.assignment_epoch,
        state=EARLY_ACCESS_STATE if g.early_access else state,
        topology=topology,
        members=members,
        target_assignment={mid: TasksTuple.from_record(v) for mid, v in sorted(g.target.items())},
        early_access=tuple(sorted(g.early_access)),
        findings=tuple(g.findings),
    )
