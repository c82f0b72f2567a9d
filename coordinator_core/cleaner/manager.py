"""``LogCleanerManager`` arithmetic as pure functions over a segment list.

``cleanableOffsets`` (first dirty offset with its checkpoint reset rules, and the first offset the
cleaner may not pass), ``calculateCleanableBytes``, ``LogToClean`` (clean/cleanable bytes and the dirty
ratio), ``maxCompactionDelay`` and the ``max-dirty-percent`` gauge of ``grabFilthiestCompactedLog``;
:func:`cleaner_view` puts them together for one log (with UnifiedLog's last stable offset) and says what
bounds the cleaner and whether it would pick the log.
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
    "CleanerView",
    "LogToClean",
    "OffsetsToClean",
    "SegmentInfo",
    "SegmentLike",
    "calculate_cleanable_bytes",
    "cleanable_offsets",
    "cleaner_view",
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


@dataclass(frozen=True, slots=True)
class CleanerView:
    """What LogCleanerManager sees of one log: its offsets, what it may clean now and what bounds it."""

    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None  # clamped to [log start, log end]
    last_stable_offset: int
    first_unstable_offset: int | None  # the first offset of the oldest open transaction
    offsets: OffsetsToClean
    to_clean: LogToClean
    #: the log as it would be to clean without the open transactions pinning it
    unpinned: LogToClean
    max_compaction_delay_ms: int

    def uncleanable_reasons(self) -> list[str]:
        """Which bounds stop the cleaner at the first uncleanable offset: an open transaction, the high
        watermark, the active segment, min.compaction.lag.ms; ``nothing_dirty`` when nothing is dirty."""
        otc = self.offsets
        bound_min = min(otc.bounds.values())
        reasons: list[str] = []
        for name, value in otc.bounds.items():
            if value != bound_min:
                continue
            if name != "last_stable_offset":
                reasons.append(name)
            elif self.last_stable_offset == self.first_unstable_offset:
                reasons.append("open_transaction")
            elif self.high_watermark is not None and self.high_watermark < self.log_end_offset:
                reasons.append("high_watermark")
        if (
            otc.first_uncleanable_dirty_offset == otc.first_dirty_offset
            and bound_min < otc.first_dirty_offset
        ):
            reasons.append("nothing_dirty")
        return reasons

    def eligible(self, config: CleanerConfig) -> bool:
        """Whether grabFilthiestCompactedLog would pick the log: compacted, with bytes, and dirty past
        min.cleanable.dirty.ratio or past max.compaction.lag.ms with something cleanable."""
        ltc, delay = self.to_clean, self.max_compaction_delay_ms
        return (
            config.is_compacted
            and ltc.total_bytes > 0
            and (
                ltc.cleanable_ratio > config.min_cleanable_dirty_ratio
                or (delay > 0 and ltc.cleanable_bytes > 0)
            )
        )


def cleaner_view(
    segments: Sequence[SegmentLike],
    *,
    config: CleanerConfig,
    now_ms: int,
    log_start_offset: int,
    log_end_offset: int,
    checkpoint: int | None,
    high_watermark: int | None,
    first_unstable_offset: int | None,
) -> CleanerView:
    """The cleaner's view of a log (UnifiedLog.lastStableOffset, cleanableOffsets, LogToClean,
    maxCompactionDelay), and the same log unpinned by its open transactions."""
    log_end = log_end_offset
    hw = None if high_watermark is None else min(max(high_watermark, log_start_offset), log_end)
    hw_or_leo = log_end if hw is None else hw
    unstable = first_unstable_offset
    # UnifiedLog.lastStableOffset: the first unstable offset when below the high watermark
    lso = unstable if unstable is not None and unstable < hw_or_leo else hw_or_leo

    def offsets(last_stable: int) -> OffsetsToClean:
        return cleanable_offsets(
            segments,
            log_start_offset=log_start_offset,
            log_end_offset=log_end,
            checkpoint=checkpoint,
            last_stable_offset=last_stable,
            min_compaction_lag_ms=config.min_compaction_lag_ms,
            now_ms=now_ms,
        )

    otc = offsets(lso)
    ltc = log_to_clean(segments, otc.first_dirty_offset, otc.first_uncleanable_dirty_offset)
    unpinned = (
        ltc
        if lso == hw_or_leo
        else log_to_clean(segments, otc.first_dirty_offset, offsets(hw_or_leo).first_uncleanable_dirty_offset)
    )
    delay = max_compaction_delay(segments, otc.first_dirty_offset, config.max_compaction_lag_ms, now_ms)
    return CleanerView(log_start_offset, log_end, hw, lso, unstable, otc, ltc, unpinned, delay)


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
