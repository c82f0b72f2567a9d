"""The record scan of one partition: what a full ``LogCleaner`` pass would see and drop.

One pass over every batch gives each segment's timestamps (``LogSegment.largestTimestamp``,
``getFirstBatchTimestamp``), the open transactions that hold the last stable offset, and a key table
(last writer wins by offset, as ``OffsetMap`` + ``LogCleaner.shouldRetainRecord`` decide) from which
the reclaimable bytes, dirty keys and expired tombstones follow.

The scan also splits by segment, as the reload's fold does: :func:`scan_segment` scans one segment's
bytes alone and :meth:`PartitionScan.merge` joins the scans of consecutive segments in log order, giving
what :func:`scan_partition` gives for the whole partition. Keys are identified by a 64-bit digest
(``SkimpyOffsetMap`` keys by a digest of the key too), the same in every process, so scans made by
different Spark workers merge.

A scan holds only what does not move between runs: a tombstone's raw facts (its delete horizon, or its
timestamp) rather than whether it has expired, a timestamp a record lacks as the segment it sits in,
and each segment's largest batch timestamp as read. What moves is applied when the scan is judged
(:meth:`PartitionScan.key_stats` with the run's clock and retention, :meth:`PartitionScan.txn_start_ms`
with the segments' mtimes as listed), so a scan saved by one run and continued by the next
(:mod:`.scan_resume`) judges as a fresh scan of the same bytes does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.cleaner.manager import SegmentInfo
from offsetops.coordinator_core.errors import DecodeError, OffsetsDecodeException
from offsetops.coordinator_core.records.batch import RecordBatch
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.records.reader import Scan, iter_segment_batches, walk
from offsetops.coordinator_core.schema.control import decode_control_key
from offsetops.coordinator_core.schema.types import SchemaError
from offsetops.coordinator_core.sources.logdir import PartitionDir

__all__ = [
    "COUNTS",
    "KeyStats",
    "PartitionScan",
    "ScanInputs",
    "dirty_from",
    "key_id",
    "scan_into",
    "scan_partition",
    "scan_segment",
    "tombstone_columns",
    "tombstone_of",
    "tombstone_state",
]

# key-table entry slots (a list per key keeps the scan to one dict lookup per record)
_LAST, _SHARE, _TOMB, _FIRST_DIRTY, _FIRST = range(5)
# _TOMB of the latest record of a key: None for a value, else the tombstone's raw facts, judged with the
# run's clock (:func:`tombstone_state`): (_HORIZON, delete horizon) for a batch with one (KIP-534);
# _NO_HORIZON_FACT for a v2 tombstone in the dirty section whose batch has none yet (the next pass keeps
# it and stamps the horizon); (_STAMP, timestamp, base offset of its segment) for the pre-KIP-534 rule
# (a timestamp of -1: the segment's mtime stands in, read when judged).
_HORIZON, _STAMP = 0, 1
# what a tombstone is when judged: kept, removed by the next pass, or waiting for its horizon
_KEEP, _REMOVABLE, _NO_HORIZON = 0, 1, 2
_NO_HORIZON_FACT = (_NO_HORIZON,)
_NO_ACTIVE = 2**63 - 1


def key_id(key: bytes) -> bytes:
    """The key table's identity of a record key: a 64-bit BLAKE2b digest (``SkimpyOffsetMap`` keys by a
    digest), the same in every process, unlike ``hash(bytes)``, which is salted per process."""
    return hashlib.blake2b(key, digest_size=8).digest()


@dataclass(frozen=True, slots=True)
class ScanInputs:
    """What a partition's scan depends on beside its bytes, worked out once per partition (small
    checkpoint files) and shipped with each segment's task."""

    partition: int
    #: the cleaner's first dirty offset as the checkpoint gives it (:func:`dirty_from`)
    dirty_from: int
    #: base offset of the active segment (its reclaimable bytes are never cleaned)
    active_base: int
    verify_crc: bool = True
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES


