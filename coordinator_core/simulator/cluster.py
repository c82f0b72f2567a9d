"""The simulated cluster: consumer groups over time, and the group coordinator that logs them.

The coordinator here keeps its own cache (groups, members, generations, committed offsets, pending
transactional offsets per producer) and changes it only by Kafka's rules as it appends each record,
exactly as the broker's in-memory state follows its own writes. The ground truth is read from this
model; the loader is never involved.

The coordinator is built in layers, one concept each: :mod:`.coordinator` (cache, event loop,
offset and classic group records), :mod:`.kip848` (the consumer group protocol), and here the
clients' behaviour over time (joins, rebalances, commits, transactions, deletions, expiration) and
the ground truth.
"""

from __future__ import annotations

import uuid
from typing import Any

from offsetops.coordinator_core.simulator.model import (
    CLEANUP_INTERVAL_MS,
    MS_PER_DAY,
    RETENTION_MS,
    Group,
    Member,
    Offset,
    TopicPartition,
)
from offsetops.coordinator_core.simulator.share_streams import ShareStreamsCoordinator
from offsetops.coordinator_core.simulator.share_streams_truth import modern_group_truth

MODERN = ("share", "streams")


class Cluster(ShareStreamsCoordinator):
    """Consumer groups, their clients, and the coordinator writing ``__consumer_offsets``."""

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
        elif g.kind in MODERN:
            if not g.exists848:
                g.ready = rng.random() >= 0.1
                g.standby_replicas = rng.choice((0, 0, 1))
            for _ in range(rng.randint(1, 4)):
                self._join_modern(g, self._new_modern_member(g))
        else:
            g.members = [self._new_member(g) for _ in range(rng.randint(1, 4))]
            self._rebalance_classic(g)
        if g.kind not in ("connect", "share"):  # share groups keep their offsets in __share_group_state
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
        if g.kind in MODERN:
            if len(g.members) > 1 and rng.random() < 0.5:
                self._leave_modern(g, rng.choice(g.members))
            else:
                self._join_modern(g, self._new_modern_member(g))
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
        elif g.kind in MODERN:
            for m in list(g.members):
                self._leave_modern(g, m)
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
        elif g.kind in MODERN:
            if g.exists848:
                self._delete_modern(g, records)
        elif self.profile.java_tombstones or g.generation > 0:
            records.append(self._group_tombstone(g))
        if records:
            self._append(g, records)
        g.generation = 0
        g.protocol = g.protocol_type = g.leader = None
        g.deleted = True
        g.keys.clear()

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
            if g.kind == "share":
                continue  # ShareGroup.shouldExpire: share groups have no offsets here to expire
            if g.kind in ("consumer", "streams"):
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
        elif g.kind in MODERN and g.exists848:
            doc = modern_group_truth(self, g)
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
