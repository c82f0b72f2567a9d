"""Resume the load of a partition dir from its saved point, or say why it reads from the start.

The checks, in order (the first that fails is the ``resume_reason``): the fold's settings, the source
(the partition dir's real path), the log start (``log-start-offset-checkpoint`` and the first segment),
the leader epochs that began below the position (``leader-epoch-checkpoint``: a new epoch starting
there means the log may have been truncated, as a follower's ``OffsetsForLeaderEpoch`` check finds).
Then the position: unchanged segments before it and the same bytes just before it (CRC-32), or else a
log the cleaner compacted. The cleaner (``LogCleaner``) keeps every batch's offsets and never touches
the active segment, so the position is found again by offset, walking batch headers only, provided the
cleaner checkpoint moved on and the batch boundaries around the position are where they were.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
import zlib
from dataclasses import dataclass, replace
from typing import Any, Protocol

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.loader import PartitionFold, SegmentsRead, fold_segments, load_partition_dir
from offsetops.coordinator_core.resume.point import FoldSettings, Refusal, ResumePoint
from offsetops.coordinator_core.resume.saved import note, resume_from, save_point
from offsetops.coordinator_core.resume.store import StateStore
from offsetops.coordinator_core.sources.logdir import (
    CLEANER_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_CHECKPOINT,
    LogDirError,
    PartitionDir,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
)
from offsetops.coordinator_core.untrusted import open_regular_file

__all__ = [
    "LogState",
    "Plan",
    "ResumeRider",
    "load_partition_dir_resumable",
    "log_state",
    "plan_resume",
    "stop_in",
]

TAIL_BYTES = 4096  # how many bytes before the position its CRC covers
_HEADER = struct.Struct(">qiib")  # base offset, length, partition leader epoch, magic
_LAST_DELTA = struct.Struct(">i")  # lastOffsetDelta, at byte 23 of a magic 2 batch
_V2_MIN_SIZE = 49  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD - LOG_OVERHEAD


@dataclass(frozen=True, slots=True)
class LogState:
    """What the partition dir says now beyond its segments (None: the checkpoint cannot be read)."""

    source: str
    leader_epochs: tuple[tuple[int, int], ...] | None
    log_start_offset: int | None
    cleaner_offset: int | None


class ResumeRider(Protocol):
    """A second reader of what a resumed load reads (the cleaner's scan), with state of its own kept
    beside the fold's: told where the fold goes on from, handed each segment's bytes
    (:class:`~offsetops.coordinator_core.loader.SegmentRider`), and told the point saved."""

    def begin(self, plan: Plan | None, saved: ResumePoint | None, refusal: Refusal | None) -> None:
        """The fold goes on from ``plan`` (None: it reads alone, the state locked) out of the ``saved``
        point, or reads from the start for ``refusal``."""

    def read(self, seg: Any, start: int, mapping: mmap.mmap, walker: Any) -> None: ...

    def done(self, seg: Any, start: int, size: int | None) -> None: ...

    def saved(self, point: ResumePoint | None, bytes_read: int) -> None:
        """The fold's next point (None: not saved) after reading ``bytes_read`` bytes."""


@dataclass(frozen=True, slots=True)
class Plan:
    """Where a resumed read goes on: segment ``index`` of the dir at byte ``start``; ``compacted``: the
    log before the position was rewritten by the cleaner since the state was saved."""

    index: int
    start: int
    compacted: bool = False
    next_offset: int = 0  # the first offset the resumed read folds


def log_state(pdir: PartitionDir) -> LogState:
    """The partition dir's identity and checkpoints, as read now."""
    try:
        epochs: tuple[tuple[int, int], ...] | None = read_leader_epoch_checkpoint(
            pdir.path / LEADER_EPOCH_CHECKPOINT
        )
    except LogDirError:
        epochs = None
    return LogState(
        os.path.realpath(pdir.path),
        epochs,
        _checkpoint(pdir, LOG_START_CHECKPOINT),
        _checkpoint(pdir, CLEANER_CHECKPOINT),
    )


def _checkpoint(pdir: PartitionDir, name: str) -> int | None:
    try:
        return read_offset_checkpoint(pdir.path.parent / name).get((pdir.topic, pdir.partition))
    except LogDirError:
        return None


def tail_crc(path: Any, position: int, length: int) -> int | None:
    """CRC-32 of the ``length`` bytes of ``path`` before ``position`` (None: they cannot be read)."""
    try:
        with open_regular_file(path, kind="segment", follow_symlinks=True) as fh:
            data = os.pread(fh.fileno(), length, position - length)
    except OSError:
        return None
    return zlib.crc32(data) if len(data) == length else None


def plan_resume(
    point: ResumePoint, pdir: PartitionDir, now: LogState, settings: FoldSettings
) -> Plan | Refusal:
    """Where to go on from ``point`` in ``pdir`` as it is ``now``, or why that cannot be proven safe."""
    if point.settings != settings:
        return Refusal("settings_changed", f"state saved with {point.settings}, this run uses {settings}")
    if (point.source, point.topic, point.partition) != (now.source, pdir.topic, pdir.partition):
        return Refusal("source_changed", f"state saved for {point.source}, this run reads {now.source}")
    if point.last_offset is None or point.segment_base is None:
        return Plan(0, 0)  # nothing was folded: reading everything is resuming
    refusal = _check_log_start(point, pdir, now) or _check_epochs(point, now)
    if refusal is not None:
        return refusal
    current = [(s.base_offset, s.size) for s in pdir.segments]
    k = len(point.segments) - 1
    same_before = current[:k] == list(point.segments[:k])
    if same_before and _same_tail(point, pdir, k):
        return Plan(k, point.position, next_offset=point.next_offset)
    return _relocate(point, pdir, now, compacted=not same_before)


def _check_log_start(point: ResumePoint, pdir: PartitionDir, now: LogState) -> Refusal | None:
    if not pdir.segments:
        return Refusal("truncated", "the partition has no segments now")
    first, was = pdir.segments[0].base_offset, point.segments[0][0]
    if first > was:
        return Refusal("log_start_moved", f"the first segment is now at offset {first}, was {was}")
    if first < was:
        return Refusal(
            "unverifiable", f"a segment at offset {first} appeared before the first one read ({was})"
        )
    moved, was_at = now.log_start_offset, point.log_start_offset
    if moved is not None and was_at is not None and moved > was_at:
        return Refusal(
            "log_start_moved", f"log start offset {now.log_start_offset}, was {point.log_start_offset}"
        )
    return None


def _check_epochs(point: ResumePoint, now: LogState) -> Refusal | None:
    if now.leader_epochs is None:
        return Refusal("unverifiable", f"{LEADER_EPOCH_CHECKPOINT} cannot be read")
    before = [e for e in now.leader_epochs if e[1] < point.next_offset]
    was = [e for e in point.leader_epochs if e[1] < point.next_offset]
    if before != was:
        return Refusal(
            "leader_epoch_changed",
            f"leader epochs starting below offset {point.next_offset} are now {before}, were {was}",
        )
    return None


def _same_tail(point: ResumePoint, pdir: PartitionDir, k: int) -> bool:
    if k >= len(pdir.segments):
        return False
    seg = pdir.segments[k]
    if seg.base_offset != point.segment_base or seg.size < point.position:
        return False
    return tail_crc(seg.path, point.position, point.tail_len) == point.tail_crc


def _relocate(point: ResumePoint, pdir: PartitionDir, now: LogState, *, compacted: bool) -> Plan | Refusal:
    """The position found again by offset in a log the cleaner rewrote (see the module docstring)."""
    last = point.last_offset or 0
    index = max((i for i, s in enumerate(pdir.segments) if s.base_offset <= last), default=None)
    if index is None:
        return Refusal("truncated", f"no segment holds offset {last} any more")
    seg = pdir.segments[index]
    active = index == len(pdir.segments) - 1
    if active and not compacted:
        return Refusal("truncated", f"the bytes before byte {point.position} of {seg.path} changed")
    cleaned, was_cleaned = now.cleaner_offset, point.cleaner_offset
    if cleaned is not None and was_cleaned is not None and cleaned <= was_cleaned:
        return Refusal(
            "truncated", f"the log before the position changed but the cleaner checkpoint did not move "
            f"({now.cleaner_offset})",
        )  # fmt: skip
    found = _find_after(seg.path, last)
    if isinstance(found, Refusal):
        return found
    position, after = found
    if active:
        # the cleaner never touches the active segment: the position and the bytes before it are as read
        if (seg.base_offset, position) != (point.segment_base, point.position) or not _same_tail(
            point, pdir, index
        ):
            return Refusal("truncated", f"{seg.path} no longer holds the batches read up to offset {last}")
        return Plan(index, position, compacted=True, next_offset=point.next_offset)
    if not after:
        return Plan(index + 1, 0, compacted=True, next_offset=point.next_offset)
    return Plan(index, position, compacted=True, next_offset=point.next_offset)


def _find_after(path: Any, last: int) -> tuple[int, bool] | Refusal:
    """In the segment at ``path``: where the batches after offset ``last`` begin (the end of the last
    batch when there is none) and whether there is one; a Refusal when a batch straddles ``last``."""
    try:
        with open_regular_file(path, kind="segment", follow_symlinks=True) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return 0, False
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return _walk_headers(mm, size, last, str(path))
    except (OSError, ValueError) as exc:
        return Refusal("unverifiable", f"{path}: cannot be read: {exc}")


def _walk_headers(mm: mmap.mmap, size: int, last: int, file: str) -> tuple[int, bool] | Refusal:
    pos = 0
    while pos + 27 <= size:
        base, length, _epoch, magic = _HEADER.unpack_from(mm, pos)
        if base == 0 and length == 0:
            break  # a zero-filled tail (log.preallocate)
        if magic != 2 or length < _V2_MIN_SIZE:
            return Refusal("unverifiable", f"{file}: no well-formed batch at byte {pos}")
        if pos + 12 + length > size:
            break  # a batch being appended
        if base > last:
            return pos, True
        if base + _LAST_DELTA.unpack_from(mm, pos + 23)[0] > last:
            return Refusal("truncated", f"{file}: the batch at byte {pos} spans offset {last}")
        pos += 12 + length
    return pos, False


# -- the load -----------------------------------------------------------------------------------------


def load_partition_dir_resumable(
    pdir: PartitionDir,
    store: StateStore,
    *,
    num_partitions: int,
    semantics: str = "java",
    verify_crc: bool = True,
    max_batch_bytes: int,
    rider: ResumeRider | None = None,
) -> CoordinatorCache:
    """``load_partition_dir`` that goes on from the partition's saved point when it still holds, and
    saves the next one; ``stats.resumed`` / ``resume_reason`` / ``bytes_read`` say what happened.
    ``rider`` reads the same bytes beside the fold, from the same point (:class:`ResumeRider`)."""
    start = time.perf_counter()
    settings = FoldSettings(semantics, num_partitions, max_batch_bytes, verify_crc)
    with store.lock(pdir.topic, pdir.partition) as held:
        if not held:
            cache = load_partition_dir(
                pdir, num_partitions=num_partitions, semantics=semantics, verify_crc=verify_crc,
                max_batch_bytes=max_batch_bytes,
            )  # fmt: skip
            locked = Refusal("state_locked", f"{store.path(pdir.topic, pdir.partition)} is locked")
            note(cache, locked)
            if rider is not None:
                rider.begin(None, None, locked)
            return cache
        now = log_state(pdir)
        resumed = resume_from(
            store, pdir.topic, pdir.partition, semantics=semantics, anomalies=pdir.anomalies,
            plan=lambda point: plan_resume(point, pdir, now, settings),
            maybe_compacted=lambda plan: plan.compacted,
        )  # fmt: skip
        fold, plan, saved = (
            resumed if isinstance(resumed, tuple) else (_fresh_fold(pdir, semantics), Plan(0, 0), None)
        )
        if (plan.index, plan.start) == (0, 0):
            fold = _fresh_fold(pdir, semantics)  # going on from the very start keeps nothing saved
        if rider is not None:
            rider.begin(plan, saved, None if isinstance(resumed, tuple) else resumed)
        read = fold_segments(
            fold,
            pdir,
            first=plan.index,
            start=plan.start,
            verify_crc=verify_crc,
            max_batch_bytes=max_batch_bytes,
            rider=rider,
        )
        point, state_error = _save(store, fold, pdir, read, plan, now, settings, saved)
        if rider is not None:
            rider.saved(point if state_error is None else None, read.bytes_read)
        memo = store.survivors(pdir.topic, pdir.partition)
        cache = (
            fold.finish(num_partitions=num_partitions)
            if memo is None
            else fold.finish_reusing(memo, num_partitions=num_partitions)
        )
    cache.stats.bytes_read = read.bytes_read
    cache.stats.state_error = state_error
    note(cache, None if isinstance(resumed, tuple) else resumed, _where(plan))
    cache.stats.elapsed_ms = (time.perf_counter() - start) * 1000
    return cache


def _where(plan: Plan) -> str:
    how = ", found again by offset after compaction" if plan.compacted else ""
    return f"resumed at offset {plan.next_offset} (byte {plan.start} of segment {plan.index}{how})"


def _fresh_fold(pdir: PartitionDir, semantics: str) -> PartitionFold:
    fold = PartitionFold(partition=pdir.partition, semantics=semantics)
    fold.stats.errors.extend(pdir.anomalies)
    return fold


def _save(
    store: StateStore,
    fold: PartitionFold,
    pdir: PartitionDir,
    read: SegmentsRead,
    plan: Plan,
    now: LogState,
    settings: FoldSettings,
    saved: ResumePoint | None,
) -> tuple[ResumePoint | None, str | None]:
    """Save the point the fold reached (before it is materialized; not again when it is the ``saved``
    one: nothing was read); the point, and why it was not saved (None once saved)."""
    if any(size is None for size in read.sizes):
        return None, "a segment could not be read, so the state was not saved (the next run reads it again)"
    sizes = [s.size for s in pdir.segments[: plan.index]] + [int(s or 0) for s in read.sizes]
    segments = [(s.base_offset, size) for s, size in zip(pdir.segments, sizes, strict=True)]
    position, kept = _stop(fold, pdir, segments)
    point = ResumePoint(
        source=now.source,
        topic=pdir.topic,
        partition=pdir.partition,
        settings=settings,
        next_offset=(fold.stats.last_offset + 1) if fold.stats.last_offset is not None else 0,
        last_offset=fold.stats.last_offset,
        segment_base=segments[-1][0] if segments else None,
        position=position,
        segments=(*segments[:-1], (segments[-1][0], position)) if segments else (),
        tail_len=min(position, TAIL_BYTES),
        leader_epochs=now.leader_epochs or (),
        log_start_offset=now.log_start_offset,
        cleaner_offset=now.cleaner_offset,
    )
    if segments:
        crc = tail_crc(pdir.segments[-1].path, position, point.tail_len)
        if crc is None:
            return None, f"{pdir.segments[-1].path}: the bytes before byte {position} cannot be read again"
        point = replace(point, tail_crc=crc)
    return point, save_point(store, fold, point, kept, unchanged=point == saved and read.bytes_read == 0)


def _stop(
    fold: PartitionFold, pdir: PartitionDir, segments: list[tuple[int, int]]
) -> tuple[int, list[DecodeError]]:
    """Where the read of the last segment stopped for good (before a partial batch or a zero tail at its
    end, which the next run reads again) and the errors to keep (not the listing's, none after that)."""
    errors = list(fold.stats.errors)[len(pdir.anomalies) :]
    if not segments:
        return 0, errors
    return stop_in(errors, str(pdir.segments[-1].path), segments[-1][1])


def stop_in(errors: list[DecodeError], file: str, size: int) -> tuple[int, list[DecodeError]]:
    """Where a read of ``file`` (``size`` bytes walked) stopped for good, given the ``errors`` it
    reported, and the errors to keep (none at or after that position)."""
    tails = [
        e.position for e in errors
        if e.file == file and e.position is not None and e.position + (e.skipped_bytes or 0) >= size
    ]  # fmt: skip
    position = min(tails, default=size)
    return position, [e for e in errors if not _at_or_after(e, file, position)]


def _at_or_after(error: DecodeError, file: str, position: int) -> bool:
    return error.file == file and error.position is not None and error.position >= position
