"""The record scan of one partition: what a full ``LogCleaner`` pass would see and drop.

One pass over every batch gives each segment's timestamps (``LogSegment.largestTimestamp``,
``getFirstBatchTimestamp``), the open transactions that hold the last stable offset, and a key table
(last writer wins by offset, as ``OffsetMap`` + ``LogCleaner.shouldRetainRecord`` decide) from which
the reclaimable bytes, dirty keys and expired tombstones follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.cleaner.manager import SegmentInfo
from offsetops.coordinator_core.errors import DecodeError, OffsetsDecodeException
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.schema.control import decode_control_key
from offsetops.coordinator_core.schema.types import SchemaError
from offsetops.coordinator_core.sources.logdir import PartitionDir

__all__ = ["KeyStats", "PartitionScan", "scan_partition"]

# key-table entry slots (a list per key keeps the scan to one dict lookup per record)
_LAST, _SHARE, _EXPIRED, _FIRST_DIRTY, _FIRST = range(5)
# _EXPIRED states of the latest record of a key: a value (or a tombstone the next pass keeps), a tombstone
# the next pass removes, and a v2 tombstone whose batch has no delete horizon yet (KIP-534: the next
# pass keeps it and stamps the horizon, a pass after that horizon removes it).
_KEEP, _REMOVABLE, _NO_HORIZON = 0, 1, 2


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
    segments: list[SegmentInfo] = field(default_factory=list)
    batches: int = 0
    records: int = 0
    control_batches: int = 0
    tombstones: int = 0
    keyless_records: int = 0
    aborted_records: int = 0
    superseded_records: int = 0
    reclaimable_bytes: float = 0.0
    #: base offset of the active segment, and the reclaimable bytes that sit in it (never cleaned)
    active_base: int = 2**63 - 1
    active_reclaimable_bytes: float = 0.0
    open_txns: dict[int, list[Any]] = field(default_factory=dict)
    keys: dict[int, list[Any]] = field(default_factory=dict)
    errors: list[DecodeError] = field(default_factory=list)

    def reclaim(self, offset: int, share: float) -> None:
        """A record a full clean drops (superseded, aborted or keyless)."""
        self.reclaimable_bytes += share
        if offset >= self.active_base:
            self.active_reclaimable_bytes += share

    def apply(self, h: int, offset: int, share: float, expired: int, dirty_from: int) -> None:
        """Last writer wins by offset: whichever of the old and new record is older is superseded."""
        entry = self.keys.get(h)
        if entry is None:
            self.keys[h] = [offset, share, expired, offset if offset >= dirty_from else -1, offset]
            return
        self.superseded_records += 1
        if offset > entry[_LAST]:
            self.reclaim(entry[_LAST], entry[_SHARE])
            entry[_LAST], entry[_SHARE], entry[_EXPIRED] = offset, share, expired
        else:
            self.reclaim(offset, share)
        if offset >= dirty_from and (entry[_FIRST_DIRTY] < 0 or offset < entry[_FIRST_DIRTY]):
            entry[_FIRST_DIRTY] = offset
        entry[_FIRST] = min(entry[_FIRST], offset)

    def key_stats(
        self, first_dirty_offset: int, first_uncleanable_segment: int, *, whole_log: bool
    ) -> KeyStats:
        """The key table against the cleanable range [first dirty, first uncleanable segment).

        ``whole_log`` counts a key as dirty by its first offset anywhere in the log rather than in the
        dirty section: after the ``above_log_end`` checkpoint reset the broker re-cleans from the start.
        """
        stats = KeyStats()
        for entry in self.keys.values():
            first = entry[_FIRST] if whole_log else entry[_FIRST_DIRTY]
            if first >= 0 and first_dirty_offset <= first < first_uncleanable_segment:
                stats.dirty_keys += 1
            state = entry[_EXPIRED]
            if state == _REMOVABLE:
                stats.expired_tombstones += 1
                if entry[_LAST] < first_uncleanable_segment:
                    stats.expired_tombstones_cleanable += 1
            elif state == _NO_HORIZON:
                stats.tombstones_without_horizon += 1
                if entry[_LAST] < first_uncleanable_segment:
                    stats.tombstones_without_horizon_cleanable += 1
        return stats


def scan_partition(
    pdir: PartitionDir, *, dirty_from: int, delete_retention_ms: int, now_ms: int, verify_crc: bool
) -> PartitionScan:
    """One pass over every batch: segment timestamps, transactions, and the key table."""
    scan = PartitionScan()
    if pdir.segments:
        scan.active_base = pdir.segments[-1].base_offset
    errors = scan.errors
    for seg in pdir.segments:
        first_ts, largest, next_offset, n = -1, -1, None, 0
        for batch in iter_segment_batches(
            seg.path, partition=pdir.partition, errors=errors, verify_crc=verify_crc
        ):
            if n == 0:
                first_ts = batch.max_timestamp
            n += 1
            largest = max(largest, batch.max_timestamp)
            next_offset = batch.next_offset
            scan.batches += 1
            try:
                records = batch.records()
            except OffsetsDecodeException as exc:
                errors.append(exc.error)
                continue
            pid = batch.producer_id
            if batch.is_control:
                scan.control_batches += 1
                _end_transaction(
                    scan, batch.producer_id, records, dirty_from, errors, pdir, batch.base_offset
                )
                continue
            share = batch.size / max(len(records), 1)
            horizon = batch.delete_horizon_ms
            pending: list[tuple[int, int, float, int]] | None = None
            if batch.is_transactional and pid >= 0:
                txn = scan.open_txns.get(pid)
                if txn is None:
                    ts = batch.max_timestamp if batch.max_timestamp >= 0 else batch.base_timestamp
                    txn = [batch.base_offset, ts if ts >= 0 else seg.mtime_ms, batch.producer_epoch, []]
                    scan.open_txns[pid] = txn
                pending = txn[3]
            for offset, ts, key, value in records:
                scan.records += 1
                if key is None:
                    # the cleaner drops records without a key (counted as invalid messages)
                    scan.keyless_records += 1
                    scan.reclaim(offset, share)
                    continue
                expired = _KEEP
                if value is None:
                    scan.tombstones += 1
                    if horizon is not None:
                        # LogCleaner.shouldRetainRecord: kept while currentTime < deleteHorizonMs
                        expired = _REMOVABLE if now_ms >= horizon else _KEEP
                    elif batch.magic >= 2 and offset >= dirty_from:
                        expired = _NO_HORIZON
                    else:
                        # Magic 0/1, or a v2 tombstone in the clean section that a pass left without a
                        # horizon (so the broker that cleaned it predates KIP-534, 3.1): the pre-KIP-534
                        # rule keys on the last clean segment's mtime; the record timestamp stands in.
                        stamp = ts if ts >= 0 else seg.mtime_ms
                        expired = _REMOVABLE if now_ms - stamp > delete_retention_ms else _KEEP
                if pending is not None:
                    pending.append((hash(key), offset, share, expired))
                else:
                    scan.apply(hash(key), offset, share, expired, dirty_from)
        scan.segments.append(
            SegmentInfo(
                base_offset=seg.base_offset,
                size=seg.size,
                largest_timestamp=largest if largest >= 0 else seg.mtime_ms,
                first_batch_timestamp=first_ts,
                mtime_ms=seg.mtime_ms,
                next_offset=next_offset,
            )
        )
    return scan


def _end_transaction(
    scan: PartitionScan,
    producer_id: int,
    records: list[tuple[int, int, bytes | None, bytes | None]],
    dirty_from: int,
    errors: list[DecodeError],
    pdir: PartitionDir,
    base_offset: int,
) -> None:
    for _offset, _ts, key, _value in records:
        if key is None:
            continue
        try:
            ctl = decode_control_key(key)
        except SchemaError as exc:
            errors.append(DecodeError("corrupt_key", str(exc), None, pdir.partition, None, base_offset))
            continue
        if not (ctl.is_commit or ctl.is_abort):
            continue
        txn = scan.open_txns.pop(producer_id, None)
        if txn is None:
            continue
        if ctl.is_abort:
            # aborted transactional data is removed by the cleaner whatever its key
            for _h, off, share, _exp in txn[3]:
                scan.aborted_records += 1
                scan.reclaim(off, share)
        else:
            for h, off, share, expired in txn[3]:
                scan.apply(h, off, share, expired, dirty_from)
