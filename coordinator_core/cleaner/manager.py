"""``LogCleanerManager`` arithmetic as pure functions over a segment list.

``cleanableOffsets`` (first dirty offset with its checkpoint reset rules, and the first offset the
cleaner may not pass), ``calculateCleanableBytes``, ``LogToClean`` (clean/cleanable bytes and the dirty
ratio), ``maxCompactionDelay`` and the ``max-dirty-percent`` gauge of ``grabFilthiestCompactedLog``.
Nothing here reads a file: :mod:`offsetops.coordinator_core.cleaner.scan` supplies the segments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from offsetops.coordinator_core.cleaner.config import CleanerConfig

if TYPE_CHECKING:
    from offsetops.coordinator_core.cleaner.model import PartitionAudit

__all__ = [
    "LogToClean",
    "OffsetsToClean",
    "SegmentInfo",
    "SegmentLike",
    "calculate_cleanable_bytes",
    "cleanable_offsets",
    "log_segments",
    "log_to_clean",
    "max_compaction_delay",
    "max_dirty_ratio",
    "non_active_segments_from",
]


class SegmentLike(Protocol):
    """What the arithmetic reads of a segment (read-only, as ``SegmentInfo`` is frozen)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def largest_timestamp(self) -> int: ...
    @property
    def first_batch_timestamp(self) -> int: ...


S = TypeVar("S", bound=SegmentLike)


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What the cleaner knows of one segment (``LogSegment``), filled in by a scan.

    ``largest_timestamp`` is the largest batch max timestamp, or the file's last-modified time when no
    batch has one (``LogSegment.largestTimestamp``). ``first_batch_timestamp`` is the max timestamp of
    the first batch, -1 when there is none (``LogSegment.getFirstBatchTimestamp``).
    """

    base_offset: int
    size: int
    largest_timestamp: int
    first_batch_timestamp: int = -1
    mtime_ms: int = 0
    next_offset: int | None = None


def _floor_index(segments: Sequence[SegmentLike], offset: int) -> int | None:
    found = None
    for i, s in enumerate(segments):
        if s.base_offset <= offset:
            found = i
        else:
            break
    return found


def log_segments(segments: Sequence[S], start: int, end: int) -> list[S]:
    """``LocalLog.segments(from, to)``: from the segment holding ``start`` (or the first) up to
    base offsets below ``end``."""
    if start == end:
        return []
    if end < start:
        raise ValueError(f"invalid segment range [{start}, {end})")
    i = _floor_index(segments, start)
    return [s for s in segments[i or 0 :] if s.base_offset < end]


def non_active_segments_from(segments: Sequence[SegmentLike], start: int) -> list[SegmentLike]:
    """``UnifiedLog.nonActiveLogSegmentsFrom``: every segment from ``start`` up to the active one."""
    active = segments[-1]
    if start > active.base_offset:
        return []
    return log_segments(segments, start, active.base_offset)


@dataclass(frozen=True, slots=True)
class OffsetsToClean:
    """``OffsetsToClean`` plus the bounds that produced ``first_uncleanable_dirty_offset``."""

    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    force_update_checkpoint: bool
    #: None, "below_log_start" or "above_log_end" (the two reset rules of cleanableOffsets)
    checkpoint_reset: str | None
    #: "last_stable_offset" / "active_segment" / "min_compaction_lag" -> offset
    bounds: dict[str, int]


def cleanable_offsets(
    segments: Sequence[SegmentLike],
    *,
    log_start_offset: int,
    log_end_offset: int,
    checkpoint: int | None,
    last_stable_offset: int,
    min_compaction_lag_ms: int,
    now_ms: int,
) -> OffsetsToClean:
    """``LogCleanerManager.cleanableOffsets``: the first dirty offset (checkpoint, reset to the log start
    when below it or beyond the log end) and the first offset the cleaner may not pass."""
    candidate = checkpoint if checkpoint is not None else log_start_offset
    if candidate < log_start_offset:
        first_dirty, reset = log_start_offset, "below_log_start"
    elif candidate > log_end_offset:
        first_dirty, reset = log_start_offset, "above_log_end"
    else:
        first_dirty, reset = candidate, None
    bounds = {"last_stable_offset": last_stable_offset, "active_segment": segments[-1].base_offset}
    lag = max(min_compaction_lag_ms, 0)
    if lag > 0:
        for s in non_active_segments_from(segments, first_dirty):
            if s.largest_timestamp > now_ms - lag:
                bounds["min_compaction_lag"] = s.base_offset
                break
    uncleanable = min(bounds.values())
    return OffsetsToClean(first_dirty, max(first_dirty, uncleanable), reset is not None, reset, bounds)


def calculate_cleanable_bytes(
    segments: Sequence[SegmentLike], first_dirty_offset: int, uncleanable_offset: int
) -> tuple[int, int]:
    """``LogCleanerManager.calculateCleanableBytes``: (base of the first uncleanable segment, cleanable
    bytes), where that segment is the one holding ``uncleanable_offset`` or else the active one."""
    later = non_active_segments_from(segments, uncleanable_offset)
    first_uncleanable = (later[0] if later else segments[-1]).base_offset
    span = log_segments(segments, min(first_dirty_offset, first_uncleanable), first_uncleanable)
    return first_uncleanable, sum(s.size for s in span)


@dataclass(frozen=True, slots=True)
class LogToClean:
    """``LogToClean``: clean bytes (segments below the first dirty offset), cleanable bytes, ratio."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def log_to_clean(
    segments: Sequence[SegmentLike], first_dirty_offset: int, uncleanable_offset: int
) -> LogToClean:
    clean = sum(s.size for s in log_segments(segments, -1, first_dirty_offset))
    first_uncleanable, cleanable = calculate_cleanable_bytes(segments, first_dirty_offset, uncleanable_offset)
    return LogToClean(first_dirty_offset, first_uncleanable, clean, cleanable)


def max_compaction_delay(
    segments: Sequence[SegmentLike], first_dirty_offset: int, max_compaction_lag_ms: int, now_ms: int
) -> int:
    """``LogCleanerManager.maxCompactionDelay``: how far past ``max.compaction.lag.ms`` the earliest
    first-batch timestamp of a dirty non-active segment is (0 = no need to compact now)."""
    stamps = [
        s.first_batch_timestamp
        for s in non_active_segments_from(segments, first_dirty_offset)
        if s.first_batch_timestamp > 0
    ]
    earliest = min(stamps) if stamps else 2**63 - 1
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


def max_dirty_ratio(partitions: Sequence[PartitionAudit], config: CleanerConfig) -> float:
    """The ``max-dirty-percent`` gauge / 100 for this topic: ``grabFilthiestCompactedLog`` takes the
    largest cleanable ratio over compacted logs that are neither marked uncleanable nor being cleaned,
    and have some bytes."""
    if not config.is_compacted:
        return 0.0
    return max(
        (
            p.dirty_ratio
            for p in partitions
            if p.marked_uncleanable is None
            and not p.cleaning_in_progress
            and p.clean_bytes + p.cleanable_bytes > 0
        ),
        default=0.0,
    )
