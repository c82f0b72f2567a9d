"""Resume the load of a partition read from a live cluster: fetch from the saved next offset on.

The checks (the first that fails is the ``resume_reason``): the fold's settings; the source (the
cluster id from Metadata, the topic and partition); the log start (ListOffsets earliest) not past the
one saved; the high watermark (ListOffsets latest, READ_UNCOMMITTED) not below the saved next offset;
the partition's leader epoch (Metadata v7+) unchanged, since a new leader may have truncated the log
below the position. A cluster hides its segments, so compaction since the save cannot be seen: Java's
groups created only by commits that no longer survive always force a fresh read here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.resume.point import FoldSettings, Refusal, ResumePoint
from offsetops.coordinator_core.resume.saved import note, resume_from, save_point
from offsetops.coordinator_core.resume.store import StateStore
from offsetops.coordinator_core.sources.live import LiveSource, fold_range, load_live_partition
from offsetops.coordinator_core.sources.ranges import FetchRange

__all__ = ["LiveLog", "load_live_partition_resumable", "plan_live_resume"]


@dataclass(frozen=True, slots=True)
class LiveLog:
    """What the cluster says of one partition now: its identity, log start, high watermark, epoch."""

    source: str
    start: int
    end: int
    epoch: int  # -1: the cluster does not say (Metadata before v7)


def live_log(live: LiveSource, partition: int) -> LiveLog:
    cluster_id, epoch = live.leader_state(partition)
    start = live.start_offsets([partition])[partition]
    end = live.end_offsets([partition])[partition]
    return LiveLog(f"cluster:{cluster_id or 'unknown'}/{live.topic}", start, end, epoch)


def plan_live_resume(
    point: ResumePoint, partition: int, now: LiveLog, settings: FoldSettings
) -> int | Refusal:
    """The offset a resumed fetch starts at, or why the saved point cannot be proven to hold."""
    if point.settings != settings:
        return Refusal("settings_changed", f"state saved with {point.settings}, this run uses {settings}")
    if (point.source, point.partition) != (now.source, partition) or now.source.startswith("cluster:unknown"):
        return Refusal("source_changed", f"state saved for {point.source}, this run reads {now.source}")
    was_start = point.log_start_offset if point.log_start_offset is not None else 0
    if now.start > was_start:
        return Refusal("log_start_moved", f"log start offset {now.start}, was {was_start}")
    if now.end < point.next_offset:
        return Refusal(
            "truncated", f"the high watermark {now.end} is below the saved position {point.next_offset}"
        )
    epoch = point.leader_epochs[-1][0] if point.leader_epochs else -1
    if now.epoch < 0 or epoch < 0:
        return Refusal("unverifiable", "the cluster does not say the partition's leader epoch (Metadata v7+)")
    if now.epoch != epoch:
        return Refusal("leader_epoch_changed", f"leader epoch {now.epoch}, was {epoch}")
    return point.next_offset


def load_live_partition_resumable(
    live: LiveSource,
    partition: int,
    store: StateStore,
    *,
    num_partitions: int,
    semantics: str = "java",
    verify_crc: bool = True,
) -> CoordinatorCache:
    """``load_live_partition`` that fetches from the partition's saved next offset when it still holds,
    and saves the next one; ``stats.resumed`` / ``resume_reason`` / ``bytes_read`` say what happened."""
    started = time.perf_counter()
    settings = FoldSettings(semantics, num_partitions, live.max_batch_bytes, verify_crc)
    with store.lock(live.topic, partition) as held:
        if not held:
            cache = load_live_partition(live, partition, num_partitions=num_partitions, semantics=semantics)
            note(cache, Refusal("state_locked", f"{store.path(live.topic, partition)} is locked"))
            return cache
        now = live_log(live, partition)
        resumed = resume_from(
            store, live.topic, partition, semantics=semantics, anomalies=(),
            plan=lambda point: plan_live_resume(point, partition, now, settings),
            maybe_compacted=lambda _offset: True,
        )  # fmt: skip
        fold, start, saved, read = _fetch(live, partition, now, resumed, semantics, verify_crc)
        point = _point(fold, live.topic, partition, now, settings, start)
        # The batches at or after the saved position are fetched again by the next run, which reports
        # their errors again: the state keeps only the errors before it.
        kept = [e for e in fold.stats.errors if e.offset is None or e.offset < point.next_offset]
        state_error = save_point(store, fold, point, kept, unchanged=point == saved and not read)
    cache = fold.finish(num_partitions=num_partitions)
    cache.stats.bytes_read = read
    cache.stats.state_error = state_error
    note(
        cache,
        None if isinstance(resumed, tuple) else resumed,
        f"resumed at offset {start} (fetched from there)",
    )
    cache.stats.elapsed_ms = (time.perf_counter() - started) * 1000
    return cache


def _fetch(
    live: LiveSource,
    partition: int,
    now: LiveLog,
    resumed: tuple[PartitionFold, int, ResumePoint] | Refusal,
    semantics: str,
    verify_crc: bool,
) -> tuple[PartitionFold, int, ResumePoint | None, int]:
    """``(fold, the offset fetched from, the saved point or None, bytes fetched)``: the saved fold
    goes on from its next offset; without one (or one that had folded nothing yet) the log start."""
    if isinstance(resumed, tuple) and resumed[2].last_offset is not None:
        fold, start, saved = resumed
        before = fold.stats.bytes
        rng = FetchRange(partition, start, now.end, first=False)
        fold.add_batches(live.iter_range(rng, fold.stats.errors, verify_crc=verify_crc))
        fold.stats.segments = 0
        return fold, start, saved, fold.stats.bytes - before
    rng = FetchRange(partition, now.start, now.end)
    fold = fold_range(live, rng, semantics=semantics, verify_crc=verify_crc)
    return fold, now.start, None, fold.stats.bytes


def _point(
    fold: PartitionFold, topic: str, partition: int, now: LiveLog, settings: FoldSettings, start: int
) -> ResumePoint:
    last = fold.stats.last_offset
    return ResumePoint(
        source=now.source,
        topic=topic,
        partition=partition,
        settings=settings,
        next_offset=last + 1 if last is not None else start,
        last_offset=last,
        segment_base=None,
        position=0,
        leader_epochs=((now.epoch, 0),) if now.epoch >= 0 else (),
        log_start_offset=now.start,
    )
