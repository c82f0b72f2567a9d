"""KIP-848 consumer groups in the simulated coordinator (``GroupMetadataManager`` of 4.x).

Members join and leave with heartbeats; each change bumps the group epoch, computes a target
assignment and reconciles members to it, written as records of types 3 to 8
(``ConsumerGroupMetadata``, ``ConsumerGroupMemberMetadata``, ``ConsumerGroupTargetAssignment*``,
``ConsumerGroupCurrentMemberAssignment``).
"""

from __future__ import annotations

from typing import Any

from offsetops.coordinator_core.schema.keys import GroupKey, encode_key
from offsetops.coordinator_core.schema.values import (
    GenericValue,
    encode_value,
)
from offsetops.coordinator_core.simulator.coordinator import GroupCoordinator
from offsetops.coordinator_core.simulator.model import (
    Group,
    Member,
    Rec,
)


class ConsumerGroupCoordinator(GroupCoordinator):
    """The coordinator with the KIP-848 consumer group protocol."""

    def _k(self, g: Group, record_type: int, member: Member | None = None) -> bytes:
        fields: dict[str, Any] = {"groupId": g.group_id}
        if member is not None:
            fields["memberId"] = member.member_id
        return encode_key(GroupKey(record_type, g.group_id, fields))

    def _v(self, record_type: int, fields: dict[str, Any]) -> bytes:
        self.stats.kip848_records += 1
        return encode_value(GenericValue(record_type, 0, fields))

    def _tps(self, assignment: dict[str, list[int]]) -> list[dict[str, Any]]:
        return [
            {"topicId": self.topics[t].topic_id, "partitions": sorted(p)}
            for t, p in sorted(assignment.items())
            if p
        ]

    def _member_record(self, g: Group, m: Member) -> Rec:
        return (
            self._k(g, 5, m),
            self._v(
                5,
                {
                    "instanceId": m.instance_id,
                    "rackId": None,
                    "clientId": m.client_id,
                    "clientHost": m.client_host,
                    "subscribedTopicNames": sorted(m.topics),
                    "subscribedTopicRegex": None,
                    "rebalanceTimeoutMs": m.rebalance_timeout,
                    "serverAssignor": "uniform",
                    "classicMemberMetadata": None,
                },
            ),
            self.now,
        )

    def _current_record(self, g: Group, m: Member, previous: int) -> Rec:
        return (
            self._k(g, 8, m),
            self._v(
                8,
                {
                    "memberEpoch": m.member_epoch,
                    "previousMemberEpoch": previous,
                    "state": 0,
                    "assignedPartitions": self._tps(m.assignment),
                    "partitionsPendingRevocation": [],
                },
            ),
            self.now,
        )

    def _bump_group_epoch(self, g: Group, records: list[Rec]) -> None:
        union = tuple(sorted({t for m in g.members for t in m.topics}))
        if union != g.metadata_topics or not g.exists848:
            g.metadata_topics = union
            topics = [
                {
                    "topicId": self.topics[t].topic_id,
                    "topicName": t,
                    "numPartitions": self.topics[t].partitions,
                    "partitionMetadata": [],
                }
                for t in union
            ]
            records.append((self._k(g, 4), self._v(4, {"topics": topics}), self.now))
        g.group_epoch += 1
        g.exists848 = True
        records.append((self._k(g, 3), self._v(3, {"epoch": g.group_epoch}), self.now))

    def _target_assignment(self, g: Group, records: list[Rec]) -> None:
        """The uniform assignor's target, one record per member, then the assignment epoch."""
        plan = self._range_assign(g)
        for m in g.members:
            m.target = plan[m.member_id]
            records.append((self._k(g, 7, m), self._v(7, {"topicPartitions": self._tps(m.target)}), self.now))
        g.assignment_epoch = g.group_epoch
        records.append((self._k(g, 6), self._v(6, {"assignmentEpoch": g.assignment_epoch}), self.now))

    def _join848(self, g: Group, m: Member) -> None:
        g.members.append(m)
        records = [self._member_record(g, m)]
        self._bump_group_epoch(g, records)
        self._target_assignment(g, records)
        m.assignment = dict(m.target)
        m.member_epoch = g.assignment_epoch
        records.append(self._current_record(g, m, 0))
        self._append(g, records)
        for other in g.members:
            if other is not m:
                self._at(self.now + self.rng.randint(100, 15_000), g.group_id, "reconcile", other.member_id)

    def _leave848(self, g: Group, m: Member) -> None:
        g.members.remove(m)
        records: list[Rec] = [
            (self._k(g, 8, m), None, self.now),
            (self._k(g, 7, m), None, self.now),
            (self._k(g, 5, m), None, self.now),
        ]
        self.stats.tombstones += 3
        self._bump_group_epoch(g, records)
        self._append(g, records)
        if g.members:
            # The next heartbeat of a remaining member computes the new target assignment.
            self._at(self.now + self.rng.randint(50, 5_000), g.group_id, "assign")

    def _on_assign(self, g: Group, _arg: Any) -> None:
        if g.kind != "consumer" or not g.members or g.assignment_epoch >= g.group_epoch:
            return
        records: list[Rec] = []
        self._target_assignment(g, records)
        self._append(g, records)
        for m in g.members:
            self._at(self.now + self.rng.randint(100, 15_000), g.group_id, "reconcile", m.member_id)

    def _on_reconcile(self, g: Group, member_id: str) -> None:
        m = next((m for m in g.members if m.member_id == member_id), None)
        if m is None or m.member_epoch == g.assignment_epoch or g.assignment_epoch < g.group_epoch:
            return
        previous = m.member_epoch
        m.member_epoch = g.assignment_epoch
        m.assignment = dict(m.target)
        self._append(g, [self._current_record(g, m, previous)])
