"""Commit history of one group: who moved its offsets, and when.

Replays the group's ``__consumer_offsets`` partition record by record (before compaction removes the
older commits) and lists every OffsetCommit of the group in log order, with the member that owned the
partition at that moment (from the latest GroupMetadata record, or the KIP-848 member and assignment
records, before it). An OffsetCommit record carries no member id (``OffsetCommitValue``), so the owner
is the assignment's owner, and a commit for a partition that no member held was written from outside
the group's assignment: ``kafka-consumer-groups --reset-offsets``, an AdminClient
``alterConsumerGroupOffsets``, or a consumer using ``assign()`` with the same group id.

Flags, per commit, judged when it took effect (a transactional commit at its COMMIT marker; aborted
and still-open ones never did and carry none):

- ``rewind``: the offset is below the previous commit of the same partition (an offset reset);
- ``past_log_end``: the offset jumps above the data partition's current log end (the first commit
  that crosses it; later ones above it are not flagged again);
- ``not_assigned``: the group had members but none owned the partition;
- ``tombstone``: the committed offset was deleted (OffsetDelete, expiration or group deletion).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.cache import GroupMetadata
from offsetops.coordinator_core.data_offsets import PartitionOffsets
from offsetops.coordinator_core.errors import DecodeError, OffsetsDecodeException
from offsetops.coordinator_core.records.batch import Record, RecordBatch
from offsetops.coordinator_core.schema import (
    SchemaError,
    decode_assignment,
    decode_control_key,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_value,
)
from offsetops.coordinator_core.schema.keys import GroupKey, GroupMetadataKey, OffsetCommitKey

REWIND = "rewind"
PAST_LOG_END = "past_log_end"
NOT_ASSIGNED = "not_assigned"
TOMBSTONE = "tombstone"

_CONTROL_ABORT, _CONTROL_COMMIT = 0, 1
_KIP848_TYPES = frozenset(range(3, 9))  # ConsumerGroup* records: metadata, members, assignments


@dataclass(frozen=True, slots=True)
class Owner:
    """A member as the group knew it when the commit was written."""

    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "client_id": self.client_id,
            "host": self.host,
            "group_instance_id": self.group_instance_id,
        }


@dataclass(slots=True)
class CommitEvent:
    """One OffsetCommit (or offset tombstone) record of the group."""

    record_offset: int
    timestamp: int  # the record's timestamp: when the coordinator appended it
    topic: str
    partition: int
    offset: int | None  # None for a tombstone
    leader_epoch: int | None
    metadata: str | None
    commit_timestamp: int | None
    transactional: bool
    producer_id: int | None
    producer_epoch: int | None
    outcome: str  # "committed" (plain, or txn with COMMIT marker), "aborted", "open"
    generation: int | None
    group_state: str | None
    members: int
    owner: Owner | None
    previous_offset: int | None = None
    flags: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "record_offset": self.record_offset,
            "timestamp": self.timestamp,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "previous_offset": self.previous_offset,
            "leader_epoch": self.leader_epoch,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_timestamp,
            "transactional": self.transactional,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "outcome": self.outcome,
            "generation": self.generation,
            "group_state": self.group_state,
            "members": self.members,
            "owner": None if self.owner is None else self.owner.to_json(),
            "flags": list(self.flags),
        }


@dataclass(frozen=True, slots=True)
class GroupChange:
    """A GroupMetadata (or KIP-848 epoch) change: the membership that later commits are judged by."""

    record_offset: int
    timestamp: int
    generation: int | None
    state: str
    members: tuple[Owner, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "record_offset": self.record_offset,
            "timestamp": self.timestamp,
            "generation": self.generation,
            "state": self.state,
            "members": [m.to_json() for m in self.members],
        }


@dataclass(slots=True)
class CommitHistory:
    group_id: str
    offsets_partition: int | None
    commits: deque[CommitEvent] = field(default_factory=deque)
    changes: list[GroupChange] = field(default_factory=list)
    total_commits: int = 0  # every commit of the group, kept or not
    dropped_commits: int = 0  # selected, but older than the newest ``max_commits``
    records_read: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    errors: list[DecodeError] = field(default_factory=list)

    def flagged(self, flag: str) -> list[CommitEvent]:
        return [c for c in self.commits if flag in c.flags]


class _Membership:
    """The group's members and assignment as of the record being replayed."""

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.generation: int | None = None
        self.state = "Empty"
        self.members: list[Owner] = []
        self.owners: dict[tuple[str, int], Owner] = {}
        self._kip848: dict[bytes, tuple[GroupKey, Any]] = {}
        self._kip848_dirty = False

    def classic(self, value: bytes | None) -> None:
        self._kip848.clear()
        if value is None:
            self.generation, self.state, self.members, self.owners = None, "Dead", [], {}
            return
        v = decode_group_metadata_value(value)
        self.generation = v.generation
        self.members, self.owners = [], {}
        for m in v.members:
            owner = Owner(m.member_id, m.client_id, m.client_host, m.group_instance_id)
            self.members.append(owner)
            if (v.protocol_type or "") == "consumer":
                asg = decode_assignment(m.assignment)
                for topic, parts in asg.partitions.items() if asg is not None else ():
                    for p in parts:
                        self.owners[(topic, p)] = owner
        self.state = "Stable" if self.members else "Empty"

    def kip848(self, raw_key: bytes, key: GroupKey, value: bytes | None) -> None:
        if value is None:
            self._kip848.pop(raw_key, None)
        else:
            self._kip848[raw_key] = (key, decode_value(key.record_type, value))
        self._kip848_dirty = True

    def refresh(self) -> None:
        """Rebuild a KIP-848 group from its records with the loader's own reconstruction."""
        if not self._kip848_dirty:
            return
        self._kip848_dirty = False
        # The loader's ConsumerGroup reconstruction, reused so both views agree on owners and state.
        from offsetops.coordinator_core.kip848 import consumer_group

        by_type: dict[int, list[tuple[GroupKey, Any]]] = {}
        for key, value in self._kip848.values():
            by_type.setdefault(key.record_type, []).append((key, value))
        if not by_type:
            self.generation, self.state, self.members, self.owners = None, "Dead", [], {}
            return
        group: GroupMetadata = consumer_group(self.group_id, by_type, {})
        self.generation, self.state = group.generation, group.state
        self.members, self.owners = [], {}
        for m in group.members:
            owner = Owner(m.member_id, m.client_id, m.client_host, m.group_instance_id)
            self.members.append(owner)
            for topic, parts in (m.assignment or {}).items():
                for p in parts:
                    self.owners[(topic, p)] = owner


