"""One simulated ``__consumer_offsets`` partition on disk: append, roll, and the Log Cleaner.

``PartitionLog`` streams batches into ``NNNNNNNNNNNNNNNNNNNN.log`` segments (``LocalLog.roll`` at
``segment.bytes``) and, for partitions whose cleaner is alive, compacts closed segments the way
``LogCleaner.Cleaner.doClean`` does: latest record per key wins, aborted transactional data goes,
markers stay, tombstones live until their delete horizon (KIP-534 from 3.1, the segment-age rule
before), and cleaned segments are grouped into files named after their first input segment, so a
file's first batch can start after its name's offset.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records.batch import RecordBatch
from offsetops.coordinator_core.records.builder import build_control_batch, build_record_batch
from offsetops.coordinator_core.records.reader import iter_segment_batches

DELETE_RETENTION_MS = 24 * 3600 * 1000  # delete.retention.ms
MIN_CLEANABLE_RATIO = 0.5  # min.cleanable.dirty.ratio
INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes
_INDEX_ENTRY = struct.Struct(">ii")  # relative offset, position (OffsetIndex)
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset (TimeIndex)


class SimulatorError(Exception):
    """The simulator found its own output inconsistent (a bug, never a property of the input)."""


@dataclass(slots=True)
class _Segment:
    base_offset: int
    path: Path
    size: int = 0
    max_timestamp: int = -1


@dataclass(slots=True)
class CleanerStats:
    passes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_removed: int = 0
    tombstones_removed: int = 0
    aborted_batches_removed: int = 0


@dataclass(slots=True)
class PartitionLog:
    """A ``__consumer_offsets-N`` directory being written by the simulated leader."""

    root: Path
    partition: int
    segment_bytes: int
    compacted: bool
    delete_horizon: bool  # KIP-534 horizons in the batch (3.1+) or the legacy segment-age rule
    leader_epoch: int = 0
    next_offset: int = 0
    segments: list[_Segment] = field(default_factory=list)
    first_dirty_offset: int = 0  # what cleaner-offset-checkpoint says
    epochs: list[tuple[int, int]] = field(default_factory=list)  # (leader epoch, start offset)
    cleaner: CleanerStats = field(default_factory=CleanerStats)
    _fh: object = None
    _open_txn: dict[int, list[int]] = field(default_factory=dict)  # producer id -> its batches' offsets
    # Base offsets of aborted transactional batches not yet cleaned away (the .txnindex's knowledge).
    _aborted: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._roll()

    @property
    def dir(self) -> Path:
        return self.root / f"__consumer_offsets-{self.partition}"

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def active(self) -> _Segment:
        return self.segments[-1]

    # -- appending -------------------------------------------------------------------------------

    def _roll(self) -> None:
        if self._fh is not None:
            self._fh.close()  # type: ignore[attr-defined]
        seg = _Segment(self.next_offset, self.dir / f"{self.next_offset:020d}.log")
        self.segments.append(seg)
        self._fh = open(seg.path, "wb")  # noqa: SIM115 - held open while the segment is active

    def bump_leader_epoch(self) -> None:
        """A leader election: later batches carry the new partitionLeaderEpoch."""
        self.leader_epoch += 1
        self.epochs.append((self.leader_epoch, self.next_offset))

    def append(self, data: bytes, count: int, max_timestamp: int, now_ms: int) -> int:
        """Append one encoded batch of ``count`` records at ``next_offset``; return its base offset."""
        if self.active.size and self.active.size + len(data) > self.segment_bytes:
            self._roll()
            if self.compacted:
                self.maybe_clean(now_ms)
        base = self.next_offset
        self._fh.write(data)  # type: ignore[attr-defined]
        seg = self.active
        seg.size += len(data)
        if max_timestamp > seg.max_timestamp:
            seg.max_timestamp = max_timestamp
        self.next_offset += count
        return base

    def append_records(
        self,
        records: list[tuple[bytes, bytes | None, int]],
        *,
        now_ms: int,
        compression: int,
        producer_id: int = -1,
        producer_epoch: int = -1,
        transactional: bool = False,
    ) -> int:
        data = build_record_batch(
            records,
            base_offset=self.next_offset,
            compression=compression,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=0 if transactional else -1,  # the coordinator reuses sequence 0 (KAFKA-8335)
            is_transactional=transactional,
            partition_leader_epoch=self.leader_epoch,
        )
        base = self.append(data, len(records), max(r[2] for r in records), now_ms)
        if transactional:
            self._open_txn.setdefault(producer_id, []).append(base)
        return base

    def append_marker(
        self, commit: bool, *, producer_id: int, producer_epoch: int, coordinator_epoch: int, now_ms: int
    ) -> int:
        data = build_control_batch(
            commit,
            base_offset=self.next_offset,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=now_ms,
            partition_leader_epoch=self.leader_epoch,
        )
        batches = self._open_txn.pop(producer_id, [])
        if not commit:
            self._aborted.update(batches)
        return self.append(data, 1, now_ms, now_ms)

    def close(self, now_ms: int) -> None:
        if self.compacted:
            self.maybe_clean(now_ms, force=True)
        if self._fh is not None:
            self._fh.close()  # type: ignore[attr-defined]
            self._fh = None
        for seg in self.segments:
            _write_indexes(seg, self.partition)
        lines = "".join(f"{e} {o}\n" for e, o in self.epochs)
        (self.dir / "leader-epoch-checkpoint").write_text(f"0\n{len(self.epochs)}\n{lines}")

    # -- cleaning --------------------------------------------------------------------------------

    @property
    def first_unstable_offset(self) -> int:
        """The LSO: an open (or hanging) transaction keeps everything from its first offset dirty."""
        return min((b[0] for b in self._open_txn.values() if b), default=self.next_offset)

    def _cleanable(self) -> list[_Segment]:
        """Closed segments wholly below the LSO (``LogCleanerManager.cleanableOffsets``)."""
        limit = min(self.active.base_offset, self.first_unstable_offset)
        out = []
        for seg, nxt in zip(self.segments, self.segments[1:], strict=False):
            if nxt.base_offset > limit:
                break
            out.append(seg)
        return out

    def maybe_clean(self, now_ms: int, *, force: bool = False) -> None:
        segs = self._cleanable()
        if not segs:
            return
        end = self.segments[len(segs)].base_offset
        dirty = sum(s.size for s in segs if s.base_offset >= self.first_dirty_offset)
        total = sum(s.size for s in segs)
        if not dirty or (not force and dirty / total <= MIN_CLEANABLE_RATIO):
            return
        self._clean(segs, end, now_ms)

    def _batches(self, segs: list[_Segment]) -> Iterator[RecordBatch]:
        errors: list[DecodeError] = []
        for seg in segs:
            yield from iter_segment_batches(seg.path, partition=self.partition, errors=errors)
        if errors:
            raise SimulatorError(f"partition {self.partition}: cleaner read errors: {errors[:3]}")

    def _clean(self, segs: list[_Segment], end: int, now_ms: int) -> None:
        self.cleaner.passes += 1
        aborted = self._aborted
        # Pass 1: the offset map, latest offset per key, skipping aborted data (Cleaner.buildOffsetMap).
        latest: dict[bytes, int] = {}
        for b in self._batches(segs):
            if b.is_control or b.base_offset in aborted:
                continue
            for off, _ts, key, _value in b.records():
                if key is not None:
                    latest[key] = off
        # Pass 2: rewrite, grouping input segments up to segment.bytes (Cleaner.groupSegmentsBySize).
        groups: list[list[_Segment]] = []
        for seg in segs:
            if groups and sum(s.size for s in groups[-1]) + seg.size <= self.segment_bytes:
                groups[-1].append(seg)
            else:
                groups.append([seg])
        legacy_horizon = now_ms - DELETE_RETENTION_MS
        new_segments: list[_Segment] = []
        for group in groups:
            out = _Segment(group[0].base_offset, group[0].path)
            tmp = out.path.with_name(out.path.name + ".cleaned")
            with open(tmp, "wb") as fh:
                for b in self._batches(group):
                    self.cleaner.bytes_read += b.size
                    data = self._filter(b, latest, aborted, now_ms, legacy_horizon)
                    if data:
                        fh.write(data)
                        out.size += len(data)
                        out.max_timestamp = max(out.max_timestamp, b.max_timestamp)
            for seg in group:
                seg.path.unlink()
            os.replace(tmp, out.path)
            self.cleaner.bytes_written += out.size
            new_segments.append(out)
        self.segments[: len(segs)] = new_segments
        self.first_dirty_offset = end
        self._aborted = {o for o in aborted if o >= end}

    def _filter(
        self, b: RecordBatch, latest: dict[bytes, int], aborted: set[int], now_ms: int, legacy_horizon: int
    ) -> bytes:
        """The bytes of ``b`` after cleaning: unchanged, rewritten with fewer records, or nothing."""
        stats = self.cleaner
        if b.is_control:
            return b.raw()  # markers stay; dropping them safely needs their data gone first
        if b.base_offset in aborted:
            stats.aborted_batches_removed += 1
            stats.records_removed += b.record_count
            return b""
        horizon = b.delete_horizon_ms
        kept: list[tuple[int, int, bytes, bytes | None]] = []
        has_tombstone = False
        for off, ts, key, value in b.records():
            if key is None or latest.get(key) != off:
                stats.records_removed += 1
                continue
            if value is None:
                if self.delete_horizon:
                    expired = horizon is not None and now_ms >= horizon
                else:
                    expired = ts <= legacy_horizon
                if expired:
                    stats.records_removed += 1
                    stats.tombstones_removed += 1
                    continue
                has_tombstone = True
            kept.append((off, ts, key, value))
        new_horizon = horizon
        if has_tombstone and self.delete_horizon and horizon is None:
            new_horizon = now_ms + DELETE_RETENTION_MS  # the first pass that keeps a tombstone
        if len(kept) == b.record_count and new_horizon == horizon:
            return b.raw()
        # DefaultRecordBatch keeps its offset deltas through cleaning; our builder writes consecutive
        # offsets, so each run of consecutive surviving offsets becomes its own batch.
        out = bytearray()
        run: list[tuple[int, int, bytes, bytes | None]] = []
        for rec in kept:
            if run and rec[0] != run[-1][0] + 1:
                out += self._rebuild(b, run, new_horizon)
                run = []
            run.append(rec)
        if run:
            out += self._rebuild(b, run, new_horizon)
        return bytes(out)

    @staticmethod
    def _rebuild(
        b: RecordBatch, run: list[tuple[int, int, bytes, bytes | None]], horizon: int | None
    ) -> bytes:
        seq = b.base_sequence
        return build_record_batch(
            [(key, value, ts) for _off, ts, key, value in run],
            base_offset=run[0][0],
            compression=b.compression,
            producer_id=b.producer_id,
            producer_epoch=b.producer_epoch,
            base_sequence=seq + (run[0][0] - b.base_offset) if seq >= 0 else -1,
            is_transactional=b.is_transactional,
            partition_leader_epoch=b.partition_leader_epoch,
            delete_horizon_ms=horizon,
            max_timestamp=max(r[1] for r in run),
        )


def _write_indexes(seg: _Segment, partition: int) -> None:
    """Sparse ``.index`` (every ``index.interval.bytes``) and ``.timeindex`` files, as after a clean
    shutdown."""
    index = bytearray()
    tindex = bytearray()
    since = INDEX_INTERVAL_BYTES
    last_ts = -1
    errors: list[DecodeError] = []
    for b in iter_segment_batches(seg.path, partition=partition, errors=errors, verify_crc=False):
        if since >= INDEX_INTERVAL_BYTES:
            index += _INDEX_ENTRY.pack(b.last_offset - seg.base_offset, b.position)
            if b.max_timestamp > last_ts:
                tindex += _TIME_ENTRY.pack(b.max_timestamp, b.last_offset - seg.base_offset)
                last_ts = b.max_timestamp
            since = 0
        since += b.size
    stem = seg.path.with_suffix("")
    Path(f"{stem}.index").write_bytes(bytes(index))
    Path(f"{stem}.timeindex").write_bytes(bytes(tindex))
