"""Rebuild the coordinator cache from the offsets topic (``GroupMetadataManager.doLoadGroupsAndOffsets``).

The load is a fold over record batches in log order. Per key, the record with the greatest offset wins
(the Java coordinator's rule, ``OffsetMetadataManager.replay``/``replayEndTransactionMarker``);
transactional offset commits wait per producer id until a COMMIT or ABORT control batch resolves them.
Values are decoded only for the records that survive, since most records in an offsets topic are
overwritten by a later commit of the same key.

A :class:`PartitionFold` can also be built per segment and the folds merged in log order, which gives
the same cache as one sequential fold (the Spark job splits large partitions this way).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import mmap
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from crc32c import crc32c
from offsetops.coordinator_core.cache import (
    CoordinatorCache,
    GroupMetadata,
    LoadStats,
    MemberMetadata,
    OffsetAndMetadata,
)
from offsetops.coordinator_core.errors import DecodeError, OffsetsDecodeException
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS, partition_for
from offsetops.coordinator_core.records.batch import (
    _ZIGZAG1,
    LOG_OVERHEAD,
    V2_HEADER,
    V2_HEADER_SIZE,
    RecordBatch,
    _varint,
)
from offsetops.coordinator_core.records.compression import (
    DEFAULT_MAX_BATCH_BYTES,
    CompressionError,
    decompress,
)
from offsetops.coordinator_core.records.reader import Scan, page_release, read_entry
from offsetops.coordinator_core.schema import (
    GroupKey,
    GroupMetadataKey,
    OffsetCommitKey,
    SchemaError,
    UnknownKey,
    decode_assignment,
    decode_control_key,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_subscription,
    decode_value,
)
from offsetops.coordinator_core.value_check import offset_commit_value_ok, value_error, value_label

# An entry is (record_offset, batch_base_offset, batch_position, value-or-None-for-tombstone).
Entry = tuple[int, int, int, bytes | None]

SEMANTICS = ("java", "scala")
_OFFSET_PREFIX = b"\x00\x01"
_GROUP_PREFIX = b"\x00\x02"
# The highest record type each coordinator's loader knows; it skips the others as unknown.
# Scala (3.x ``GroupMetadataManager.readMessageKey``): 0-1 offset commits, 2 group metadata.
# Java (4.x ``CoordinatorLoaderImpl``/``GroupCoordinatorRecordSerde``): up to the streams group types.
_MAX_KNOWN_TYPE = {"java": 24, "scala": 2}
_CONTROL_ABORT, _CONTROL_COMMIT = 0, 1
# Batches the fast path takes: magic 2, neither transactional nor control (any codec, timestamp type
# and delete horizon).
_SLOW_ATTRS = 0x10 | 0x20
_CODEC_MASK = 0x07
_V2_MIN_SIZE = V2_HEADER_SIZE - LOG_OVERHEAD
_MAGIC_AT = 16
_RELEASE_EVERY = 64 << 20  # drop already-folded pages of a mapped segment from RSS this often


@dataclass(slots=True)
class PartitionFold:
    """The mergeable state of a partial reload: winners per key, open transactions, markers, stats.

    ``semantics="java"`` (Kafka 3.6+ group coordinator, the only one in 4.x): a transactional commit
    replaces a committed offset only if its *record* offset is greater, and an offset tombstone also
    drops that partition from every open transaction. ``semantics="scala"`` (the coordinator up to
    3.x): commits compare *batch base* offsets, and a plain tombstone leaves open transactions alone.
    Folds can only be merged with Java semantics.

    Java semantics also remember, per group, the last offset-commit value that no longer survives
    (overwritten by a tombstone, aborted, or losing to a later commit): replaying it created the group
    (``OffsetMetadataManager.replay``), which stays, Empty and without offsets, until a GroupMetadata
    tombstone removes it.
    """

    partition: int | None = None
    semantics: str = "java"
    latest: dict[bytes, Entry] = field(default_factory=dict)
    open_txns: dict[int, dict[bytes, Entry]] = field(default_factory=dict)
    first_marker: dict[int, tuple[int, bool]] = field(default_factory=dict)
    tomb_max: dict[bytes, int] = field(default_factory=dict)
    type_counts: dict[int, int] = field(default_factory=dict)  # record type (-1: key too short) -> n
    # Hot-path tally of types 0..255 (keys starting with a zero byte); folded into type_counts.
    _small_types: list[int] = field(default_factory=lambda: [0] * 256, repr=False)
    files: list[tuple[int, str]] = field(default_factory=list)  # (first offset, file) in log order
    # Java semantics: group part of an offset key (int16 length + name) -> offset of the last commit
    # value replayed for it that did not survive.
    created: dict[bytes, int] = field(default_factory=dict)
    stats: LoadStats = field(default_factory=LoadStats)
    # Record offsets whose value failed the validation pass (already reported; see value_check).
    invalid_values: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.semantics not in SEMANTICS:
            raise ValueError(f"semantics must be one of {SEMANTICS}, got {self.semantics!r}")

    # -- folding ---------------------------------------------------------------------------------

    def add_batches(self, batches: Iterable[RecordBatch]) -> PartitionFold:
        for batch in batches:
            self.add_batch(batch)
        return self

    def add_batch(self, batch: RecordBatch) -> None:
        stats = self.stats
        stats.batches += 1
        stats.bytes += batch.size
        file = getattr(batch, "file", None)
        if file is not None and (not self.files or self.files[-1][1] != file):
            self.files.append((batch.base_offset, file))
            stats.segments += 1
        if stats.first_offset is None:
            stats.first_offset = batch.base_offset
        stats.last_offset = batch.last_offset
        try:
            if batch.is_control:
                self._add_control(batch)
            elif batch.is_transactional:
                stats.transactional_batches += 1
                self._add_transactional(batch)
            else:
                self._add_plain(batch)
        except OffsetsDecodeException as exc:
            stats.errors.append(exc.error)

    def _missing_key(self, batch, offset: int) -> None:
        self.stats.errors.append(
            DecodeError(
                "missing_key",
                "record has no key; every __consumer_offsets record must have one",
                getattr(batch, "file", None),
                self.partition,
                batch.position,
                offset,
            )
        )

    def _add_plain(self, batch: RecordBatch) -> None:
        self._fold_plain(batch.iter_records(), batch.base_offset, batch.position, batch)

    def _fold_plain(self, records, base: int, pos: int, batch) -> None:
        latest = self.latest
        counts = self.type_counts
        n = tombs = 0
        java = self.semantics == "java"
        for off, _ts, key, value in records:
            n += 1
            if key is None:
                self._missing_key(batch, off)
                continue
            rtype = _record_type(key)
            counts[rtype] = counts.get(rtype, 0) + 1
            if rtype == 0:
                # Type 0 and type 1 keys name the same GroupTopicPartition in the cache.
                key = _OFFSET_PREFIX + key[2:]
            if value is None:
                tombs += 1
                if java:
                    self._tombstone(key, off, rtype)
            elif rtype != 1 or not offset_commit_value_ok(value):
                self._check_value(rtype, value, off, getattr(batch, "file", None), pos)
            latest[key] = (off, base, pos, value)
        self.stats.records += n
        self.stats.tombstones += tombs

    def _offset_order(self, file: str | None, position: int, base_offset: int, prev_last: int) -> None:
        """Offsets in a segment only increase (``LogSegment``'s offset index rejects anything else); the
        base offset is outside the batch CRC, so a corrupt one is only seen here."""
        self.stats.errors.append(
            DecodeError(
                "offset_order",
                f"batch base offset {base_offset} is not after the previous batch's last offset {prev_last}",
                file,
                self.partition,
                position,
                base_offset,
            )
        )

    def _check_value(self, rtype: int, value: bytes, off: int, file: str | None, pos: int) -> None:
        """The validation pass (``value_check``): report a value the broker could not have decoded."""
        if rtype < 0 or (rtype > 2 and self.semantics == "scala"):
            # A key too short for a type is reported with the key; the Scala coordinator (up to 3.x)
            # knows record types 0-2 only and skips the others unread.
            return
        problem = value_error(rtype, value)
        if problem is not None:
            self.invalid_values.add(off)
            kind, reason = problem
            self.stats.errors.append(
                DecodeError(kind, f"{value_label(rtype)}: {reason}", file, self.partition, pos, off)
            )

    def _flush_types(self) -> None:
        small = self._small_types
        for rtype, n in enumerate(small):
            if n:
                self.type_counts[rtype] = self.type_counts.get(rtype, 0) + n
                small[rtype] = 0

    def _tombstone(self, key: bytes, off: int, rtype: int) -> None:
        """Java semantics: remember the tombstone (for merges) and drop the key from open transactions."""
        self.tomb_max[key] = off
        if 0 <= rtype <= 1:
            self._created(key, self.latest.get(key))
            for pending in self.open_txns.values():
                self._created(key, pending.pop(key, None))

    def _created(self, key: bytes, entry: Entry | None) -> None:
        """Java semantics: an offset-commit value that will not survive still created its group."""
        if entry is None or entry[3] is None:
            return
        group = _group_part(key)
        if self.created.get(group, -1) < entry[0]:
            self.created[group] = entry[0]

    def _fold_v2(
        self, data, p: int, end: int, count: int, base_offset: int, batch_pos: int, file: str | None
    ) -> bool:
        """Parse and fold the records of one plain magic-2 batch (``DefaultRecord``) in a single pass.

        The hot loop of a reload: nothing per record but the key, the value and the entry tuple.
        Returns False, having folded nothing, when a record does not fit its declared length, so the
        caller can hand the batch to the general reader, which reports it.
        """
        zz = _ZIGZAG1
        varint = _varint
        # A batch is folded only once all its records parsed; one record (the common case) needs no list.
        staged: list | tuple = [] if count != 1 else ()
        stage = staged.append if count != 1 else None
        off = key = value = None
        try:
            for _ in range(count):
                b = data[p]
                if b < 0x80:
                    rec_end = p + 1 + zz[b]
                    p += 1
                else:
                    length, p = varint(data, p)
                    rec_end = p + length
                # Skip the record attributes; then the timestamp delta, unused by the coordinator.
                b = data[p + 1]
                if b < 0x80:
                    p += 2
                else:
                    p = varint(data, p + 1)[1]
                b = data[p]
                if b < 0x80:
                    off = base_offset + zz[b]
                    p += 1
                else:
                    delta, p = varint(data, p)
                    off = base_offset + delta
                b = data[p]
                if b < 0x80:
                    klen = zz[b]
                    p += 1
                else:
                    klen, p = varint(data, p)
                if klen < 0:
                    key = None
                else:
                    key = data[p : p + klen]
                    p += klen
                b = data[p]
                if b < 0x80:
                    vlen = zz[b]
                    p += 1
                else:
                    vlen, p = varint(data, p)
                if vlen < 0:
                    value = None
                else:
                    value = data[p : p + vlen]
                    p += vlen
                if p > rec_end or rec_end > end:
                    return False
                p = rec_end
                if stage is not None:
                    stage((off, key, value))
        except (IndexError, ValueError):
            return False
        if p != end:
            return False
        if count == 1:
            staged = ((off, key, value),)
        latest = self.latest
        small = self._small_types
        tombs = 0
        for off, key, value in staged:
            if key is None:
                self._missing_key(_Where(file, batch_pos), off)
                continue
            if len(key) > 1 and not key[0]:
                rtype = key[1]
                small[rtype] += 1
                if rtype == 0:
                    key = _OFFSET_PREFIX + key[2:]
            else:
                rtype = _record_type(key)
                self.type_counts[rtype] = self.type_counts.get(rtype, 0) + 1
            if value is None:
                tombs += 1
                if self.semantics == "java":
                    self._tombstone(key, off, rtype)
            elif (
                # Inlined for an OffsetCommitValue v3 (nearly every record since Kafka 2.1): version, a
                # non-negative metadata length that fits. Anything else takes the full check.
                rtype != 1
                or len(value) < 24
                or value[1] != 3
                or value[0]
                or value[14] > 0x7F
                or len(value) < 24 + ((value[14] << 8) | value[15])
            ) and (rtype != 1 or not offset_commit_value_ok(value)):
                self._check_value(rtype, value, off, file, batch_pos)
            latest[key] = (off, base_offset, batch_pos, value)
        if tombs:
            self.stats.tombstones += tombs
        return True

    # -- the fast path: whole buffers and segment files ----------------------------------------------

    def add_buffer(
        self,
        data,
        *,
        file: str | None = None,
        start_position: int = 0,
        verify_crc: bool = True,
        release=None,
        scan: Scan | None = None,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    ) -> None:
        """Fold a buffer of concatenated batches (a whole segment, or a Fetch response).

        Plain magic-2 batches, nearly all of an offsets topic, are walked here without building batch
        objects; every other entry, and anything malformed, goes through the reader's
        :func:`~offsetops.coordinator_core.records.reader.read_entry`, so errors, resyncs and zero tails are
        reported exactly as the general reader reports them.
        """
        stats = self.stats
        if isinstance(data, memoryview):
            data = data.tobytes()  # keys must come out as bytes (dict keys), not views
        if scan is None:
            scan = Scan(release=release)
        mv = memoryview(data)
        end = len(data)
        pos = 0
        unpack = V2_HEADER.unpack_from
        partition = self.partition
        next_release = _RELEASE_EVERY
        if file is not None and (not self.files or self.files[-1][1] != file):
            stats.segments += 1
        fold_v2 = self._fold_v2
        n_batches = n_bytes = n_records = 0
        last = None
        prev_last = -1  # the last offset of the previous batch of this buffer: offsets only increase
        legacy = False
        report = stats.errors.append
        while pos < end:
            if pos >= next_release:
                scan.done_with(pos)
                next_release = pos + _RELEASE_EVERY
            if end - pos >= V2_HEADER_SIZE and data[pos + _MAGIC_AT] == 2:
                (base_offset, size, _ple, _m, crc, attrs, lod, _bts, _mts, _pid, _ep, _seq, count) = unpack(
                    data, pos
                )
                total = LOG_OVERHEAD + size
                if (
                    not attrs & _SLOW_ATTRS
                    and _V2_MIN_SIZE <= size <= max_batch_bytes
                    and pos + total <= end
                    and count >= 0
                    and lod >= 0
                    and (not verify_crc or crc32c(mv[pos + 21 : pos + total]) == crc)
                ):
                    if last is None:
                        if file is not None and (not self.files or self.files[-1][1] != file):
                            self.files.append((base_offset, file))
                        if stats.first_offset is None:
                            stats.first_offset = base_offset
                    codec = attrs & _CODEC_MASK
                    if codec:
                        try:
                            body = decompress(
                                codec, mv[pos + V2_HEADER_SIZE : pos + total], limit=max_batch_bytes
                            )
                        except CompressionError:
                            body = None  # the general reader reports it below
                        folded = body is not None and fold_v2(
                            body, 0, len(body), count, base_offset, start_position + pos, file
                        )
                    else:
                        folded = fold_v2(
                            data,
                            pos + V2_HEADER_SIZE,
                            pos + total,
                            count,
                            base_offset,
                            start_position + pos,
                            file,
                        )
                    if folded:
                        if base_offset <= prev_last:
                            self._offset_order(file, start_position + pos, base_offset, prev_last)
                        prev_last = base_offset + lod
                        n_records += count
                        n_batches += 1
                        n_bytes += total
                        last = base_offset + lod
                        pos += total
                        continue
            # Anything the fast path does not take (compressed, transactional, control, legacy magic,
            # bad CRC, corrupt records) or cannot frame (truncated tail, bad length, unknown magic,
            # zero-filled region): one entry through the reader, which reports it and says where to go on.
            if last is not None:
                stats.batches += n_batches
                stats.bytes += n_bytes
                stats.records += n_records
                stats.last_offset = last
                n_batches = n_bytes = n_records = 0
                last = None
            batch, nxt = read_entry(
                data,
                pos,
                end,
                base=start_position,
                file=file,
                partition=partition,
                report=report,
                verify_crc=verify_crc,
                max_batch_bytes=max_batch_bytes,
                scan=scan,
                legacy=legacy,
            )
            if batch is not None:
                if batch.base_offset <= prev_last:
                    self._offset_order(file, batch.position, batch.base_offset, prev_last)
                prev_last = max(prev_last, batch.last_offset)
                legacy = legacy or batch.magic < 2
                saved = stats.segments
                self.add_batch(batch)
                stats.segments = saved
            pos = nxt
        if last is not None:
            stats.batches += n_batches
            stats.bytes += n_bytes
            stats.records += n_records
            stats.last_offset = last

    def add_segment(
        self, path, *, verify_crc: bool = True, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    ) -> None:
        """Fold one ``.log`` file, memory-mapped; folded pages are released as the walk goes on."""
        file = str(path)
        try:
            fh = open(path, "rb")  # noqa: SIM115 - closed by the with below
        except OSError as exc:
            self.stats.errors.append(DecodeError("io", f"cannot open: {exc}", file, self.partition))
            return
        with fh:
            try:
                size = os.fstat(fh.fileno()).st_size
                if size == 0:
                    self.stats.segments += 1
                    return
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                self.stats.errors.append(DecodeError("io", f"cannot read: {exc}", file, self.partition, 0))
                return
            try:
                scan = Scan(fh.fileno(), page_release(mm))
                self.add_buffer(
                    mm, file=file, verify_crc=verify_crc, scan=scan, max_batch_bytes=max_batch_bytes
                )
            finally:
                _close_map(mm)

    def _add_transactional(self, batch: RecordBatch) -> None:
        pid = batch.producer_id
        pending = self.open_txns.setdefault(pid, {})
        counts = self.type_counts
        base = batch.base_offset
        pos = batch.position
        for off, _ts, key, value in batch.iter_records():
            self.stats.records += 1
            if key is None:
                self._missing_key(batch, off)
                continue
            rtype = _record_type(key)
            counts[rtype] = counts.get(rtype, 0) + 1
            if rtype == 0:
                key = _OFFSET_PREFIX + key[2:]
            if value is None:
                self.stats.tombstones += 1
            elif rtype != 1 or not offset_commit_value_ok(value):
                self._check_value(rtype, value, off, batch.file, pos)
            if rtype <= 1:
                if value is None and self.semantics == "scala":
                    pending.pop(key, None)
                else:
                    pending[key] = (off, base, pos, value)
            else:
                # Only offset commits are transactional; anything else is replayed directly.
                self.latest[key] = (off, base, pos, value)

    def _add_control(self, batch: RecordBatch) -> None:
        pid = batch.producer_id
        for off, _ts, key, _value in batch.iter_records():
            self.stats.records += 1
            self.stats.control_records += 1
            if key is None:
                self._missing_key(batch, off)
                continue
            try:
                ctype = decode_control_key(key).type
            except SchemaError as exc:
                self.stats.errors.append(
                    DecodeError(
                        "corrupt_record",
                        f"control record key: {exc}",
                        getattr(batch, "file", None),
                        self.partition,
                        batch.position,
                        off,
                    )
                )
                continue
            if ctype not in (_CONTROL_ABORT, _CONTROL_COMMIT):
                continue  # LEADER_CHANGE, KRaft snapshot markers: not transaction markers
            commit = ctype == _CONTROL_COMMIT
            self.first_marker.setdefault(pid, (off, commit))
            pending = self.open_txns.pop(pid, None)
            if commit and pending:
                self._commit(pending)
            elif pending and self.semantics == "java":
                for key, entry in pending.items():
                    self._created(key, entry)
            if self.semantics == "scala":
                break  # the Scala loader reads only the first record of a control batch

    def _commit(self, pending: dict[bytes, Entry]) -> None:
        latest = self.latest
        idx = 0 if self.semantics == "java" else 1
        for key, entry in pending.items():
            if entry[3] is None:
                continue
            cur = latest.get(key)
            if cur is None or (cur[3] is None and self.semantics == "scala") or cur[idx] < entry[idx]:
                latest[key] = entry
            elif self.semantics == "java":
                self._created(key, entry)

    # -- merging (segment-parallel reload) ---------------------------------------------------------

    def merge(self, later: PartitionFold) -> PartitionFold:
        """Fold ``later`` (the next stretch of the same log) into this one, in place, and return self."""
        if self.semantics != "java" or later.semantics != "java":
            raise ValueError("only folds with Java semantics can be merged")
        later_tombs = later.tomb_max
        deferred: list[dict[bytes, Entry]] = []
        # Open transactions of ours that ``later`` resolves with its first marker for that producer.
        for pid, pending in list(self.open_txns.items()):
            if later_tombs:
                for k, e in pending.items():
                    if later_tombs.get(k, -1) >= e[0]:
                        self._created(k, e)
                pending = {k: e for k, e in pending.items() if later_tombs.get(k, -1) < e[0]}
            marker = later.first_marker.get(pid)
            if marker is None:
                merged = dict(pending)
                merged.update(later.open_txns.get(pid, {}))
                self.open_txns[pid] = merged
                continue
            del self.open_txns[pid]
            if marker[1]:
                # applied after later's own winners below, by the record-offset rule
                deferred.append(pending)
            else:
                for k, e in pending.items():
                    self._created(k, e)
        for pid, pending in later.open_txns.items():
            if pid not in self.open_txns:
                self.open_txns[pid] = dict(pending)
        for k in later_tombs:
            if k[:2] == _OFFSET_PREFIX:
                self._created(k, self.latest.get(k))
        for group, off in later.created.items():
            if self.created.get(group, -1) < off:
                self.created[group] = off
        self.latest.update(later.latest)
        for committed in deferred:
            self._commit(committed)
        for k, off in later_tombs.items():
            if self.tomb_max.get(k, -1) < off:
                self.tomb_max[k] = off
        for pid, marker in later.first_marker.items():
            self.first_marker.setdefault(pid, marker)
        self._flush_types()
        later._flush_types()
        for rtype, n in later.type_counts.items():
            self.type_counts[rtype] = self.type_counts.get(rtype, 0) + n
        for first, file in later.files:
            if not self.files or self.files[-1][1] != file:
                self.files.append((first, file))
        s, o = self.stats, later.stats
        s.segments += o.segments
        s.batches += o.batches
        s.records += o.records
        s.bytes += o.bytes
        s.tombstones += o.tombstones
        s.control_records += o.control_records
        s.transactional_batches += o.transactional_batches
        s.elapsed_ms += o.elapsed_ms
        if s.first_offset is None:
            s.first_offset = o.first_offset
        if o.last_offset is not None:
            s.last_offset = o.last_offset
        s.errors.extend(o.errors)
        self.invalid_values |= later.invalid_values
        return self

    # -- materializing ---------------------------------------------------------------------------

    def file_for(self, offset: int) -> str | None:
        if not self.files:
            return None
        i = bisect.bisect_right(self.files, offset, key=lambda fe: fe[0]) - 1
        return self.files[max(i, 0)][1]

    def finish(self, *, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> CoordinatorCache:
        """Decode the surviving records and build the cache, as the loader does after its scan."""
        self._flush_types()
        return _Materializer(self, num_partitions).build()


class _Materializer:
    def __init__(self, fold: PartitionFold, num_partitions: int):
        self.fold = fold
        self.num_partitions = num_partitions
        self.stats = fold.stats
        self.groups: dict[str, GroupMetadata] = {}
        self.offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        self.kip848: dict[str, dict[int, list[tuple[GroupKey, object]]]] = {}
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
            v = decode_offset_commit_value(entry[3], known_tags=self.java)
        except SchemaError as exc:
            self._error(exc.kind, f"offset commit value: {exc}", entry)
            return None
        return OffsetAndMetadata(
            offset=v.offset,
            leader_epoch=None if v.leader_epoch is None or v.leader_epoch < 0 else v.leader_epoch,
            metadata=v.metadata if v.metadata is not None else "",
            commit_timestamp=v.commit_timestamp,
            expire_timestamp=None
            if v.expire_timestamp is None or v.expire_timestamp < 0
            else v.expire_timestamp,
            record_offset=entry[0],
            topic_id=getattr(v, "topic_id", None),
        )

    def build(self) -> CoordinatorCache:
        fold = self.fold
        stats = self.stats
        unknown = 0
        max_known = _MAX_KNOWN_TYPE[fold.semantics]
        for rtype, n in fold.type_counts.items():
            stats.records_by_type[rtype] = stats.records_by_type.get(rtype, 0) + n
            if rtype < 0 or rtype > max_known:
                unknown += n
        stats.unknown_record_types = unknown

        for raw, entry in fold.latest.items():
            try:
                key = decode_key(raw)
            except SchemaError as exc:
                # Tombstone keys too: the broker decodes every key, and a corrupt one fails the load.
                self._error(exc.kind, f"record key: {exc}", entry)
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

        # Kafka 4.1 (KIP-1101) no longer writes ConsumerGroupPartitionMetadata, where topic ids got
        # their names; its v4 offset commits carry the TopicId next to the topic name instead.
        topic_ids = {
            str(om.topic_id): topic
            for offsets in self.offsets.values()
            for (topic, _p), om in offsets.items()
            if om.topic_id is not None and getattr(om.topic_id, "int", 1)
        }
        self._build_kip848(topic_ids)

        pending_by_group: dict[str, dict[int, dict[tuple[str, int], OffsetAndMetadata]]] = {}
        open_transactions: dict[int, set[str]] = {}
        for pid, pending in fold.open_txns.items():
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
            stats=stats,
            misplaced_groups=sorted(misplaced),
            num_partitions=self.num_partitions,
            open_transactions=open_transactions,
        )

    def _groups_created_by_commits(self) -> None:
        """Groups an offset commit created on replay that neither kept an offset nor was removed since.

        ``OffsetMetadataManager.replay`` creates the (simple, Empty) classic group for any offset-commit
        value, transactional or not, and only a GroupMetadata tombstone removes it: after an aborted
        transaction, or once every offset was deleted, the group is still there with no offsets (the
        next cleanup deletes it with a GroupMetadata tombstone).
        """
        latest = self.fold.latest
        for group_part, offset in self.fold.created.items():
            removed = latest.get(_GROUP_PREFIX + group_part)
            if removed is not None and removed[3] is None and removed[0] > offset:
                continue
            try:
                gid = decode_key(_GROUP_PREFIX + group_part).group_id
            except SchemaError:
                continue  # the key itself was reported when its value was decoded
            if gid not in self.groups:
                self.groups[gid] = GroupMetadata(
                    group_id=gid, state="Empty", protocol_type=None, generation=0
                )

    def _group(self, group_id: str, entry: Entry) -> None:
        try:
            v = decode_group_metadata_value(entry[3])
        except SchemaError as exc:
            self._error(exc.kind, f"group metadata value: {exc}", entry)
            return
        protocol_type = v.protocol_type or None
        members = []
        for m in v.members:
            topics: list[str] | None = None
            assignment: dict[str, list[int]] | None = None
            if protocol_type == "consumer":
                sub = decode_subscription(m.subscription)
                topics = sorted(sub.topics) if sub is not None else None
                asg = decode_assignment(m.assignment)
                assignment = {t: sorted(p) for t, p in asg.partitions.items()} if asg is not None else None
                # Lenient, as the broker is (it never parses these bytes), but never silent.
                for what, raw, got in (
                    ("subscription", m.subscription, sub),
                    ("assignment", m.assignment, asg),
                ):
                    if raw and (got is None or got.partial):
                        how = (
                            "cannot be decoded"
                            if got is None
                            else "are truncated or corrupt after the topics"
                        )
                        self._error(
                            "corrupt_embedded",
                            f"group {group_id!r} member {m.member_id!r}: consumer-protocol {what} bytes "
                            f"({len(raw)} bytes) {how}; kept as unknown",
                            entry,
                        )
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

    def _build_kip848(self, topic_ids: dict[str, str]) -> None:
        """KIP-848 consumer groups (types 3-8, 16), share groups (9-15) and streams groups (17-24)."""
        for gid, by_type in self.kip848.items():
            if any(t in by_type for t in range(3, 9)) or 16 in by_type:
                self.groups[gid] = _consumer_group(gid, by_type, topic_ids)
            elif any(t in by_type for t in range(9, 16)):
                self.groups[gid] = _member_group(gid, by_type, "share", 11, 10)
            elif any(t in by_type for t in range(17, 25)):
                self.groups[gid] = _member_group(gid, by_type, "streams", 17, 19)


def _close_map(mm: mmap.mmap) -> None:
    try:
        mm.close()
    except BufferError:
        # A view of the map is still referenced (say, from an exception's traceback): collect it.
        gc.collect()
        with contextlib.suppress(BufferError):
            mm.close()  # else the map closes when the last view goes


def _group_part(key: bytes) -> bytes:
    """The group of an offset-commit key as it is serialized (int16 length + UTF-8 name)."""
    return key[2 : 4 + max(int.from_bytes(key[2:4], "big", signed=True), 0)]


def _record_type(key: bytes) -> int:
    """The key's int16 record type (-1 for a key too short to have one)."""
    return int.from_bytes(key[:2], "big", signed=True) if len(key) >= 2 else -1


@dataclass(frozen=True, slots=True)
class _Where:
    """Where a fast-path batch sits, for error messages (the fields a RecordBatch would give)."""

    file: str | None
    position: int


def _field(fields: dict, name: str, default=None):
    """Read a field whatever its spelling (Kafka's JSON uses PascalCase, the tools camelCase)."""
    if name in fields:
        return fields[name]
    alt = name[0].lower() + name[1:]
    return fields.get(alt, default)


def _fields(value: object) -> dict:
    f = getattr(value, "fields", None)
    return f if isinstance(f, dict) else {}


def _consumer_group(
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


def _member_group(
    gid: str, by_type: dict[int, list[tuple[GroupKey, object]]], kind: str, meta_type: int, member_type: int
) -> GroupMetadata:
    epoch = 0
    for _k, v in by_type.get(meta_type, []):
        epoch = _field(_fields(v), "Epoch", 0) or 0
    members = [
        MemberMetadata(
            member_id=_field(k.fields, "memberId", ""),
            group_instance_id=None,
            client_id=_field(_fields(v), "ClientId", "") or "",
            client_host=_field(_fields(v), "ClientHost", "") or "",
            session_timeout_ms=None,
            rebalance_timeout_ms=None,
            subscribed_topics=_field(_fields(v), "SubscribedTopicNames"),
            assignment=None,
        )
        for k, v in by_type.get(member_type, [])
    ]
    return GroupMetadata(
        group_id=gid,
        state="Stable" if members else "Empty",
        protocol_type=kind,
        generation=epoch,
        members=members,
        group_type=kind,
    )


def load_partition(
    batches: Iterable[RecordBatch],
    *,
    partition: int | None,
    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
    semantics: str = "java",
) -> CoordinatorCache:
    """Load one ``__consumer_offsets`` partition from its batches in log order."""
    start = time.perf_counter()
    fold = PartitionFold(partition=partition, semantics=semantics)
    fold.add_batches(batches)
    cache = fold.finish(num_partitions=num_partitions)
    cache.stats.elapsed_ms = (time.perf_counter() - start) * 1000
    return cache


def load_partition_from(
    source,
    partition: int,
    *,
    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
    semantics: str = "java",
) -> CoordinatorCache:
    """Load one partition from a batch source (``iter_batches(partition, errors)``, e.g. a live cluster).

    The source's read errors and the loader's decode errors land in the stats in the order they happen.
    """
    start = time.perf_counter()
    fold = PartitionFold(partition=partition, semantics=semantics)
    fold.add_batches(source.iter_batches(partition, fold.stats.errors))
    cache = fold.finish(num_partitions=num_partitions)
    cache.stats.elapsed_ms = (time.perf_counter() - start) * 1000
    return cache


def load_partition_dir(
    pdir,
    *,
    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
    semantics: str = "java",
    verify_crc: bool = True,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> CoordinatorCache:
    """Load a ``PartitionDir`` from disk, streaming its segments; read errors land in the stats.

    The listing's anomalies come first; each segment is checked against its name and the segment
    before it once read (``segment_order_errors``).
    """
    from offsetops.coordinator_core.sources.logdir import segment_order_errors

    start = time.perf_counter()
    fold = PartitionFold(partition=pdir.partition, semantics=semantics)
    fold.stats.errors.extend(pdir.anomalies)
    for seg in pdir.segments:
        previous_last, known = fold.stats.last_offset, len(fold.files)
        fold.add_segment(seg.path, verify_crc=verify_crc, max_batch_bytes=max_batch_bytes)
        first = fold.files[-1][0] if len(fold.files) > known else None
        fold.stats.errors.extend(
            segment_order_errors(str(seg.path), pdir.partition, seg.base_offset, first, previous_last)
        )
    fold.stats.segments = len(pdir.segments)
    cache = fold.finish(num_partitions=num_partitions)
    cache.stats.elapsed_ms = (time.perf_counter() - start) * 1000
    return cache


def load_log_dir(
    path,
    *,
    partitions: list[int] | None = None,
    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
    semantics: str = "java",
) -> list[CoordinatorCache]:
    """Load every (or the chosen) ``__consumer_offsets`` partition of a broker log dir."""
    from offsetops.coordinator_core.sources.logdir import open_log_dir

    logdir = open_log_dir(path, partitions=partitions)
    return [
        load_partition_dir(p, num_partitions=num_partitions, semantics=semantics) for p in logdir.partitions
    ]
