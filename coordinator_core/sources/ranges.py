"""Fetch ranges: a partition's log cut into offset stretches that separate tasks read and fold.

Pure (no Kafka client), so the planner's rules are checked without a broker; ``sources/live.py``
fetches them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol, TypeVar

__all__ = [
    "DEFAULT_EXECUTORS_MIN_OFFSETS",
    "DEFAULT_RANGE_OFFSETS",
    "LIVE_RELOADS",
    "FetchRange",
    "cut_range",
    "fetch_on_executors",
    "owned",
]

#: Offsets per fetch range of the distributed live reload. ``__consumer_offsets`` records are about
#: 100 to 300 bytes, so a range is at most a few hundred MB of log, and usually far less: compaction
#: leaves gaps, and a range only fetches the batches that remain.
DEFAULT_RANGE_OFFSETS = 2_000_000

#: Where a live reload fetches: the driver alone, the Spark executors, or (``auto``) the executors
#: once the run is large and Spark is a cluster.
LIVE_RELOADS = ("auto", "driver", "executors")
#: ``auto`` fetches on the executors from this many offsets in the run (and a non-local master) on.
DEFAULT_EXECUTORS_MIN_OFFSETS = 5_000_000


@dataclass(frozen=True, slots=True)
class FetchRange:
    """One stretch ``[start, end)`` of a partition's log, read by one task of the distributed live reload.

    A range owns the batches whose *base* offset lies in it, so a batch straddling a cut is read by
    exactly one range (the one holding its first record) and none is lost or read twice. The first
    range of a partition (``first``) starts at the log start offset and also owns the batch holding
    it, whose base can lie below the log start after ``DeleteRecords`` (the single-process read keeps
    that batch too, as ``GroupMetadataManager.doLoadGroupsAndOffsets`` reads from the log start).
    Folds of consecutive ranges merge with ``PartitionFold.merge`` like folds of consecutive segments.
    """

    partition: int
    start: int
    end: int
    first: bool = True

    def owns(self, base_offset: int, last_offset: int) -> bool:
        """Whether the batch ``[base_offset, last_offset]`` is this range's to fold."""
        if base_offset >= self.end:
            return False
        return last_offset >= self.start if self.first else base_offset >= self.start

    @property
    def span(self) -> int:
        return max(0, self.end - self.start)


def cut_range(partition: int, start: int, end: int, max_offsets: int) -> list[FetchRange]:
    """``[start, end)`` of one partition cut into ranges of at most ``max_offsets`` offsets.

    An empty partition (``start == end``) is one empty range, so it still yields its (empty) cache.
    """
    if max_offsets < 1:
        raise ValueError(f"max_offsets must be at least 1, got {max_offsets}")
    if end <= start:
        return [FetchRange(partition, start, start, True)]
    cuts = [*range(start, end, max_offsets), end]
    return [FetchRange(partition, a, b, i == 0) for i, (a, b) in enumerate(pairwise(cuts))]


class _Batch(Protocol):
    base_offset: int
    last_offset: int


B = TypeVar("B", bound=_Batch)


def owned(rng: FetchRange, batches: Iterable[B]) -> Iterator[B]:
    """The batches of ``batches`` that ``rng`` owns, in their order."""
    for batch in batches:
        if rng.owns(batch.base_offset, batch.last_offset):
            yield batch


def fetch_on_executors(
    mode: str, master: str, ranges: Sequence[FetchRange], min_offsets: int = DEFAULT_EXECUTORS_MIN_OFFSETS
) -> bool:
    """Whether a live reload of ``ranges`` runs on the Spark executors: always for ``executors``, never
    for ``driver``; for ``auto`` on a non-local master once the ranges span ``min_offsets`` offsets
    (below that, one process fetches faster than Spark schedules tasks)."""
    if mode not in LIVE_RELOADS:
        raise ValueError(f"live reload must be one of {LIVE_RELOADS}, got {mode!r}")
    if mode != "auto":
        return mode == "executors"
    return not master.startswith("local") and sum(r.span for r in ranges) >= min_offsets