def dirty_from(checkpoint: int | None, log_start_checkpoint: int | None, first_base_offset: int) -> int:
    """Where the dirty section starts: the cleaner checkpoint when it is at or past the log start, else
    the log start (``UnifiedLog``: logStartOffset = max(checkpointed log start, first segment's base))."""
    log_start = max(log_start_checkpoint or 0, first_base_offset)
    return checkpoint if checkpoint is not None and checkpoint >= log_start else log_start


@dataclass
class KeyStats:
    """What the key table says about the cleanable range (see :meth:`PartitionScan.key_stats`)."""

    dirty_keys: int = 0
    expired_tombstones: int = 0
    expired_tombstones_cleanable: int = 0
    tombstones_without_horizon: int = 0
    tombstones_without_horizon_cleanable: int = 0


@dataclass
class PartitionScan:
    """The scan of a partition's segments so far (see the module docstring)."""

    segments: list[SegmentInfo] = field(default_factory=list)
    #: each segment's largest batch max timestamp as read (-1: none had one; ``segments`` holds the
    #: mtime instead), so that a scan continued in a later run can list the segment again
    largest_read: list[int] = field(default_factory=list)
    batches: int = 0
    records: int = 0
    control_batches: int = 0
    tombstones: int = 0
    keyless_records: int = 0
    aborted_records: int = 0
    superseded_records: int = 0
    reclaimable_bytes: float = 0.0
    #: base offset of the active segment, and the reclaimable bytes that sit in it (never cleaned)
    active_base: int = _NO_ACTIVE
    active_reclaimable_bytes: float = 0.0
    #: the highest offset of a record counted as reclaimable (-1: none)
    top_reclaimed: int = -1
    #: producer id -> [first offset, first timestamp (-1: none), epoch, [(key id, offset, share,
    #: tombstone), ...], base offset of the first batch's segment]
    open_txns: dict[int, list[Any]] = field(default_factory=dict)
    keys: dict[bytes, list[Any]] = field(default_factory=dict)
    errors: list[DecodeError] = field(default_factory=list)
    #: the first COMMIT/ABORT marker of each producer in the scanned range, in log order: (producer id,
    #: aborted); it ends whatever that producer had open before the range (resolved at :meth:`merge`)
    first_markers: list[tuple[int, bool]] = field(default_factory=list)
    marked: set[int] = field(default_factory=set)

    def reclaim(self, offset: int, share: float) -> None:
        """A record a full clean drops (superseded, aborted or keyless)."""
        self.reclaimable_bytes += share
        if offset >= self.active_base:
            self.active_reclaimable_bytes += share
        if offset > self.top_reclaimed:
            self.top_reclaimed = offset

    def apply(self, h: bytes, offset: int, share: float, tomb: Any, dirty_from: int) -> None:
        """Last writer wins by offset: whichever of the old and new record is older is superseded."""
        first_dirty = offset if offset >= dirty_from else -1
        entry = self.keys.get(h)
        if entry is None:
            self.keys[h] = [offset, share, tomb, first_dirty, offset]
        else:
            self._supersede(entry, [offset, share, tomb, first_dirty, offset])

    def _supersede(self, entry: list[Any], other: list[Any]) -> None:
        """Two entries of one key: the older last record is superseded, the first offsets are the least."""
        self.superseded_records += 1
        if other[_LAST] > entry[_LAST]:
            self.reclaim(entry[_LAST], entry[_SHARE])
            entry[_LAST], entry[_SHARE], entry[_TOMB] = other[_LAST], other[_SHARE], other[_TOMB]
        else:
            self.reclaim(other[_LAST], other[_SHARE])
        dirty = other[_FIRST_DIRTY]
        if dirty >= 0 and (entry[_FIRST_DIRTY] < 0 or dirty < entry[_FIRST_DIRTY]):
            entry[_FIRST_DIRTY] = dirty
        entry[_FIRST] = min(entry[_FIRST], other[_FIRST])

    def end_transaction(self, producer_id: int, aborted: bool, dirty_from: int) -> None:
        """A COMMIT or ABORT marker: the producer's open transaction is applied or dropped."""
        if producer_id not in self.marked:
            self.marked.add(producer_id)
            self.first_markers.append((producer_id, aborted))
        txn = self.open_txns.pop(producer_id, None)
        if txn is not None:
            self._resolve(txn[3], aborted, dirty_from)

    def _resolve(self, pending: list[tuple[bytes, int, float, Any]], aborted: bool, dirty_from: int) -> None:
        if aborted:
            # aborted transactional data is removed by the cleaner whatever its key
            for _h, off, share, _tomb in pending:
                self.aborted_records += 1
                self.reclaim(off, share)
        else:
            for h, off, share, tomb in pending:
                self.apply(h, off, share, tomb, dirty_from)

    def merge(self, later: PartitionScan, dirty_from: int) -> PartitionScan:
        """Add the scan of the segments that follow this one's (``PartitionFold.merge`` for the scan).

        ``later``'s first marker of each producer ends the transaction this scan left open; a
        transaction ``later`` left open with no marker before it continues one open here. Both scans
        must have been made with the same :class:`ScanInputs`.
        """
        for pid, aborted in later.first_markers:
            self.end_transaction(pid, aborted, dirty_from)
        for pid, txn in later.open_txns.items():
            ours = self.open_txns.get(pid)
            if ours is not None and pid not in later.marked:
                ours[3].extend(txn[3])
            else:
                self.open_txns[pid] = txn
        for h, entry in later.keys.items():
            mine = self.keys.get(h)
            if mine is None:
                self.keys[h] = entry
            else:
                self._supersede(mine, entry)
        for name in _COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(later, name))
        self.top_reclaimed = max(self.top_reclaimed, later.top_reclaimed)
        self.segments.extend(later.segments)
        self.largest_read.extend(later.largest_read)
        self.errors.extend(later.errors)
        return self

    def mtimes(self) -> dict[int, int]:
        """Each segment's mtime as listed, by base offset."""
        return {s.base_offset: s.mtime_ms for s in self.segments}

    def txn_start_ms(self, txn: list[Any], mtimes: dict[int, int]) -> int:
        """When an open transaction began: its first batch's timestamp, else its segment's mtime."""
        return txn[1] if txn[1] >= 0 else mtimes.get(txn[4], 0)

    def key_stats(
        self,
        first_dirty_offset: int,
        first_uncleanable_segment: int,
        *,
        whole_log: bool,
        now_ms: int,
        delete_retention_ms: int,
    ) -> KeyStats:
        """The key table against the cleanable range [first dirty, first uncleanable segment), its
        tombstones judged as of ``now_ms`` (:func:`tombstone_state`).

        ``whole_log`` counts a key as dirty by its first offset anywhere in the log rather than in the
        dirty section: after the ``above_log_end`` checkpoint reset the broker re-cleans from the start.
        """
        stats = KeyStats()
        mtimes = self.mtimes()
        for entry in self.keys.values():
            first = entry[_FIRST] if whole_log else entry[_FIRST_DIRTY]
            if first >= 0 and first_dirty_offset <= first < first_uncleanable_segment:
                stats.dirty_keys += 1
            tomb = entry[_TOMB]
            if tomb is None:
                continue
            state = tombstone_state(tomb, now_ms, delete_retention_ms, mtimes)
            if state == _REMOVABLE:
                stats.expired_tombstones += 1
                if entry[_LAST] < first_uncleanable_segment:
                    stats.expired_tombstones_cleanable += 1
            elif state == _NO_HORIZON:
                stats.tombstones_without_horizon += 1
                if entry[_LAST] < first_uncleanable_segment:
                    stats.tombstones_without_horizon_cleanable += 1
        return stats


