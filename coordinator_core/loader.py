"""Rebuild the coordinator cache from the offsets topic (``GroupMetadataManager.doLoadGroupsAndOffsets``).

The load is a fold over record batches in log order. Per key, the record with the greatest offset wins
(the Java coordinator's rule, ``OffsetMetadataManager.replay``/``replayEndTransactionMarker``);
transactional offset commits wait per producer id until a COMMIT or ABORT control batch resolves them.
Values are decoded only for the records that survive
(:mod:`offsetops.coordinator_core.materialize`), since most records in an offsets topic are
overwritten by a later commit of the same key.

Segments and Fetch responses are walked by
:func:`~offsetops.coordinator_core.records.fold.fold_buffer` (the one framing walker, with its native
twin); this module holds the rules it folds with.

A :class:`PartitionFold` can also be built per segment and the folds merged in log order, which gives
the same cache as one sequential fold (the Spark job splits large partitions this way).

Size: the fold's rules (hot case, transactions, markers, tombstones, merging) stay in one module on
purpose: they are one state machine over :class:`PartitionFold`, and the C twin mirrors exactly this
file. Materializing the cache and the KIP-848 records live beside it (``materialize.py``, ``kip848.py``).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import mmap
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from offsetops.coordinator_core.cache import CoordinatorCache, LoadStats
from offsetops.coordinator_core.embedded import CORRUPT as EMBEDDED_KIND
from offsetops.coordinator_core.errors import DecodeError, ErrorLog, OffsetsDecodeException
from offsetops.coordinator_core.materialize import Entry, Materializer
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.records.batch import Record, RecordBatch
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.records.fold import FoldState, fold_buffer, native_commit
from offsetops.coordinator_core.records.reader import Scan, page_release
from offsetops.coordinator_core.schema import SchemaError
from offsetops.coordinator_core.survivor_memo import ReusingMaterializer, SurvivorMemo
from offsetops.coordinator_core.untrusted import open_regular_file
from offsetops.coordinator_core.value_check import offset_commit_value_ok, value_error, value_label

__all__ = [
    "SEMANTICS",
    "Entry",
    "PartitionFold",
    "SegmentsRead",
    "fold_segments",
    "group_part",
    "load_log_dir",
    "load_partition",
    "load_partition_dir",
]

SEMANTICS = ("java", "scala")
_OFFSET_PREFIX = b"\x00\x01"
_CONTROL_ABORT, _CONTROL_COMMIT = 0, 1


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
    # Java semantics: offset key -> producer ids whose open transaction stages it, so that a tombstone
    # visits those transactions only (kept by the C twin too; resolved transactions are taken out).
    txn_keys: dict[bytes, set[int]] = field(default_factory=dict)
    stats: LoadStats = field(default_factory=LoadStats)
    # Record offsets whose value failed the validation pass (already reported; see value_check).
    invalid_values: set[int] = field(default_factory=set)
    # The file of the buffer being walked (for fold_tally).
    _walk_file: str | None = field(default=None, repr=False)

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

    def _missing_key(self, file: str | None, position: int, offset: int) -> None:
        errors = self.stats.errors
        reason = "record has no key; every __consumer_offsets record must have one"
        if isinstance(errors, ErrorLog):
            errors.report("missing_key", reason, file, self.partition, position, offset)
        else:
            errors.append(DecodeError("missing_key", reason, file, self.partition, position, offset))

    def _add_plain(self, batch: RecordBatch) -> None:
        # Checked whole before the first chunk, so a corrupt batch folds nothing; a chunk at a time after.
        for records in batch.record_chunks():
            self.fold_records(records, batch.base_offset, batch.position, batch.file)
            self.stats.records += len(records)

    # -- the fold target of records.fold.fold_buffer ------------------------------------------------

    def fold_state(self) -> FoldState:
        """What the C twin reads and updates: this fold's containers and the callbacks it hands back to."""
        return FoldState(
            latest=self.latest,
            open_txns=self.open_txns,
            first_marker=self.first_marker,
            created=self.created,
            txn_keys=self.txn_keys,
            small_types=self._small_types,
            scala=self.semantics == "scala",
            fold_record=self.fold_record,
            fold_transactional_record=self.fold_transactional_record,
            fold_control=self.fold_control,
            offset_order=self.offset_order,
        )

    def fold_records(self, records: list[Record], base: int, pos: int, file: str | None) -> None:
        """Fold the records of one plain batch: last writer wins per key.

        The hot case (:func:`_hot`) is a dict store here and in the C twin alike; every other record
        goes through :meth:`fold_record`.
        """
        self._fold_hot(records, self.latest, self.fold_record, base, pos, file)

    def _fold_hot(
        self, records: list[Record], dest: dict[bytes, Entry], slow, base: int, pos: int, file
    ) -> None:
        """Store the hot case in ``dest`` (latest, or a producer's pending offsets); ``slow`` the rest."""
        small = self._small_types
        for off, _ts, key, value in records:
            if _hot(key, value):
                small[1] += 1
                dest[key] = (off, base, pos, value)  # pyright: ignore[reportArgumentType]  # _hot: a key
            else:
                slow(off, key, value, base, pos, file)

    def fold_record(
        self, off: int, key: bytes | None, value: bytes | None, base: int, pos: int, file: str | None
    ) -> None:
        """Fold one record of a plain batch (``OffsetMetadataManager.replay``, ``GroupMetadataManager``)."""
        admitted = self._admit(off, key, value, pos, file)
        if admitted is None:
            return
        rtype, key = admitted
        if value is None and self.semantics == "java":
            self._tombstone(key, off, rtype)
        self.latest[key] = (off, base, pos, value)

    def _admit(
        self, off: int, key: bytes | None, value: bytes | None, pos: int, file: str | None
    ) -> tuple[int, bytes] | None:
        """What every record outside the hot case goes through, plain or transactional: it needs a key,
        its type is tallied, a type 0 key is named as the type 1 key of the same GroupTopicPartition,
        tombstones are counted and other values validated. ``(type, key)``, or None without a key."""
        if key is None:
            self._missing_key(file, pos, off)
            return None
        if len(key) > 1 and not key[0]:
            rtype = key[1]
            self._small_types[rtype] += 1
        else:
            rtype = _record_type(key)
            self.type_counts[rtype] = self.type_counts.get(rtype, 0) + 1
        if rtype == 0:
            key = _OFFSET_PREFIX + key[2:]
        if value is None:
            self.stats.tombstones += 1
        elif rtype != 1 or not offset_commit_value_ok(value):
            self._check_value(rtype, value, off, file, pos)
        return rtype, key

    def fold_batch(self, batch: RecordBatch) -> None:
        """Fold a batch the walk read whole (its segment already counted by the walk's caller)."""
        saved = self.stats.segments
        self.add_batch(batch)
        self.stats.segments = saved

    def fold_tally(
        self,
        batches: int,
        nbytes: int,
        records: int,
        first: int,
        last: int,
        transactional: int = 0,
        control: int = 0,
    ) -> None:
        stats = self.stats
        file = self._walk_file
        if file is not None and (not self.files or self.files[-1][1] != file):
            self.files.append((first, file))
        if stats.first_offset is None:
            stats.first_offset = first
        stats.batches += batches
        stats.bytes += nbytes
        stats.records += records
        stats.transactional_batches += transactional
        stats.control_records += control
        stats.last_offset = last

    def offset_order(self, file: str | None, position: int, base_offset: int, prev_last: int) -> None:
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
            kind, reason = problem
            if kind != EMBEDDED_KIND:  # the group itself is read; only its member's bytes are not
                self.invalid_values.add(off)
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
        """Java semantics: remember the tombstone (for merges) and drop the key from open transactions
        (only those that stage it, found through ``txn_keys``: a tombstone costs the same however many
        transactions are open)."""
        self.tomb_max[key] = off
        if 0 <= rtype <= 1:
            self._created(key, self.latest.get(key))
            open_txns = self.open_txns
            for pid in self.txn_keys.pop(key, ()):
                pending = open_txns.get(pid)
                if pending is not None:
                    self._created(key, pending.pop(key, None))

    def _unindex_txn(self, pid: int, pending: dict[bytes, Entry]) -> None:
        """A resolved transaction's keys no longer point at its producer (Java semantics)."""
        index = self.txn_keys
        for key in pending:
            pids = index.get(key)
            if pids is not None:
                pids.discard(pid)
                if not pids:
                    del index[key]

    def _reindex_txns(self) -> None:
        """Rebuild ``txn_keys`` from the open transactions (after a merge)."""
        self.txn_keys.clear()  # in place: a FoldState handed to the C twin holds this dict
        if self.semantics == "java":
            for pid, pending in self.open_txns.items():
                for key in pending:
                    self.txn_keys.setdefault(key, set()).add(pid)

    def _created(self, key: bytes, entry: Entry | None) -> None:
        """Java semantics: an offset-commit value that will not survive still created its group."""
        if entry is None or entry[3] is None:
            return
        group = group_part(key)
        if self.created.get(group, -1) < entry[0]:
            self.created[group] = entry[0]

    # -- whole buffers and segment files -----------------------------------------------------------

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
        start: int = 0,
        prev_last: int = -1,
    ) -> None:
        """Fold a buffer of concatenated batches (a whole segment, or a Fetch response), from
        ``data[start]`` (``prev_last``: the last offset folded before it, for the order check).

        Errors, resyncs and zero tails are reported exactly as the general reader reports them
        (:func:`~offsetops.coordinator_core.records.fold.fold_buffer` walks with its ``read_entry``).
        """
        if isinstance(data, memoryview):
            data = data.tobytes()  # keys must come out as bytes (dict keys), not views
        if file is not None and (not self.files or self.files[-1][1] != file):
            self.stats.segments += 1
        self._walk_file = file
        fold_buffer(
            data,
            self,
            report=self.stats.errors.append,
            base=start_position,
            file=file,
            partition=self.partition,
            verify_crc=verify_crc,
            max_batch_bytes=max_batch_bytes,
            scan=scan if scan is not None else Scan(release=release),
            start=start,
            prev_last=prev_last,
        )

    def add_segment(
        self,
        path,
        *,
        verify_crc: bool = True,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        start: int = 0,
        prev_last: int = -1,
        also: Callable[[mmap.mmap, Scan], object] | None = None,
    ) -> int | None:
        """Fold one ``.log`` file, memory-mapped, from byte ``start``; folded pages are released as the
        walk goes on. Returns the file's size as walked (None when it could not be opened or mapped).

        ``also(mapping, scan)`` is handed the same mapping after the fold, so a second reader of the
        segment (the reload's cleaner scan) walks it without opening the file again."""
        file = str(path)
        try:
            fh = open_regular_file(path, kind="segment", follow_symlinks=True)
        except OSError as exc:
            self.stats.errors.append(DecodeError("io", f"cannot open: {exc}", file, self.partition))
            return None
        with fh:
            try:
                size = os.fstat(fh.fileno()).st_size
                if size <= start:
                    self.stats.segments += int(size == 0)
                    return size
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                self.stats.errors.append(DecodeError("io", f"cannot read: {exc}", file, self.partition, 0))
                return None
            try:
                scan = Scan(fh.fileno(), page_release(mm))
                self.add_buffer(
                    mm, file=file, verify_crc=verify_crc, scan=scan, max_batch_bytes=max_batch_bytes,
                    start=start, prev_last=prev_last,
                )  # fmt: skip
                if also is not None:
                    also(mm, Scan(fh.fileno(), page_release(mm)))
            finally:
                _close_map(mm)
        return size

    def _add_transactional(self, batch: RecordBatch) -> None:
        for records in batch.record_chunks():  # checked whole first: a corrupt batch folds nothing
            self.fold_transactional(batch.producer_id, records, batch.base_offset, batch.position, batch.file)
            self.stats.records += len(records)

    def fold_transactional(
        self, pid: int, records: list[Record], base: int, pos: int, file: str | None
    ) -> None:
        """Stage the records of a transactional batch until its producer's marker resolves them."""
        pending = self.open_txns.setdefault(pid, {})
        slow = functools.partial(self.fold_transactional_record, pid)
        self._fold_hot(records, pending, slow, base, pos, file)
        if self.semantics == "java":
            index = self.txn_keys
            for _off, _ts, key, value in records:
                if _hot(key, value):
                    index.setdefault(key, set()).add(pid)  # pyright: ignore[reportArgumentType]  # _hot: a key

    def fold_transactional_record(
        self,
        pid: int,
        off: int,
        key: bytes | None,
        value: bytes | None,
        base: int,
        pos: int,
        file: str | None,
    ) -> None:
        """One record of a transactional batch that is not the hot case."""
        admitted = self._admit(off, key, value, pos, file)
        if admitted is None:
            return
        rtype, key = admitted
        if rtype <= 1:
            pending = self.open_txns.setdefault(pid, {})
            if value is None and self.semantics == "scala":
                pending.pop(key, None)
            else:
                pending[key] = (off, base, pos, value)
                if self.semantics == "java":
                    self.txn_keys.setdefault(key, set()).add(pid)
        else:
            # Only offset commits are transactional; anything else is replayed directly.
            self.latest[key] = (off, base, pos, value)

    def _add_control(self, batch: RecordBatch) -> None:
        self.fold_control(batch.producer_id, list(batch.iter_records()), batch.position, batch.file)

    def fold_control(self, pid: int, records: list[Record], pos: int, file: str | None) -> None:
        """The records of a control batch: COMMIT or ABORT markers resolve the producer's transaction."""
        # Imported here: the native fold reads the markers itself, and most runs never come this way.
        from offsetops.coordinator_core.schema import decode_control_key

        for off, _ts, key, _value in records:
            self.stats.records += 1
            self.stats.control_records += 1
            if key is None:
                self._missing_key(file, pos, off)
                continue
            try:
                ctype = decode_control_key(key).type
            except SchemaError as exc:
                self.stats.errors.append(
                    DecodeError(
                        "corrupt_record", f"control record key: {exc}", file, self.partition, pos, off
                    )
                )
                continue
            if ctype not in (_CONTROL_ABORT, _CONTROL_COMMIT):
                continue  # LEADER_CHANGE, KRaft snapshot markers: not transaction markers
            commit = ctype == _CONTROL_COMMIT
            self.first_marker.setdefault(pid, (off, commit))
            pending = self.open_txns.pop(pid, None)
            if pending and self.semantics == "java":
                self._unindex_txn(pid, pending)
            if commit and pending:
                self._commit(pending)
            elif pending and self.semantics == "java":
                for key, entry in pending.items():
                    self._created(key, entry)
            if self.semantics == "scala":
                break  # the Scala loader reads only the first record of a control batch

    def _commit(self, pending: dict[bytes, Entry]) -> None:
        native = native_commit()
        if native is not None:
            native(self.latest, pending, self.semantics == "scala", self.created)
            return
        latest = self.latest
        # Java: the later offset wins; Scala: the later batch (base offset) wins.
        idx = 0 if self.semantics == "java" else 1
        for key, entry in pending.items():
            if entry[3] is None:
                continue
            cur = latest.get(key)
            if cur is None or (cur[3] is None and self.semantics == "scala") or cur[idx] < entry[idx]:  # type: ignore[operator]
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
        self._reindex_txns()
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
        return Materializer(self, num_partitions).build()

    def finish_reusing(
        self, memo: SurvivorMemo, *, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS
    ) -> CoordinatorCache:
        """:meth:`finish`, taking from ``memo`` the values the partition's last finish decoded from the
        same records (a following reader's update decodes only what changed), and updating it."""
        self._flush_types()
        return ReusingMaterializer(self, num_partitions, memo).build()


