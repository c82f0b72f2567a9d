"""Share groups (KIP-932) and streams groups (KIP-1071) in the simulated coordinator (``GroupMetadataManager``
of 4.2+), written as Kafka's record helpers write them (types 10-15 and 17-23).

Share members get their target partitions at their next heartbeat. Streams members reconcile as
``streams.CurrentAssignmentBuilder`` does: a member first gives up the active tasks it no longer has
(UNREVOKED_TASKS, its epoch unchanged), then takes the target tasks no other member still holds
(UNRELEASED_TASKS until they are free), so an active task never has two owners.
"""

from __future__ import annotations

import uuid
import zlib
from typing import Any

from offsetops.coordinator_core.group_replay import group_record, task_ids
from offsetops.coordinator_core.simulator.kip848 import ConsumerGroupCoordinator
from offsetops.coordinator_core.simulator.model import Group, Member, Rec

UNREVOKED_TASKS, UNRELEASED_TASKS = 1, 2
TASK_TYPES = ("active", "standby", "warmup")


def zone(m: Member) -> str:
    """The ``zone`` client tag a streams member sends (rack-aware standby placement)."""
    return f"zone-{zlib.crc32(m.member_id.encode()) % 3}"


def _tasks_json(tasks: dict[str, set[int]] | None) -> list[dict[str, Any]]:
    return task_ids({s: sorted(p) for s, p in (tasks or {}).items() if p})


