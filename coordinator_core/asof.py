"""As-of reload: the coordinator cache as it stood at a past log offset or time, for incident review.

The log is replayed exactly as ``doLoadGroupsAndOffsets`` would, but stops at the cut: every record
before ``until_offset`` (exclusive, like a log end offset) and stamped at or before ``until_ms``. The
coordinator appends with the broker's clock, so record timestamps rise with offsets and the first
record past ``until_ms`` ends the replay. Transactional offsets whose marker lies past the cut stay
pending, as they were at that moment. Compaction may already have removed records the cache held then;
the view is only as complete as the log still is (``offsetops audit`` shows what was cleaned).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.records.batch import RecordBatch


@dataclass(frozen=True, slots=True)
class Cut:
    """Where an as-of replay stops; both None means the whole log."""

    until_offset: int | None = None
    until_ms: int | None = None

    def keeps(self, offset: int, timestamp: int) -> bool:
        if self.until_offset is not None and offset >= self.until_offset:
            return False
        return self.until_ms is None or timestamp <= self.until_ms

    def to_json(self) -> dict[str, Any]:
        return {"until_offset": self.until_offset, "until_ms": self.until_ms}


class _TruncatedBatch:
    """A batch whose records stop at the cut: the loader sees only what existed then."""

    __slots__ = ("_batch", "_records", "last_offset")

    def __init__(self, batch: RecordBatch, records: list[tuple[int, int, bytes | None, bytes | None]]):
        self._batch = batch
        self._records = records
        self.last_offset = records[-1][0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batch, name)

    def iter_records(self) -> Iterator[tuple[int, int, bytes | None, bytes | None]]:
        return iter(self._records)

    def record_chunks(self) -> Iterator[list[tuple[int, int, bytes | None, bytes | None]]]:
        return iter((self._records,))


def cut_batches(batches: Iterable[RecordBatch], cut: Cut) -> Iterator[Any]:
    """Yield the batches (or the leading part of one) that lie before ``cut``, then stop."""
    for batch in batches:
        if cut.keeps(batch.last_offset, batch.max_timestamp):
            yield batch  # max_timestamp bounds every record of the batch
            continue
        if cut.until_offset is not None and batch.base_offset >= cut.until_offset:
            return
        kept = []
        for rec in batch.iter_records():
            if not cut.keeps(rec[0], rec[1]):
                break
            kept.append(rec)
        if kept:
            yield _TruncatedBatch(batch, kept)
        return


def load_as_of(
    batches_for: Any,
    *,
    partition: int | None,
    cut: Cut,
    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
    semantics: str = "java",
) -> CoordinatorCache:
    """Fold ``batches_for(errors)`` (a callable giving the partition's batches in log order, appending
    read errors to ``errors``) up to ``cut`` into a :class:`CoordinatorCache`."""
    start = time.perf_counter()
    fold = PartitionFold(partition=partition, semantics=semantics)
    fold.add_batches(cut_batches(batches_for(fold.stats.errors), cut))
    cache = fold.finish(num_partitions=num_partitions)
    cache.stats.elapsed_ms = (time.perf_counter() - start) * 1000
    return cache