def _close_map(mm: mmap.mmap) -> None:
    try:
        mm.close()
    except BufferError:
        # A view of the map is still referenced (say, from an exception's traceback): collect it.
        gc.collect()
        with contextlib.suppress(BufferError):
            mm.close()  # else the map closes when the last view goes


def _hot(key: bytes | None, value: bytes | None) -> bool:
    """The hot case of a record, inlined in the C twin as well: an offset-commit key (type 1) with an
    ``OffsetCommitValue`` v0-v3 that :func:`offset_commit_value_ok` accepts (a known version and a
    non-negative metadata length that fits; v3 is nearly every record since Kafka 2.1, v1 the commits
    that carry an expire timestamp). Anything else takes the full rules and checks."""
    if key is None or value is None or len(key) < 2 or key[1] != 1 or key[0] or len(value) < 2 or value[0]:
        return False
    version = value[1]
    if version == 3:
        return len(value) >= 16 and value[14] <= 0x7F and len(value) >= 24 + ((value[14] << 8) | value[15])
    if version <= 2:
        base = 28 if version == 1 else 20
        return len(value) >= 12 and value[10] <= 0x7F and len(value) >= base + ((value[10] << 8) | value[11])
    return False


def group_part(key: bytes) -> bytes:
    """The group of an offset-commit key as it is serialized (int16 length + UTF-8 name)."""
    return key[2 : 4 + max(int.from_bytes(key[2:4], "big", signed=True), 0)]


