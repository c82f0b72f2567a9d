"""The simulated group coordinator: its cache, its event queue, and its append path.

Every record it writes changes its cache by Kafka's rules as it is appended (``GroupCoordinator``,
``OffsetMetadataManager.replay``), exactly as the broker's in-memory state follows its own writes:
offset commits and their tombstones, and the classic protocol's ``GroupMetadata`` records.
"""

from __future__ import annotations

import heapq
import logging
import random
import uuid
from typing import Any

from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.schema.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from offsetops.coordinator_core.schema.keys import GroupMetadataKey, OffsetCommitKey, encode_key
from offsetops.coordinator_core.schema.values import (
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    encode_value,
)
from offsetops.coordinator_core.simulator.log import PartitionLog
from offsetops.coordinator_core.simulator.model import (
    _ASSIGNORS,
    _KIND_WEIGHTS,
    _WORDS,
    CLEANUP_INTERVAL_MS,
    MS_PER_DAY,
    RETENTION_MS,
    Group,
    Member,
    Offset,
    Rec,
    SimStats,
    Topic,
    TopicPartition,
)
from offsetops.coordinator_core.simulator.profile import BrokerProfile

log = logging.getLogger(__name__)


class GroupCoordinator:
    """The coordinator's state, event loop and records; the group protocols and events build on it."""

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
        enabled = {
            "consumer": self.profile.kip848,
            "share": self.profile.share_groups,
            "streams": self.profile.streams_groups,
        }
        kinds = [(k, w) for k, w in _KIND_WEIGHTS if enabled.get(k, True)]
        kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        word = rng.choice(_WORDS)
        if kind == "connect":
            gid = f"connect-cluster-{word}-{i}"
        elif kind == "simple":
            gid = f"{word}-backfill-{i}"
        elif kind == "share":
            gid = f"{word}-queue-{i}"
        elif kind == "streams":
            gid = f"{word}-streams-app-{i}"
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