def tombstone_state(
    tomb: tuple[int, ...], now_ms: int, delete_retention_ms: int, mtimes: dict[int, int]
) -> int:
    """A tombstone's raw facts judged as of ``now_ms`` (``LogCleaner.shouldRetainRecord``)."""
    kind = tomb[0]
    if kind == _HORIZON:
        # kept while currentTime < deleteHorizonMs
        return _REMOVABLE if now_ms >= tomb[1] else _KEEP
    if kind == _NO_HORIZON:
        return _NO_HORIZON
    # Magic 0/1, or a v2 tombstone in the clean section that a pass left without a horizon (so the
    # broker that cleaned it predates KIP-534, 3.1): the pre-KIP-534 rule keys on the last clean
    # segment's mtime; the record timestamp stands in (the segment's mtime when it has none).
    stamp = tomb[1] if tomb[1] >= 0 else mtimes.get(tomb[2], now_ms)
    return _REMOVABLE if now_ms - stamp > delete_retention_ms else _KEEP


def tombstone_columns(tomb: Any) -> tuple[int, int, int]:
    """A key's tombstone facts as three integers (kind, value, segment); a value is kind -1."""
    if tomb is None:
        return -1, 0, 0
    if tomb[0] == _NO_HORIZON:
        return _NO_HORIZON, 0, 0
    if tomb[0] == _HORIZON:
        return _HORIZON, tomb[1], 0
    return _STAMP, tomb[1], tomb[2]


