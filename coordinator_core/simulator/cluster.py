"""The simulated cluster: consumer groups over time, and the group coordinator that logs them.

The coordinator here keeps its own cache (groups, members, generations, committed offsets, pending
transactional offsets per producer) and changes it only by Kafka's rules as it appends each record,
exactly as the broker's in-memory state follows its own writes. The ground truth is read from this
model; the loader is never involved.
"""

from __future__ import annotations

import heapq
import logging
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from coordinator_core.partitioner import partition_for
from coordinator_core.schema.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from coordinator_core.schema.keys import GroupKey, GroupMetadataKey, OffsetCommitKey, encode_key
from coordinator_core.schema.values import (
    GenericValue,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    encode_value,
)
from coordinator_core.simulator.log import PartitionLog
from coordinator_core.simulator.profile import BrokerProfile

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Rec = tuple[bytes, bytes | None, int]

RETENTION_MS = 7 * 24 * 3600 * 1000  # offsets.retention.minutes (2.0+)
CLEANUP_INTERVAL_MS = 10 * 60 * 1000  # offsets.retention.check.interval.ms
MS_PER_DAY = 24 * 3600 * 1000

_WORDS = (
    "orders",
    "payments",
    "billing",
    "clicks",
    "inventory",
    "shipping",
    "search",
    "fraud",
    "ledger",
    "users",
    "sessions",
    "audit",
    "metrics",
    "notifications",
    "pricing",
    "catalog",
    "checkout",
    "events",
)
_KIND_WEIGHTS = (("classic", 40), ("simple", 15), ("txn", 15), ("connect", 5), ("consumer", 25))
_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky", "sticky")


@dataclass(slots=True)
class Topic:
    name: str
    partitions: int
    topic_id: uuid.UUID
    leader_epoch: int = 0