LogOffsetsLookup = Callable[[tuple[str, int]], PartitionOffsets | None]


class _Flagger:
    """Judges each commit when it takes effect: a plain commit at once, a transactional one at its
    COMMIT marker. Keeps one previous offset per partition, so memory is bounded by partitions."""

    def __init__(self, lookup: LogOffsetsLookup | None):
        self._lookup = lookup
        self._ends: dict[tuple[str, int], int | None] = {}
        self.previous: dict[tuple[str, int], int | None] = {}

    def _log_end(self, tp: tuple[str, int]) -> int | None:
        if tp not in self._ends:
            lo = self._lookup(tp) if self._lookup is not None else None
            self._ends[tp] = lo.log_end_offset if lo is not None else None
        return self._ends[tp]

    def apply(self, ev: CommitEvent) -> None:
        tp = (ev.topic, ev.partition)
        ev.previous_offset = self.previous.get(tp)
        ev.flags = []
        if ev.offset is None:
            ev.flags.append(TOMBSTONE)
        else:
            if ev.previous_offset is not None and ev.offset < ev.previous_offset:
                ev.flags.append(REWIND)
            end = self._log_end(tp)
            # Only the commit that crosses the log end is flagged, not every later one above it.
            crossed = ev.previous_offset is None or (end is not None and ev.previous_offset <= end)
            if end is not None and ev.offset > end and crossed:
                ev.flags.append(PAST_LOG_END)
            if ev.members and ev.owner is None:
                ev.flags.append(NOT_ASSIGNED)
        self.previous[tp] = ev.offset