def _record_type(key: bytes) -> int:
    """The key's int16 record type (-1 for a key too short to have one)."""
    return int.from_bytes(key[:2], "big", signed=True) if len(key) >= 2 else -1


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
    start = time.perf_counter()
    fold = PartitionFold(partition=pdir.partition, semantics=semantics)
    fold.stats.errors.extend(pdir.anomalies)
    read = fold_segments(fold, pdir, verify_crc=verify_crc, max_batch_bytes=max_batch_bytes)
    cache = fold.finish(num_partitions=num_partitions)
    cache.stats.bytes_read = read.bytes_read
    cache.stats.elapsed_ms = (time.perf_counter() - start) * 1000
    return cache


@dataclass(frozen=True, slots=True)
class SegmentsRead:
    """How far :func:`fold_segments` read: the bytes of segment data it walked, and the size of each
    segment as the walk saw it (None: it could not be opened), in log order."""

    bytes_read: int
    sizes: tuple[int | None, ...]


class SegmentRider(Protocol):
    """A second reader of the segments a fold reads, handed each mapping (the cleaner's scan)."""

    def read(self, seg: Any, start: int, mapping: mmap.mmap, walker: Scan) -> None:
        """The mapped bytes of ``seg`` from byte ``start``, after the fold read them."""

    def done(self, seg: Any, start: int, size: int | None) -> None:
        """``seg`` is folded (``size``: as walked; None when it could not be read)."""