def tombstone_of(kind: int, value: int, segment: int) -> Any:
    """The facts :func:`tombstone_columns` gave (ValueError for a kind it never gives)."""
    if kind == -1:
        return None
    if kind == _NO_HORIZON:
        return _NO_HORIZON_FACT
    if kind == _HORIZON:
        return (_HORIZON, value)
    if kind == _STAMP:
        return (_STAMP, value, segment)
    raise ValueError(f"a tombstone kind {kind}")


#: the scan's counts of batches and records
COUNTS = (
    "batches",
    "records",
    "control_batches",
    "tombstones",
    "keyless_records",
    "aborted_records",
    "superseded_records",
)
#: the counters two scans add up when merged
_COUNTERS = (*COUNTS, "reclaimable_bytes", "active_reclaimable_bytes")


def scan_partition(
    pdir: PartitionDir,
    *,
    dirty_from: int,
    verify_crc: bool,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> PartitionScan:
    """One pass over every batch: segment timestamps, transactions, and the key table."""
    active = pdir.segments[-1].base_offset if pdir.segments else _NO_ACTIVE
    inputs = ScanInputs(pdir.partition, dirty_from, active, verify_crc, max_batch_bytes)
    scan = PartitionScan(active_base=active)
    for seg in pdir.segments:
        batches = iter_segment_batches(
            seg.path, partition=pdir.partition, errors=scan.errors, verify_crc=verify_crc,
            max_batch_bytes=max_batch_bytes,
        )  # fmt: skip
        _scan_batches(
            scan, batches, inputs, base_offset=seg.base_offset, size=seg.size, mtime_ms=seg.mtime_ms
        )
    return scan


def scan_segment(
    data: Any,
    inputs: ScanInputs,
    *,
    file: str,
    base_offset: int,
    size: int,
    mtime_ms: int,
    scan: Scan | None = None,
) -> PartitionScan:
    """The scan of one segment's bytes (``data``: bytes or the mapped file), to be merged in log order
    with the scans of the partition's other segments (:meth:`PartitionScan.merge`)."""
    out = PartitionScan(active_base=inputs.active_base)
    scan_into(
        out, data, inputs, file=file, base_offset=base_offset, size=size, mtime_ms=mtime_ms, walker=scan
    )
    return out


def scan_into(
    scan: PartitionScan,
    data: Any,
    inputs: ScanInputs,
    *,
    file: str,
    base_offset: int,
    size: int,
    mtime_ms: int,
    start: int = 0,
    stop: int | None = None,
    walker: Scan | None = None,
) -> None:
    """Scan one segment's bytes (``data``: bytes or the mapped file) from byte ``start`` (to ``stop``)
    into ``scan``,
    after the segments it holds. When the segment is ``scan``'s last one, read up to ``start`` by an
    earlier run (:mod:`.scan_resume`), its facts go on from where they were."""
    batches = walk(
        data,
        file=file,
        partition=inputs.partition,
        report=scan.errors.append,
        verify_crc=inputs.verify_crc,
        max_batch_bytes=inputs.max_batch_bytes,
        scan=walker if walker is not None else Scan(),
        start=start,
        stop=stop,
    )
    carry = None
    if scan.segments and scan.segments[-1].base_offset == base_offset:
        last = scan.segments.pop()
        carry = (last.first_batch_timestamp, scan.largest_read.pop(), last.next_offset)
    _scan_batches(scan, batches, inputs, base_offset=base_offset, size=size, mtime_ms=mtime_ms, carry=carry)


def _scan_batches(
    scan: PartitionScan,
    batches: Iterable[RecordBatch],
    inputs: ScanInputs,
    *,
    base_offset: int,
    size: int,
    mtime_ms: int,
    carry: tuple[int, int, int | None] | None = None,
) -> None:
    """Scan the batches of one segment into ``scan``; the segment's :class:`SegmentInfo` is appended.

    ``carry``: (first batch timestamp, largest timestamp, next offset) of the segment's bytes before
    these, read earlier. The key digests of the segment are remembered while it is scanned: commits
    repeat their keys, and a dict lookup costs a tenth of a digest (the memory is the segment's
    distinct keys, at most its size).
    """
    first_ts, largest, next_offset = carry if carry is not None else (-1, -1, None)
    n = 0 if next_offset is None else 1
    digests: dict[bytes, bytes] = {}
    for batch in batches:
        if n == 0:
            first_ts = batch.max_timestamp
        n += 1
        largest = max(largest, batch.max_timestamp)
        next_offset = batch.next_offset
        scan.batches += 1
        try:
            records = batch.records()
        except OffsetsDecodeException as exc:
            scan.errors.append(exc.error)
            continue
        if batch.is_control:
            scan.control_batches += 1
            _end_transaction(scan, batch, records, inputs)
            continue
        _scan_records(scan, batch, records, inputs, base_offset, digests)
    scan.largest_read.append(largest)
    scan.segments.append(
        SegmentInfo(
            base_offset=base_offset,
            size=size,
            largest_timestamp=largest if largest >= 0 else mtime_ms,
            first_batch_timestamp=first_ts,
            mtime_ms=mtime_ms,
            next_offset=next_offset,
        )
    )


def _scan_records(
    scan: PartitionScan,
    batch: RecordBatch,
    records: list[tuple[int, int, bytes | None, bytes | None]],
    inputs: ScanInputs,
    segment: int,
    digests: dict[bytes, bytes],
) -> None:
    """The data records of one batch into the key table, or into their producer's open transaction
    (``segment``: the base offset of the segment they sit in)."""
    dirty_from = inputs.dirty_from
    share = batch.size / max(len(records), 1)
    horizon = batch.delete_horizon_ms
    pid = batch.producer_id
    pending: list[tuple[bytes, int, float, Any]] | None = None
    if batch.is_transactional and pid >= 0:
        txn = scan.open_txns.get(pid)
        if txn is None:
            ts = batch.max_timestamp if batch.max_timestamp >= 0 else batch.base_timestamp
            txn = [batch.base_offset, ts if ts >= 0 else -1, batch.producer_epoch, [], segment]
            scan.open_txns[pid] = txn
        pending = txn[3]
    for offset, ts, key, value in records:
        scan.records += 1
        if key is None:
            # the cleaner drops records without a key (counted as invalid messages)
            scan.keyless_records += 1
            scan.reclaim(offset, share)
            continue
        tomb: Any = None
        if value is None:
            scan.tombstones += 1
            if horizon is not None:
                tomb = (_HORIZON, horizon)
            elif batch.magic >= 2 and offset >= dirty_from:
                tomb = _NO_HORIZON_FACT
            else:
                tomb = (_STAMP, ts if ts >= 0 else -1, segment)
        h = digests.get(key)
        if h is None:
            h = digests[key] = key_id(key)
        if pending is not None:
            pending.append((h, offset, share, tomb))
        else:
            scan.apply(h, offset, share, tomb, dirty_from)


def _end_transaction(
    scan: PartitionScan,
    batch: RecordBatch,
    records: list[tuple[int, int, bytes | None, bytes | None]],
    inputs: ScanInputs,
) -> None:
    for _offset, _ts, key, _value in records:
        if key is None:
            continue
        try:
            ctl = decode_control_key(key)
        except SchemaError as exc:
            scan.errors.append(
                DecodeError("corrupt_key", str(exc), None, inputs.partition, None, batch.base_offset)
            )
            continue
        if ctl.is_commit or ctl.is_abort:
            scan.end_transaction(batch.producer_id, ctl.is_abort, inputs.dirty_from)