@dataclass(slots=True)
class Offset:
    """A committed (or pending) offset as the coordinator caches it (``OffsetAndMetadata``)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_ts: int
    expire_ts: int
    record_offset: int
    batch_base: int

    def truth(self, tp: TopicPartition) -> dict[str, Any]:
        return {
            "topic": tp[0],
            "partition": tp[1],
            "offset": self.offset,
            "leader_epoch": self.leader_epoch if self.leader_epoch >= 0 else None,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_ts,
            "expire_timestamp": self.expire_ts if self.expire_ts >= 0 else None,
        }


@dataclass(slots=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout: int
    rebalance_timeout: int
    topics: list[str]
    assignment: dict[str, list[int]] = field(default_factory=dict)
    target: dict[str, list[int]] = field(default_factory=dict)  # KIP-848 target assignment
    member_epoch: int = 0
    producer_id: int = -1  # EOS: this member's transactional producer
    producer_epoch: int = 0


@dataclass(slots=True)
class Group:
    group_id: str
    kind: str  # classic | simple | txn | connect | consumer (KIP-848)
    partition: int
    topics: list[str]
    commit_interval: int
    protocol_type: str | None = None
    protocol: str | None = None
    generation: int = 0
    leader: str | None = None
    state_ts: int = -1
    members: list[Member] = field(default_factory=list)
    offsets: dict[TopicPartition, Offset] = field(default_factory=dict)
    pending: dict[int, dict[TopicPartition, Offset]] = field(default_factory=dict)
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    metadata_truth: dict[str, Any] | None = None  # what the last GroupMetadata record says
    subscription_version: int = 1
    assignment_version: int = 0
    alive: bool = False  # has members that commit
    deleted: bool = False
    hang_at: int | None = None  # EOS: the first transaction after this time never completes
    group_epoch: int = 0  # KIP-848
    assignment_epoch: int = 0
    exists848: bool = False
    metadata_topics: tuple[str, ...] = ()
    keys: dict[TopicPartition, bytes] = field(default_factory=dict)
    member_seq: int = 0


@dataclass(slots=True)
class SimStats:
    events: int = 0
    batches: int = 0
    records: int = 0
    offset_commits: int = 0
    group_records: int = 0
    kip848_records: int = 0
    tombstones: int = 0
    txn_committed: int = 0
    txn_aborted: int = 0
    txn_hanging: int = 0
    groups_deleted: int = 0
    groups_expired: int = 0
    rebalances: int = 0

    def to_json(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]


class Cluster:
    """Consumer groups, their clients, and the coordinator writing ``__consumer_offsets``."""

    def __init__(
        self,
        *,
        profile: BrokerProfile,
        logs: list[PartitionLog],
        rng: random.Random,
        num_groups: int,
        start_ms: int,
        codecs: tuple[int, ...],
    ) -> None:
        self.profile = profile
        self.logs = logs
        self.rng = rng
        self.now = start_ms
        self.start_ms = start_ms
        self.codecs = codecs
        self.stats = SimStats()
        self.java = profile.semantics == "java"
        self.coordinator_epoch = rng.randint(0, 20)
        self.next_pid = rng.randint(1000, 5000)
        self._heap: list[tuple[int, int, str, str, Any]] = []
        self._seq = 0
        self.topics = self._make_topics()
        self.groups: dict[str, Group] = {}
        for i in range(num_groups):
            g = self._new_group(i)
            self.groups[g.group_id] = g
            # Groups appear over the first hours, so the log does not start with a burst of joins.
            self._at(start_ms + int(rng.expovariate(1 / 3_600_000)), g.group_id, "start")
        self._at(start_ms + CLEANUP_INTERVAL_MS, "", "cleanup")
        self._at(start_ms + int(rng.expovariate(1 / MS_PER_DAY)), "", "leader_change")

    # -- setup ------------------------------------------------------------------------------------

    def _make_topics(self) -> dict[str, Topic]:
        rng = self.rng
        topics: dict[str, Topic] = {}
        for word in _WORDS:
            for suffix in ("", "-v2", ".dlq"):
                if suffix and rng.random() < 0.6:
                    continue
                name = word + suffix
                tid = uuid.UUID(int=rng.getrandbits(128))
                topics[name] = Topic(name, rng.choice((1, 3, 6, 12, 24, 48)), tid, rng.randint(0, 30))
        return topics

    def _new_group(self, i: int) -> Group:
        rng = self.rng
        kinds = [(k, w) for k, w in _KIND_WEIGHTS if k != "consumer" or self.profile.kip848]
        kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        word = rng.choice(_WORDS)
        if kind == "connect":
            gid = f"connect-cluster-{word}-{i}"
        elif kind == "simple":
            gid = f"{word}-backfill-{i}"
        elif rng.random() < 0.02:
            gid = f"组-{word}-{i}"  # non-ASCII ids: partition_for hashes UTF-16 units
        else:
            gid = f"{word}-{rng.choice(('consumer', 'processor', 'sink', 'etl', 'app'))}-{i}"
        names = sorted(self.topics)
        topics = [] if kind == "connect" else sorted(rng.sample(names, rng.choice((1, 1, 2, 3))))
        # auto.commit.interval.ms is 5 s by default; commits of idle partitions and manual commits
        # spread that from seconds to minutes.
        interval = int(1000 * 10 ** rng.uniform(0.7, 2.7))
        g = Group(gid, kind, partition_for(gid, len(self.logs)), topics, interval)
        g.subscription_version = rng.choice((0, 1, 1, 2, 3))
        g.assignment_version = rng.choice((0, 1, 3))
        if kind == "txn" and rng.random() < 0.25:
            g.hang_at = self.start_ms + int(rng.expovariate(1 / (6 * 3_600_000)))
        return g

    # -- the event loop ---------------------------------------------------------------------------

    def _at(self, when: int, gid: str, action: str, arg: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, gid, action, arg))

    def run_until(self, end_ms: int | None, stop: Any = None) -> None:
        """Process events in time order until ``end_ms`` (or, with ``stop()``, until it says so)."""
        heap = self._heap
        while heap:
            if end_ms is not None and heap[0][0] > end_ms:
                self.now = end_ms
                return
            when, _seq, gid, action, arg = heapq.heappop(heap)
            self.now = max(self.now, when)
            self.stats.events += 1
            getattr(self, f"_on_{action}")(self.groups.get(gid), arg)
            if stop is not None and stop():
                return

    # -- writing records (the coordinator's append path, with its cache update) -----------------

    def _codec(self) -> int:
        # One codec: no draw, so the random stream (and every simulated log) stays as it was.
        return self.rng.choice(self.codecs) if len(self.codecs) > 1 else next(iter(self.codecs))

    def _append(self, g: Group, records: list[Rec], *, pid: int = -1, epoch: int = -1) -> int:
        plog = self.logs[g.partition]
        base = plog.append_records(
            records,
            now_ms=self.now,
            compression=self._codec(),
            producer_id=pid,
            producer_epoch=epoch,
            transactional=pid >= 0,
        )
        self.stats.batches += 1
        self.stats.records += len(records)
        return base

    def _offset_key(self, g: Group, tp: TopicPartition) -> bytes:
        key = g.keys.get(tp)
        if key is None:
            key = g.keys[tp] = encode_key(OffsetCommitKey(g.group_id, tp[0], tp[1]))
        return key

    def _offset_value(self, o: Offset, topic: str, version: int) -> bytes:
        topic_id = self.topics[topic].topic_id if version >= 4 and o.offset % 3 == 0 else None
        return encode_value(
            OffsetCommitValue(
                version,
                o.offset,
                o.leader_epoch if version >= 3 else -1,
                o.metadata,
                o.commit_ts,
                o.expire_ts if version == 1 else -1,
                topic_id,
            )
        )

    def _commit_offsets(
        self, g: Group, tps: list[TopicPartition], *, metadata: str = "", pid: int = -1, epoch: int = -1
    ) -> None:
        """One OffsetCommit (or TxnOffsetCommit) request: one batch, one record per partition."""
        if not tps:
            return
        rng = self.rng
        prof = self.profile
        version = prof.offset_value_version
        retention = -1
        if prof.expire_in_value:
            retention = RETENTION_MS
        elif prof.explicit_retention_v1 and pid < 0 and rng.random() < 0.03:
            version, retention = 1, rng.choice((3, 14)) * MS_PER_DAY  # an old client set retention_time
        new: list[tuple[TopicPartition, Offset]] = []
        records: list[Rec] = []
        for tp in tps:
            pos = g.positions.get(tp, rng.randint(0, 10**6)) + int(rng.expovariate(1 / 500))
            g.positions[tp] = pos
            topic = self.topics[tp[0]]
            o = Offset(
                pos,
                topic.leader_epoch if version >= 3 else -1,
                metadata,
                self.now,
                self.now + retention if retention >= 0 else -1,
                -1,
                -1,
            )
            new.append((tp, o))
            records.append((self._offset_key(g, tp), self._offset_value(o, tp[0], version), self.now))
        base = self._append(g, records, pid=pid, epoch=epoch)
        self.stats.offset_commits += len(records)
        for i, (tp, o) in enumerate(new):
            o.record_offset = base + i
            o.batch_base = base
            if pid >= 0:
                g.pending.setdefault(pid, {})[tp] = o
            else:
                g.offsets[tp] = o

    def _offset_tombstones(self, g: Group, tps: list[TopicPartition]) -> list[Rec]:
        recs: list[Rec] = [(self._offset_key(g, tp), None, self.now) for tp in tps]
        for tp in tps:
            g.offsets.pop(tp, None)
            if self.java:
                # OffsetMetadataManager.replay: a tombstone also drops the partition from open txns.
                for pending in g.pending.values():
                    pending.pop(tp, None)
        self.stats.tombstones += len(recs)
        return recs

    def _group_record(self, g: Group) -> Rec:
        """A GroupMetadata record of the group as it is now (``GroupMetadataManager.storeGroup``)."""
        version = self.profile.group_value_version
        members = []
        for m in g.members:
            if g.kind == "connect":
                sub = f'{{"url":"http://{m.client_host[1:]}:8083","configOffset":{g.generation}}}'.encode()
                asg = f'{{"leader":"{g.leader}","tasks":{len(m.assignment)}}}'.encode()
            else:
                owned = m.assignment if g.subscription_version >= 1 else {}
                sub = encode_subscription(
                    Subscription(g.subscription_version, tuple(m.topics), None, owned, g.generation, None)
                )
                asg = encode_assignment(Assignment(g.assignment_version, dict(m.assignment), None))
            members.append(
                MemberMetadata(
                    m.member_id,
                    m.instance_id if version >= 3 else None,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout,
                    m.session_timeout,
                    sub,
                    asg,
                )
            )
        cst = g.state_ts if version >= 2 else -1
        value = GroupMetadataValue(
            version, g.protocol_type or "", g.generation, g.protocol, g.leader, cst, tuple(members)
        )
        consumer = g.protocol_type == "consumer"
        g.metadata_truth = {
            "group_id": g.group_id,
            "group_type": "classic",
            "state": "Stable" if g.members else "Empty",
            "protocol_type": g.protocol_type or None,
            "generation": g.generation,
            "protocol": g.protocol,
            "leader": g.leader,
            "current_state_timestamp": cst if cst >= 0 else None,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.instance_id if version >= 3 else None,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "session_timeout_ms": m.session_timeout,
                    "rebalance_timeout_ms": m.rebalance_timeout,
                    "subscribed_topics": sorted(m.topics) if consumer else None,
                    "assignment": {t: sorted(p) for t, p in m.assignment.items()} if consumer else None,
                }
                for m in g.members
            ],
        }
        self.stats.group_records += 1
        return (encode_key(GroupMetadataKey(g.group_id)), encode_value(value), self.now)

    def _group_tombstone(self, g: Group) -> Rec:
        g.metadata_truth = None
        self.stats.tombstones += 1
        return (encode_key(GroupMetadataKey(g.group_id)), None, self.now)

    # -- members and assignments ------------------------------------------------------------------

    def _new_member(self, g: Group) -> Member:
        rng = self.rng
        g.member_seq += 1
        client = f"{g.group_id}-client-{g.member_seq}" if rng.random() < 0.7 else "consumer-1"
        static = g.kind != "connect" and self.profile.static_members and rng.random() < 0.3
        return Member(
            member_id=f"{client}-{uuid.UUID(int=rng.getrandbits(128))}",
            instance_id=f"{g.group_id}-instance-{g.member_seq}" if static else None,
            client_id=client,
            client_host=f"/10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
            session_timeout=rng.choice((10_000, 30_000, 45_000)),
            rebalance_timeout=rng.choice((60_000, 300_000)),
            topics=list(g.topics),
        )

    def _partitions(self, topics: list[str]) -> list[TopicPartition]:
        return [(t, p) for t in topics for p in range(self.topics[t].partitions)]

    def _range_assign(self, g: Group) -> dict[str, dict[str, list[int]]]:
        """The RangeAssignor: per topic, consecutive partition ranges over the sorted members."""
        out: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in g.members}
        ids = sorted(out)
        for t in g.topics:
            n = self.topics[t].partitions
            per, extra = divmod(n, len(ids))
            start = 0
            for i, mid in enumerate(ids):
                count = per + (1 if i < extra else 0)
                if count:
                    out[mid][t] = list(range(start, start + count))
                start += count
        return out

    def _rebalance_classic(self, g: Group) -> None:
        """A completed rebalance: next generation, new assignment, GroupMetadata stored (SyncGroup)."""
        g.generation += 1
        g.state_ts = self.now
        if g.members:
            g.protocol_type = "connect" if g.kind == "connect" else "consumer"
            if g.protocol is None or self.rng.random() < 0.05:
                g.protocol = "sessioned" if g.kind == "connect" else self.rng.choice(_ASSIGNORS)
            g.leader = g.members[0].member_id
            if g.kind == "connect":
                for i, m in enumerate(g.members):
                    m.assignment = {"tasks": [i]}
            else:
                plan = self._range_assign(g)
                for m in g.members:
                    m.assignment = plan[m.member_id]
        else:
            g.protocol = None
            g.leader = None
        self.stats.rebalances += 1
        self._append(g, [self._group_record(g)])

    # -- KIP-848 consumer groups (GroupMetadataManager.consumerGroupHeartbeat) --------------------

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

    # -- group lifecycle events -------------------------------------------------------------------

    def _on_start(self, g: Group, _arg: Any) -> None:
        """Members join (or a standalone consumer starts committing)."""
        rng = self.rng
        if g.alive:
            return
        g.deleted = False
        g.alive = True
        if g.kind == "simple":
            g.protocol_type = None
        elif g.kind == "consumer":
            for _ in range(rng.randint(1, 4)):
                self._join848(g, self._new_member(g))
        else:
            g.members = [self._new_member(g) for _ in range(rng.randint(1, 4))]
            self._rebalance_classic(g)
        if g.kind != "connect":
            self._at(self.now + rng.randint(0, g.commit_interval), g.group_id, "commit", 0)
        self._at(self.now + int(rng.expovariate(1 / (8 * 3_600_000))), g.group_id, "rebalance")
        fate = rng.random()
        if fate < 0.12:
            self._at(self.now + int(rng.expovariate(1 / (12 * 3_600_000))), g.group_id, "empty", "stay")
        elif fate < 0.24:
            self._at(self.now + int(rng.expovariate(1 / (12 * 3_600_000))), g.group_id, "empty", "delete")

    def _on_rebalance(self, g: Group, _arg: Any) -> None:
        rng = self.rng
        if not g.alive:
            return
        self._at(self.now + int(rng.expovariate(1 / (8 * 3_600_000))), g.group_id, "rebalance")
        if g.kind == "simple":
            return
        if g.kind == "consumer":
            if len(g.members) > 1 and rng.random() < 0.5:
                self._leave848(g, rng.choice(g.members))
            else:
                self._join848(g, self._new_member(g))
            return
        statics = [m for m in g.members if m.instance_id is not None]
        roll = rng.random()
        if statics and roll < 0.3:
            # A static member restarts: new member id, same generation, no rebalance (KIP-345).
            m = rng.choice(statics)
            old = m.member_id
            m.member_id = f"{m.client_id}-{uuid.UUID(int=rng.getrandbits(128))}"
            if g.leader == old:
                g.leader = m.member_id
            self._append(g, [self._group_record(g)])
            return
        if len(g.members) > 1 and roll < 0.6:
            g.members.remove(rng.choice(g.members))
        elif roll < 0.85:
            g.members.append(self._new_member(g))
        else:
            # A rolling restart of a dynamic member: it rejoins with a new id.
            g.members.remove(rng.choice(g.members))
            g.members.append(self._new_member(g))
        self._rebalance_classic(g)

    def _on_empty(self, g: Group, then: str) -> None:
        """Every member leaves; the group stays Empty, or is deleted a while later."""
        if not g.alive:
            return
        g.alive = False
        if g.kind == "consumer":
            for m in list(g.members):
                self._leave848(g, m)
        elif g.kind != "simple":
            g.members = []
            self._rebalance_classic(g)
        if then == "delete":
            self._at(self.now + int(self.rng.expovariate(1 / 3_600_000)), g.group_id, "delete")

    def _on_delete(self, g: Group, _arg: Any) -> None:
        """``DeleteGroups`` on an Empty group (the coordinator refuses while a transaction is open)."""
        if g.alive or g.members or g.deleted:
            return
        if any(g.pending.values()):
            self._at(self.now + 3_600_000, g.group_id, "delete")
            return
        self._delete(g, sorted(g.offsets))
        self.stats.groups_deleted += 1
        if self.rng.random() < 0.3:
            self._at(self.now + int(self.rng.expovariate(1 / (12 * 3_600_000))), g.group_id, "start")

    def _delete(self, g: Group, tps: list[TopicPartition]) -> None:
        """Offset tombstones, then the group's own tombstones (``cleanupGroupMetadata``)."""
        records = self._offset_tombstones(g, tps)
        if g.kind == "consumer":
            if g.exists848:
                # ConsumerGroup.createGroupTombstoneRecords; Empty, so no per-member records remain.
                for rtype in (6, 4, 3):
                    records.append((self._k(g, rtype), None, self.now))
                self.stats.tombstones += 3
                g.exists848 = False
                g.group_epoch = g.assignment_epoch = 0
                g.metadata_topics = ()
        elif self.profile.java_tombstones or g.generation > 0:
            records.append(self._group_tombstone(g))
        if records:
            self._append(g, records)
        g.generation = 0
        g.protocol = g.protocol_type = g.leader = None
        g.deleted = True
        g.keys.clear()

    # -- commits and transactions -----------------------------------------------------------------

    def _on_commit(self, g: Group, turn: int) -> None:
        rng = self.rng
        if not g.alive:
            return
        self._at(
            self.now + max(1, int(rng.gauss(g.commit_interval, g.commit_interval / 10))),
            g.group_id,
            "commit",
            turn + 1,
        )
        if g.kind == "simple":
            parts = self._partitions(g.topics)
            tps = parts if rng.random() < 0.5 else rng.sample(parts, max(1, len(parts) // 3))
            self._commit_offsets(g, sorted(tps), metadata=rng.choice(("", "", "backfill")))
            return
        if not g.members:
            return
        m = g.members[turn % len(g.members)]
        tps = sorted((t, p) for t, ps in m.assignment.items() for p in ps)
        if not tps:
            return
        if g.kind == "txn":
            self._begin_txn(g, m, tps)
            return
        manual = rng.random() < 0.1
        if manual:
            tps = rng.sample(tps, max(1, len(tps) // 2))
        self._commit_offsets(g, sorted(tps), metadata=f"manual@{self.now}" if manual else "")

    def _begin_txn(self, g: Group, m: Member, tps: list[TopicPartition]) -> None:
        """``sendOffsetsToTransaction``: a TxnOffsetCommit; the marker follows when the txn ends."""
        rng = self.rng
        if m.producer_id < 0:
            m.producer_id = self.next_pid
            self.next_pid += rng.randint(1, 50)
        if m.producer_id in g.pending:
            return  # this producer's previous transaction is still open
        self._commit_offsets(g, tps, pid=m.producer_id, epoch=m.producer_epoch)
        if g.hang_at is not None and self.now >= g.hang_at:
            # The producer dies mid-transaction and its transactional.id is never reused: no marker.
            g.hang_at = None
            self.stats.txn_hanging += 1
            m.producer_id, m.producer_epoch = -1, 0
            return
        commit = rng.random() >= 0.08
        self._at(
            self.now + rng.randint(5, 3_000), g.group_id, "marker", (m.producer_id, m.producer_epoch, commit)
        )

    def _on_marker(self, g: Group, arg: tuple[int, int, bool]) -> None:
        """``WriteTxnMarkers``: COMMIT makes the pending offsets visible, ABORT drops them."""
        pid, epoch, commit = arg
        self.logs[g.partition].append_marker(
            commit,
            producer_id=pid,
            producer_epoch=epoch,
            coordinator_epoch=self.coordinator_epoch,
            now_ms=self.now,
        )
        self.stats.batches += 1
        self.stats.records += 1
        pending = g.pending.pop(pid, {})
        if commit:
            self.stats.txn_committed += 1
            for tp, o in pending.items():
                cur = g.offsets.get(tp)
                # Java compares record offsets, Scala the batch base offsets (CommitRecordMetadataAndOffset).
                newer = cur is None or (
                    cur.record_offset < o.record_offset if self.java else cur.batch_base < o.batch_base
                )
                if newer:
                    g.offsets[tp] = o
        else:
            self.stats.txn_aborted += 1
            for m in g.members:
                if m.producer_id == pid:
                    m.producer_epoch += 1  # the abort fences the old epoch

    # -- the coordinator's periodic work ----------------------------------------------------------

    def _expired(self, g: Group, o: Offset, base_ts: int | None) -> bool:
        if o.expire_ts >= 0:
            return self.now >= o.expire_ts
        return self.now - (o.commit_ts if base_ts is None else base_ts) >= RETENTION_MS

    def _on_cleanup(self, _g: Group | None, _arg: Any) -> None:
        """``cleanupGroupMetadata`` every offsets.retention.check.interval.ms (KIP-211 rules)."""
        self._at(self.now + CLEANUP_INTERVAL_MS, "", "cleanup")
        for g in self.groups.values():
            if g.deleted or any(g.pending.values()):
                continue
            if g.kind == "consumer":
                if g.members or not g.exists848:
                    continue
                expired = [tp for tp, o in g.offsets.items() if self._expired(g, o, None)]
            elif g.metadata_truth is None:
                # standalone: offsets only, each from its own commit
                if not g.offsets:
                    continue
                expired = [tp for tp, o in g.offsets.items() if self._expired(g, o, None)]
            elif g.members:
                expired = [tp for tp, o in g.offsets.items() if o.expire_ts >= 0 and self.now >= o.expire_ts]
            else:
                base = g.state_ts if self.profile.group_value_version >= 2 else None
                expired = [tp for tp, o in g.offsets.items() if self._expired(g, o, base)]
            dead = not g.members and len(expired) == len(g.offsets) and not g.alive
            if not expired and not dead:
                continue
            if dead:
                self._delete(g, sorted(expired))
                self.stats.groups_expired += 1
            else:
                self._append(g, self._offset_tombstones(g, sorted(expired)))

    def _on_leader_change(self, _g: Group | None, _arg: Any) -> None:
        rng = self.rng
        self._at(self.now + int(rng.expovariate(1 / MS_PER_DAY)), "", "leader_change")
        rng.choice(self.logs).bump_leader_epoch()
        rng.choice(list(self.topics.values())).leader_epoch += 1

    # -- the ground truth -------------------------------------------------------------------------

    def truth_groups(self, partition: int) -> list[dict[str, Any]]:
        """The groups the coordinator caches for ``partition``, shaped like ``GroupMetadata.to_json``."""
        out = []
        for gid in sorted(self.groups):
            g = self.groups[gid]
            if g.partition != partition:
                continue
            doc = self._group_truth(g)
            if doc is not None:
                out.append(doc)
        return out

    def _group_truth(self, g: Group) -> dict[str, Any] | None:
        pending = {pid: p for pid, p in g.pending.items() if p}
        if g.kind == "consumer" and g.exists848:
            doc = self._consumer_group_truth(g)
        elif g.metadata_truth is not None:
            doc = dict(g.metadata_truth)
        elif g.offsets or pending:
            doc = {
                "group_id": g.group_id,
                "group_type": "classic",
                "state": "Empty",
                "protocol_type": None,
                "generation": 0,
                "protocol": None,
                "leader": None,
                "current_state_timestamp": None,
                "members": [],
            }
        else:
            return None
        doc["offsets"] = [g.offsets[tp].truth(tp) for tp in sorted(g.offsets)]
        doc["pending_offsets"] = [
            {"producer_id": pid, "topic": tp[0], "partition": tp[1], "offset": o.offset}
            for pid in sorted(pending)
            for tp, o in sorted(pending[pid].items())
        ]
        return doc

    def _consumer_group_truth(self, g: Group) -> dict[str, Any]:
        """``ConsumerGroup`` and its state (``ConsumerGroup.maybeUpdateGroupState``)."""
        if not g.members:
            state = "Empty"
        elif g.group_epoch > g.assignment_epoch:
            state = "Assigning"
        elif any(m.member_epoch != g.assignment_epoch for m in g.members):
            state = "Reconciling"
        else:
            state = "Stable"
        return {
            "group_id": g.group_id,
            "group_type": "consumer",
            "state": state,
            "protocol_type": "consumer",
            "generation": g.group_epoch,
            "protocol": None,
            "leader": None,
            "current_state_timestamp": None,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "session_timeout_ms": None,
                    "rebalance_timeout_ms": m.rebalance_timeout,
                    "subscribed_topics": sorted(m.topics),
                    "assignment": {t: sorted(p) for t, p in m.assignment.items() if p},
                }
                for m in sorted(g.members, key=lambda m: m.member_id)
            ],
        }

    def open_transactions(self) -> list[dict[str, Any]]:
        return [
            {"producer_id": pid, "group_id": g.group_id, "partition": g.partition}
            for g in sorted(self.groups.values(), key=lambda g: g.group_id)
            for pid, p in sorted(g.pending.items())
            if p
        ]