class ShareStreamsCoordinator(ConsumerGroupCoordinator):
    """The coordinator with the share and streams group protocols."""

    def _rec(
        self, g: Group, rtype: int, m: Member | None = None, fields: dict[str, Any] | None = None
    ) -> Rec:
        key, value = group_record(rtype, g.group_id, None if m is None else m.member_id, fields)
        if value is None:
            self.stats.tombstones += 1
        else:
            self.stats.kip848_records += 1
        return (key, value, self.now)

    def _new_modern_member(self, g: Group) -> Member:
        m = self._new_member(g)
        m.instance_id = None  # share members have none; streams static membership is left out
        if g.kind == "streams":
            m.process_id = str(uuid.UUID(int=self.rng.getrandbits(128)))
            if self.rng.random() < 0.5:
                m.endpoint = (f"{g.group_id}-{g.member_seq}.svc", 8080)
        return m

    def _bump(self, g: Group, records: list[Rec]) -> None:
        """A new group epoch (``ShareGroupMetadataValue`` / ``StreamsGroupMetadataValue``)."""
        g.group_epoch += 1
        g.exists848 = True
        g.metadata_hash = zlib.crc32(",".join(sorted(g.topics)).encode())
        if g.kind == "share":
            records.append(self._rec(g, 11, None, {"epoch": g.group_epoch, "metadataHash": g.metadata_hash}))
            return
        configs = [{"key": "num.standby.replicas", "value": str(g.standby_replicas)}]
        fields = {
            "epoch": g.group_epoch,
            "metadataHash": g.metadata_hash,
            "validatedTopologyEpoch": 0 if g.ready else -1,
            "lastAssignmentConfigs": configs,
        }
        records.append(self._rec(g, 17, None, fields))

    # --- joins, leaves, target assignment ----------------------------------------------------

    def _join_modern(self, g: Group, m: Member) -> None:
        first = not g.exists848
        g.members.append(m)
        records = [self._member_metadata(g, m)]
        if g.kind == "streams" and first:
            records.append(self._rec(g, 23, None, self._topology_json(g)))
        self._bump(g, records)
        self._target_modern(g, records)
        self._append(g, records)
        self._reconcile_modern(g, m)
        for other in g.members:
            if other is not m:
                self._at(
                    self.now + self.rng.randint(100, 15_000), g.group_id, "reconcile_modern", other.member_id
                )

    def _leave_modern(self, g: Group, m: Member) -> None:
        g.members.remove(m)
        current, target = (14, 13) if g.kind == "share" else (22, 21)
        member = 10 if g.kind == "share" else 19
        records = [self._rec(g, current, m), self._rec(g, target, m), self._rec(g, member, m)]
        self._bump(g, records)
        self._append(g, records)
        if g.members:
            # The next heartbeat of a remaining member computes the new target assignment.
            self._at(self.now + self.rng.randint(50, 5_000), g.group_id, "assign_modern")

    def _on_assign_modern(self, g: Group, _arg: Any) -> None:
        if g.kind not in ("share", "streams") or not g.members or g.assignment_epoch >= g.group_epoch:
            return
        records: list[Rec] = []
        self._target_modern(g, records)
        self._append(g, records)
        for m in g.members:
            self._at(self.now + self.rng.randint(100, 15_000), g.group_id, "reconcile_modern", m.member_id)

    def _target_modern(self, g: Group, records: list[Rec]) -> None:
        """The target assignment of every member, then its epoch (``TargetAssignmentBuilder``)."""
        if g.kind == "share":
            plan = self._range_assign(g)
            for m in g.members:
                m.target = plan[m.member_id]
                tps = self._tps(m.target)
                records.append(self._rec(g, 13, m, {"topicPartitions": tps}))
            records.append(
                self._rec(g, 12, None, {"assignmentEpoch": g.group_epoch, "assignmentTimestamp": self.now})
            )
            self._share_state_partitions(g, records)
        else:
            plan = self._task_plan(g)
            for m in g.members:
                m.target_tasks = plan[m.member_id]
                fields = {f"{t}Tasks": _tasks_json(m.target_tasks.get(t)) for t in TASK_TYPES}
                records.append(self._rec(g, 21, m, fields))
            fields = {"assignmentEpoch": g.group_epoch, "assignmentTimestamp": self.now}
            records.append(self._rec(g, 20, None, fields))
        g.assignment_epoch = g.group_epoch

    def _share_state_partitions(self, g: Group, records: list[Rec]) -> None:
        """New topics start initializing in ``__share_group_state``; the share coordinator then does it."""
        new = sorted({t for m in g.members for t in m.topics} - set(g.share_topics))
        if not new:
            return
        for t in new:
            g.share_topics[t] = "initializing"
        records.append(self._rec(g, 15, None, self._share_state_json(g)))
        self._at(self.now + self.rng.randint(10, 2_000), g.group_id, "share_initialized")

    def _share_state_json(self, g: Group) -> dict[str, Any]:
        def infos(state: str) -> list[dict[str, Any]]:
            return [
                {
                    "topicId": self.topics[t].topic_id,
                    "topicName": t,
                    "partitions": list(range(self.topics[t].partitions)),
                }
                for t, s in sorted(g.share_topics.items())
                if s == state
            ]

        return {
            "initializingTopics": infos("initializing"),
            "initializedTopics": infos("initialized"),
            "deletingTopics": [],
        }

    def _on_share_initialized(self, g: Group, _arg: Any) -> None:
        if g.kind != "share" or not g.exists848 or "initializing" not in g.share_topics.values():
            return
        g.share_topics = dict.fromkeys(g.share_topics, "initialized")
        self._append(g, [self._rec(g, 15, None, self._share_state_json(g))])

    # --- reconciliation ----------------------------------------------------------------------

    def _on_reconcile_modern(self, g: Group, member_id: str) -> None:
        m = next((m for m in g.members if m.member_id == member_id), None)
        if m is not None and g.kind in ("share", "streams") and g.assignment_epoch >= g.group_epoch:
            self._reconcile_modern(g, m)

    def _reconcile_modern(self, g: Group, m: Member) -> None:
        if g.kind == "share":
            if m.member_epoch == g.assignment_epoch:
                return
            m.previous_epoch, m.member_epoch = m.member_epoch, g.assignment_epoch
            m.assignment = dict(m.target)
            fields = {
                "memberEpoch": m.member_epoch,
                "previousMemberEpoch": m.previous_epoch,
                "state": 0,
                "assignedPartitions": self._tps(m.assignment),
            }
            self._append(g, [self._rec(g, 14, m, fields)])
            return
        before = (m.member_epoch, m.state, m.tasks, m.pending_tasks)
        self._streams_step(g, m)
        if before == (m.member_epoch, m.state, m.tasks, m.pending_tasks):
            return
        self._append(g, [self._rec(g, 22, m, self._current_json(m))])
        if m.state != 0:
            self._at(self.now + self.rng.randint(100, 10_000), g.group_id, "reconcile_modern", m.member_id)
        if m.state == 0 or m.state == UNRELEASED_TASKS:
            for other in g.members:
                if other is not m and other.state == UNRELEASED_TASKS:
                    self._at(
                        self.now + self.rng.randint(50, 5_000),
                        g.group_id,
                        "reconcile_modern",
                        other.member_id,
                    )

    def _streams_step(self, g: Group, m: Member) -> None:
        """One heartbeat of ``streams.CurrentAssignmentBuilder``."""
        target = m.target_tasks
        active = m.tasks.get("active", {})
        revoke = {s: p - target.get("active", {}).get(s, set()) for s, p in active.items()}
        revoke = {s: p for s, p in revoke.items() if p}
        if revoke and not m.pending_tasks:
            m.pending_tasks = revoke
            m.tasks = {**m.tasks, "active": {s: p - revoke.get(s, set()) for s, p in active.items()}}
            m.state = UNREVOKED_TASKS
            return
        held: dict[str, set[int]] = {}
        for other in g.members:
            if other is m:
                continue
            for src in (other.tasks.get("active", {}), other.pending_tasks):
                for s, p in src.items():
                    held.setdefault(s, set()).update(p)
        m.pending_tasks = {}
        free = {s: p - held.get(s, set()) for s, p in target.get("active", {}).items()}
        m.tasks = {"active": free, "standby": dict(target.get("standby", {})), "warmup": {}}
        m.state = 0 if free == target.get("active", {}) else UNRELEASED_TASKS
        if m.member_epoch != g.assignment_epoch:
            m.previous_epoch, m.member_epoch = m.member_epoch, g.assignment_epoch
        subs = dict(self._subtopologies(g))
        m.assignment = {}
        for s, parts in free.items():
            for topic in subs.get(s, ()):
                m.assignment.setdefault(topic, []).extend(sorted(parts))

    def _current_json(self, m: Member) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "memberEpoch": m.member_epoch,
            "previousMemberEpoch": m.previous_epoch,
            "state": m.state,
        }
        for t in TASK_TYPES:
            fields[f"{t}Tasks"] = _tasks_json(m.tasks.get(t))
        fields["activeTasksPendingRevocation"] = _tasks_json(m.pending_tasks)
        fields["standbyTasksPendingRevocation"] = []
        fields["warmupTasksPendingRevocation"] = []
        return fields

    # --- streams topology and task assignment --------------------------------------------------

    def _subtopologies(self, g: Group) -> list[tuple[str, list[str]]]:
        """One subtopology per input topic, ids "0", "1", ... as Kafka Streams numbers them."""
        return [(str(i), [t]) for i, t in enumerate(g.topics)]

    def _topology_json(self, g: Group) -> dict[str, Any]:
        subs = []
        for sid, sources in self._subtopologies(g):
            changelog = []
            if sid == "0":
                config = [{"key": "cleanup.policy", "value": "compact"}]
                name = f"{g.group_id}-store-changelog"
                changelog = [{"name": name, "partitions": 0, "replicationFactor": 0, "topicConfigs": config}]
            subs.append(
                {
                    "subtopologyId": sid,
                    "sourceTopics": sources,
                    "sourceTopicRegex": [],
                    "stateChangelogTopics": changelog,
                    "repartitionSinkTopics": [],
                    "repartitionSourceTopics": [],
                    "copartitionGroups": [],
                }
            )
        return {"epoch": 0, "subtopologies": subs}

    def _task_plan(self, g: Group) -> dict[str, dict[str, dict[str, set[int]]]]:
        """Active tasks round-robin over the sorted members, standbys on the next one; none when not ready."""
        ids = sorted(m.member_id for m in g.members)
        plan: dict[str, dict[str, dict[str, set[int]]]] = {mid: {"active": {}, "standby": {}} for mid in ids}
        if not g.ready:
            return plan
        i = 0
        for sid, sources in self._subtopologies(g):
            for p in range(max(self.topics[t].partitions for t in sources)):
                owner = ids[i % len(ids)]
                plan[owner]["active"].setdefault(sid, set()).add(p)
                if g.standby_replicas and len(ids) > 1:
                    plan[ids[(i + 1) % len(ids)]]["standby"].setdefault(sid, set()).add(p)
                i += 1
        return plan

    def _member_metadata(self, g: Group, m: Member) -> Rec:
        if g.kind == "share":
            fields: dict[str, Any] = {
                "rackId": None,
                "clientId": m.client_id,
                "clientHost": m.client_host,
                "subscribedTopicNames": sorted(m.topics),
            }
            return self._rec(g, 10, m, fields)
        endpoint = None if m.endpoint is None else {"host": m.endpoint[0], "port": m.endpoint[1]}
        fields = {
            "instanceId": None,
            "rackId": None,
            "clientId": m.client_id,
            "clientHost": m.client_host,
            "rebalanceTimeoutMs": m.rebalance_timeout,
            "topologyEpoch": 0,
            "processId": m.process_id,
            "userEndpoint": endpoint,
            "clientTags": [{"key": "zone", "value": zone(m)}],
        }
        return self._rec(g, 19, m, fields)

    def _delete_modern(self, g: Group, records: list[Rec]) -> None:
        """``ShareGroup``/``StreamsGroup.createGroupTombstoneRecords`` of an Empty group."""
        types = (12, 15, 11) if g.kind == "share" else (20, 17, 23)
        records.extend(self._rec(g, t) for t in types)
        g.exists848 = False
        g.group_epoch = g.assignment_epoch = 0
        g.share_topics = {}