def fold_segments(
    fold: PartitionFold,
    pdir,
    *,
    first: int = 0,
    start: int = 0,
    verify_crc: bool = True,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    rider: SegmentRider | None = None,
) -> SegmentsRead:
    """Fold ``pdir.segments[first:]`` in log order, the first of them from byte ``start`` (a resumed
    read goes on inside the segment it stopped in); each segment read from its start is checked
    against its name and the segment before it (``segment_order_errors``). ``rider`` reads each
    segment's bytes from the same mapping."""
    from offsetops.coordinator_core.sources.logdir import segment_order_errors

    read, sizes = 0, []
    for i, seg in enumerate(pdir.segments[first:]):
        at = start if i == 0 else 0
        previous_last, known = fold.stats.last_offset, len(fold.files)
        size = fold.add_segment(
            seg.path, verify_crc=verify_crc, max_batch_bytes=max_batch_bytes, start=at,
            prev_last=-1 if at == 0 or previous_last is None else previous_last,
            also=None if rider is None else functools.partial(rider.read, seg, at),
        )  # fmt: skip
        if rider is not None:
            rider.done(seg, at, size)
        sizes.append(size)
        read += max((size or 0) - at, 0)
        if at == 0:
            head = fold.files[-1][0] if len(fold.files) > known else None
            fold.stats.errors.extend(
                segment_order_errors(str(seg.path), pdir.partition, seg.base_offset, head, previous_last)
            )
    fold.stats.segments = len(pdir.segments)
    return SegmentsRead(read, tuple(sizes))


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
