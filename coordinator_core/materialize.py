"""Materialize a fold: decode the records that survived and build the :class:`CoordinatorCache`.

After its scan, ``GroupMetadataManager.doLoadGroupsAndOffsets`` turns the winners per key into groups
and offsets; only their values are decoded here (most records of an offsets topic are overwritten).
Transactional commits still open at the end become pending offsets, and (Java semantics) groups an
offset commit created on replay stay, Empty, until a GroupMetadata tombstone removes them.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from offsetops.coordinator_core.cache import (
    CoordinatorCache,
    GroupMetadata,
    MemberMetadata,
    OffsetAndMetadata,
)
from offsetops.coordinator_core.embedded import read_member
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.group_replay import SHARE_RECORDS, STREAMS_RECORDS, GroupRecord
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records import native as _twin
from offsetops.coordinator_core.schema import (
    GroupKey,
    GroupMetadataKey,
    OffsetCommitKey,
    SchemaError,
    UnknownKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_value,
)

if TYPE_CHECKING:
    from offsetops.coordinator_core.loader import PartitionFold

# An entry is (record_offset, batch_base_offset, batch_position, value-or-None-for-tombstone).
Entry = tuple[int, int, int, bytes | None]

GROUP_PREFIX = b"\x00\x02"
# The highest record type each coordinator's loader knows; it skips the others as unknown.
# Scala (3.x ``GroupMetadataManager.readMessageKey``): 0-1 offset commits, 2 group metadata.
# Java (4.x ``CoordinatorLoaderImpl``/``GroupCoordinatorRecordSerde``): up to the streams group types.
_MAX_KNOWN_TYPE = {"java": 24, "scala": 2}
_REPLAYED_TYPES = SHARE_RECORDS.all | STREAMS_RECORDS.all
# The records whose tombstone deletes a KIP-848 consumer, share or streams group.
_GROUP_EPOCH_TYPES = frozenset({3, SHARE_RECORDS.metadata, STREAMS_RECORDS.metadata})


def offset_and_metadata(
    offset: int,
    leader_epoch: int,
    metadata: str,
    commit_timestamp: int,
    expire_timestamp: int,
    record_offset: int,
    topic_id: Any,
) -> OffsetAndMetadata:
    """The cache's ``OffsetAndMetadata`` of a decoded ``OffsetCommitValue``: a negative leader epoch or
    expire timestamp is none (``OffsetCommitValue`` writes -1 for "not set")."""
    return OffsetAndMetadata(
        offset=offset,
        leader_epoch=None if leader_epoch < 0 else leader_epoch,
        metadata=metadata,
        commit_timestamp=commit_timestamp,
        expire_timestamp=None if expire_timestamp < 0 else expire_timestamp,
        record_offset=record_offset,
        topic_id=topic_id,
    )


def cycles_not_collected(
    build: Callable[[Materializer], CoordinatorCache],
) -> Callable[[Materializer], CoordinatorCache]:
    """Run ``build`` with the cyclic garbage collector paused (and resumed after, if it ran before).

    Building a cache allocates one object per survivor and member, none of them in a reference cycle;
    collecting while they are made finds nothing and re-walks every object allocated so far (a third of
    the materialization of 95,000 offsets). A cycle made meanwhile is collected once it resumes."""

    @functools.wraps(build)
    def run(self: Materializer) -> CoordinatorCache:
        if not gc.isenabled():
            return build(self)
        gc.disable()
        try:
            return build(self)
        finally:
            gc.enable()

    return run


class Materializer:
    """Decode the surviving records of a fold and build the cache, as the loader does after its scan."""

    def __init__(self, fold: PartitionFold, num_partitions: int):
        self.fold = fold
        self.num_partitions = num_partitions
        self.stats = fold.stats
        self.groups: dict[str, GroupMetadata] = {}
        self.offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        self.kip848: dict[str, dict[int, list[tuple[GroupKey, object]]]] = {}
        # Share and streams groups are replayed record by record, tombstones included.
        self.replayed: dict[str, list[GroupRecord]] = {}
        # Group id -> log offset of the tombstone that deleted its consumer, share or streams group.
        self.modern_deleted: dict[str, int] = {}
        self.java = fold.semantics == "java"

    def _error(self, kind: str, reason: str, entry: Entry) -> None:
        self.stats.errors.append(
            DecodeError(kind, reason, self.fold.file_for(entry[0]), self.fold.partition, entry[2], entry[0])
        )

    def _offset(self, entry: Entry) -> OffsetAndMetadata | None:
        if entry[0] in self.fold.invalid_values:
            return None  # reported by the validation pass
        try:
            # Kafka 3.x's OffsetCommitValue has no tagged field: every tag is unknown to it (KIP-915).
            v = decode_offset_commit_value(entry[3] or b"", known_tags=self.java)  # tombstones never get here
        except SchemaError as exc:
            self._error(exc.kind, f"offset commit value: {exc}", entry)
            return None
        return offset_and_metadata(
            v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp, entry[0], v.topic_id
        )

    def _native_offset(self, raw: bytes, entry: Entry) -> bool:
        """The survivors' hot case, read by the native twin whole: an offset-commit key with a value v0-v3,
        or v4 without tagged fields. False hands the record to the general path (which reports errors)."""
        key = _twin.cfold.offset_commit_key(raw) if _twin.cfold is not None else None
        if key is None:
            return False
        if entry[3] is None or entry[0] in self.fold.invalid_values:
            return True  # a tombstone, or a value the validation pass reported
        om = self._native_value(entry)
        if om is None:
            return False
        group, topic, partition = key
        self.offsets.setdefault(group, {})[(topic, partition)] = om
        return True

    def _native_value(self, entry: Entry) -> OffsetAndMetadata | None:
        """The value of an offset commit read natively (v0-v3, v4 without tagged fields); None hands it
        to the general path."""
        value = entry[3]
        fields = (
            _twin.cfold.offset_commit_value(value) if _twin.cfold is not None and value is not None else None
        )
        if fields is None:
            return None
        _version, offset, epoch, metadata, ts, expire, _end = fields
        return offset_and_metadata(offset, epoch, metadata, ts, expire, entry[0], None)

    @cycles_not_collected
    def build(self) -> CoordinatorCache:
        fold = self.fold
        self._count_types()
        self._decode_winners()
        # Kafka 4.1 (KIP-1101) no longer writes ConsumerGroupPartitionMetadata, where topic ids got
        # their names; its v4 offset commits carry the TopicId next to the topic name instead.
        topic_ids = {
            str(om.topic_id): topic
            for offsets in self.offsets.values()
            for (topic, _p), om in offsets.items()
            if om.topic_id is not None and getattr(om.topic_id, "int", 1)
        }
        self._build_kip848(topic_ids)
        pending_by_group, open_transactions = self._pending_offsets()

        # Groups with offsets (committed or pending) but no metadata record: Empty, no protocol type.
        for gid in list(self.offsets) + list(pending_by_group):
            if gid not in self.groups:
                self.groups[gid] = GroupMetadata(
                    group_id=gid, state="Empty", protocol_type=None, generation=0
                )
        if self.java:
            self._groups_created_by_commits()
        for gid, offs in self.offsets.items():
            self.groups[gid].offsets = offs
        for gid, pend in pending_by_group.items():
            self.groups[gid].pending_offsets = pend

        misplaced = []
        if fold.partition is not None:
            misplaced = [g for g in self.groups if partition_for(g, self.num_partitions) != fold.partition]
        return CoordinatorCache(
            partition=fold.partition,
            groups=self.groups,
            stats=self.stats,
            misplaced_groups=sorted(misplaced),
            num_partitions=self.num_partitions,
            open_transactions=open_transactions,
        )

    def _count_types(self) -> None:
        """Records by type, and how many are of a type this coordinator does not know."""
        stats = self.stats
        unknown = 0
        max_known = _MAX_KNOWN_TYPE[self.fold.semantics]
        for rtype, n in self.fold.type_counts.items():
            stats.records_by_type[rtype] = stats.records_by_type.get(rtype, 0) + n
            if rtype < 0 or rtype > max_known:
                unknown += n
        stats.unknown_record_types = unknown

    def _decode_winners(self) -> None:
        """Decode each key's surviving record: committed offsets, classic groups, KIP-848 records."""
        fold = self.fold
        native = _twin.NATIVE
        for raw, entry in fold.latest.items():
            if native and self._native_offset(raw, entry):
                continue
            try:
                key = decode_key(raw)
            except SchemaError as exc:
                # Tombstone keys too: the broker decodes every key, and a corrupt one fails the load.
                self._error(exc.kind, f"record key: {exc}", entry)
                continue
            if isinstance(key, GroupKey) and key.record_type in _GROUP_EPOCH_TYPES and entry[3] is None:
                self.modern_deleted[key.group_id] = max(entry[0], self.modern_deleted.get(key.group_id, -1))
            if self.java and isinstance(key, GroupKey) and key.record_type in _REPLAYED_TYPES:
                self._replayed(key, entry)
                continue
            if entry[3] is None or entry[0] in fold.invalid_values:
                continue
            if isinstance(key, OffsetCommitKey):
                om = self._offset(entry)
                if om is not None:
                    self.offsets.setdefault(key.group, {})[(key.topic, key.partition)] = om
            elif isinstance(key, GroupMetadataKey):
                self._group(key.group, entry)
            elif isinstance(key, GroupKey):
                if not self.java:
                    continue  # an unknown key to the 3.x loader: counted above, never decoded
                try:
                    value = decode_value(key.record_type, entry[3])
                except SchemaError as exc:
                    self._error(exc.kind, f"record type {key.record_type} value: {exc}", entry)
                    continue
                self.kip848.setdefault(key.group_id, {}).setdefault(key.record_type, []).append((key, value))
            elif isinstance(key, UnknownKey):
                continue  # counted in stats.unknown_record_types; Kafka skips them too

    def _pending_offsets(
        self,
    ) -> tuple[dict[str, dict[int, dict[tuple[str, int], OffsetAndMetadata]]], dict[int, set[str]]]:
        """The offsets of open transactions, by group and producer, and each producer's groups."""
        pending_by_group: dict[str, dict[int, dict[tuple[str, int], OffsetAndMetadata]]] = {}
        open_transactions: dict[int, set[str]] = {}
        for pid, pending in self.fold.open_txns.items():
            for raw, entry in pending.items():
                if entry[3] is None:
                    continue
                try:
                    key = decode_key(raw)
                except SchemaError as exc:
                    self._error(exc.kind, f"record key: {exc}", entry)
                    continue
                if not isinstance(key, OffsetCommitKey):
                    continue
                om = self._offset(entry)
                if om is None:
                    continue
                pending_by_group.setdefault(key.group, {}).setdefault(pid, {})[(key.topic, key.partition)] = (
                    om
                )
                open_transactions.setdefault(pid, set()).add(key.group)
        return pending_by_group, open_transactions

    def _groups_created_by_commits(self) -> None:
        """Groups an offset commit created on replay that neither kept an offset nor was removed since.

        ``OffsetMetadataManager.replay`` creates the (simple, Empty) classic group for any offset-commit
        value, transactional or not, and only a GroupMetadata tombstone removes it: after an aborted
        transaction, or once every offset was deleted, the group is still there with no offsets (the
        next cleanup deletes it with a GroupMetadata tombstone).
        """
        latest = self.fold.latest
        for group_part, offset in self.fold.created.items():
            removed = latest.get(GROUP_PREFIX + group_part)
            if removed is not None and removed[3] is None and removed[0] > offset:
                continue
            try:
                gid = decode_key(GROUP_PREFIX + group_part).group_id
            except SchemaError:
                continue  # the key itself was reported when its value was decoded
            if offset < self.modern_deleted.get(gid or "", -1):
                continue  # committed while its consumer/share/streams group existed, which it never created
            if gid is not None and gid not in self.groups:
                self.groups[gid] = GroupMetadata(
                    group_id=gid, state="Empty", protocol_type=None, generation=0
                )

    def _group(self, group_id: str, entry: Entry) -> None:
        try:
            v = decode_group_metadata_value(entry[3] or b"")  # tombstones never get here
        except SchemaError as exc:
            self._error(exc.kind, f"group metadata value: {exc}", entry)
            return
        protocol_type = v.protocol_type or None
        members = []
        for m in v.members:
            topics: list[str] | None = None
            assignment: dict[str, list[int]] | None = None
            if protocol_type == "consumer":
                read = read_member(group_id, v.protocol, m)
                topics, assignment = read.topics, read.partitions
                for f in read.findings:
                    if not f.fatal:  # a fatal one was reported by the validation pass, for every value
                        self._error(f.kind, f.reason, entry)
            rebalance = m.rebalance_timeout
            # v0 has no rebalance timeout, and both loaders use the session timeout. A stored -1 in v1+
            # is kept by Scala (``readGroupMessageValue`` checks the version only) and replaced by the
            # session timeout in Java (``GroupMetadataManager.replay``).
            if v.version == 0 or (self.java and rebalance == -1):
                rebalance = m.session_timeout
            members.append(
                MemberMetadata(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    session_timeout_ms=m.session_timeout,
                    rebalance_timeout_ms=rebalance,
                    subscribed_topics=topics,
                    assignment=assignment,
                )
            )
        cst = v.current_state_timestamp
        self.groups[group_id] = GroupMetadata(
            group_id=group_id,
            state="Stable" if members else "Empty",
            protocol_type=protocol_type,
            generation=v.generation,
            protocol=v.protocol,
            leader=v.leader,
            current_state_timestamp=None if cst is None or cst < 0 else cst,
            members=members,
            metadata_record_offset=entry[0],
            metadata_version=v.version,
        )

    def _replayed(self, key: GroupKey, entry: Entry) -> None:
        """Keep a share or streams record (value decoded, or a tombstone) for the group's replay."""
        fields = None
        early = None
        if entry[3] is not None:
            if entry[0] in self.fold.invalid_values:
                return  # reported by the validation pass
            try:
                value = decode_value(key.record_type, entry[3])
            except SchemaError as exc:
                self._error(exc.kind, f"record type {key.record_type} value: {exc}", entry)
                return
            fields = getattr(value, "fields", None) or {}
            early = getattr(value, "early_access", None)
        member = key.fields.get("memberId")
        record = (entry[0], key.record_type, member, fields, early)
        self.replayed.setdefault(key.group_id, []).append(record)

    def _build_kip848(self, topic_ids: dict[str, str]) -> None:
        """KIP-848 consumer groups (types 3-8, 16), share groups (9-15) and streams groups (17-24)."""
        if not self.kip848 and not self.replayed:
            return  # a log of classic groups only: the modern groups' models are not even imported
        from offsetops.coordinator_core.kip848 import consumer_group, modern_group

        for gid, by_type in self.kip848.items():
            if any(t in by_type for t in range(3, 9)) or 16 in by_type:
                self.groups[gid] = consumer_group(gid, by_type, topic_ids)
        for gid, records in self.replayed.items():
            types = SHARE_RECORDS if records[0][1] in SHARE_RECORDS.all else STREAMS_RECORDS
            group = modern_group(gid, types, records, topic_ids)
            if group is not None:
                self.groups[gid] = group