def replay_history(
    batches: Iterable[RecordBatch],
    group_id: str,
    *,
    offsets_partition: int | None,
    errors: list[DecodeError] | None = None,
    log_offsets: LogOffsetsLookup | None = None,
    keep: Callable[[CommitEvent], bool] | None = None,
    max_commits: int | None = None,
) -> CommitHistory:
    """Every commit of ``group_id`` in log order, with its owner then, its transaction outcome and
    its flags (``log_offsets`` gives a data partition's log end for ``past_log_end``).

    Only commits ``keep`` accepts are stored, and at most the newest ``max_commits`` of them, so
    memory stays bounded on a log the cleaner never compacted; the counts say what was left out.
    """
    hist = CommitHistory(group_id, offsets_partition, errors=errors if errors is not None else [])
    if max_commits is not None:
        hist.commits = deque(maxlen=max_commits)
    flagger = _Flagger(log_offsets)
    needle = group_id.encode("utf-8")
    members = _Membership(group_id)
    open_txn: dict[int, list[CommitEvent]] = {}
    last_change: tuple[Any, ...] | None = None
    kip848_at: tuple[int, int] | None = None
    for batch in batches:
        try:
            records = list(batch.iter_records())
        except OffsetsDecodeException as exc:
            hist.errors.append(exc.error)
            continue
        if hist.first_offset is None:
            hist.first_offset = batch.base_offset
        hist.last_offset = batch.last_offset
        hist.records_read += len(records)
        if batch.is_control:
            _end_transactions(records, batch.producer_id, open_txn, flagger)
            continue
        for off, ts, key, value in records:
            # Cheap filter first: the group id's bytes must appear in the key.
            if key is None or needle not in key:
                continue
            try:
                k = decode_key(key)
                if k.group_id != group_id:
                    continue
                if isinstance(k, OffsetCommitKey):
                    members.refresh()
                    ev = _commit_event(k, off, ts, value, batch, members)
                    hist.total_commits += 1
                    if batch.is_transactional:
                        open_txn.setdefault(batch.producer_id, []).append(ev)
                    else:
                        flagger.apply(ev)
                    if keep is None or keep(ev):
                        _store(hist, ev)
                    continue
                if isinstance(k, GroupMetadataKey):
                    members.classic(value)
                elif isinstance(k, GroupKey) and k.record_type in _KIP848_TYPES:
                    # The Java coordinator appends one operation's records as one batch: rebuild the
                    # group once, after the batch, not once per record.
                    members.kip848(key, k, value)
                    kip848_at = (off, ts)
                    continue
                else:
                    continue
            except (SchemaError, ValueError) as exc:
                hist.errors.append(_record_error(exc, batch, offsets_partition, off))
                continue
            last_change = _note_change(hist, members, last_change, off, ts)
        if kip848_at is not None:
            members.refresh()
            last_change = _note_change(hist, members, last_change, *kip848_at)
            kip848_at = None
    return hist


def _end_transactions(
    records: list[Record], producer_id: int, open_txn: dict[int, list[CommitEvent]], flagger: _Flagger
) -> None:
    """A control batch: a COMMIT or ABORT marker settles the producer's staged commits (flagged once
    committed); other control records are not transaction markers."""
    for _off, _ts, key, _value in records:
        try:
            ctype = decode_control_key(key or b"").type
        except SchemaError:
            continue
        if ctype in (_CONTROL_ABORT, _CONTROL_COMMIT):
            for ev in open_txn.pop(producer_id, []):
                ev.outcome = "committed" if ctype == _CONTROL_COMMIT else "aborted"
                if ctype == _CONTROL_COMMIT:
                    flagger.apply(ev)


def _store(hist: CommitHistory, ev: CommitEvent) -> None:
    """Keep ``ev``; when the history is full the oldest commit gives way, and is counted."""
    if hist.commits.maxlen is not None and len(hist.commits) == hist.commits.maxlen:
        hist.dropped_commits += 1
    hist.commits.append(ev)


def _record_error(
    exc: Exception, batch: RecordBatch, offsets_partition: int | None, offset: int
) -> DecodeError:
    """A record of the group that does not decode: the schema's kind when it says one."""
    return DecodeError(
        getattr(exc, "kind", "corrupt_record"),
        str(exc),
        getattr(batch, "file", None),
        offsets_partition,
        batch.position,
        offset,
    )


def _note_change(
    hist: CommitHistory, members: _Membership, last: tuple[Any, ...] | None, off: int, ts: int
) -> tuple[Any, ...]:
    snapshot = (members.generation, members.state, tuple(members.members))
    if snapshot != last:
        hist.changes.append(GroupChange(off, ts, *snapshot))
    return snapshot


def _commit_event(
    k: OffsetCommitKey, off: int, ts: int, value: bytes | None, batch: RecordBatch, members: _Membership
) -> CommitEvent:
    v = decode_offset_commit_value(value) if value is not None else None
    return CommitEvent(
        record_offset=off,
        timestamp=ts,
        topic=k.topic,
        partition=k.partition,
        offset=v.offset if v else None,
        leader_epoch=(v.leader_epoch if v and v.leader_epoch is not None and v.leader_epoch >= 0 else None),
        metadata=v.metadata if v else None,
        commit_timestamp=v.commit_timestamp if v else None,
        transactional=batch.is_transactional,
        producer_id=batch.producer_id if batch.is_transactional else None,
        producer_epoch=batch.producer_epoch if batch.is_transactional else None,
        outcome="open" if batch.is_transactional else "committed",
        generation=members.generation,
        group_state=members.state,
        members=len(members.members),
        owner=members.owners.get((k.topic, k.partition)),
    )
