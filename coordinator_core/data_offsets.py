"""Log start and log end offsets of the data topics the groups consume, for lag and range checks.

Offline they come from the ``<topic>-<partition>`` folders in the same broker log dir(s): the log
start is the first segment's base offset, raised by ``log-start-offset-checkpoint`` when DeleteRecords
or retention moved it (``UnifiedLog.logStartOffset``), and the log end is one past the last batch's
last offset (``UnifiedLog.logEndOffset``). A partition hosted elsewhere may still be listed in the
``replication-offset-checkpoint`` (its high watermark when the broker last checkpointed); that is used
as the log end and said so. Live, they come from ListOffsets (EARLIEST and LATEST, READ_UNCOMMITTED),
which is what ``kafka-consumer-groups --describe`` shows as LOG-END-OFFSET.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records.reader import iter_segment_batches, read_batches
from offsetops.coordinator_core.sources.logdir import (
    LOG_START_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    LogDirError,
    Segment,
    open_log_dir,
    read_offset_checkpoint,
)
from offsetops.coordinator_core.untrusted import open_regular_file, read_regular_file

TopicPartition = tuple[str, int]

SOURCE_PARTITION_DIR = "partition_dir"
SOURCE_CHECKPOINT = "checkpoint"
SOURCE_LIST_OFFSETS = "list_offsets"


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """Log start and end of one data partition, and where they came from (None: not known)."""

    log_start_offset: int | None
    log_end_offset: int | None
    source: str
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "source": self.source,
            "note": self.note,
        }


_INDEX_ENTRY = struct.Struct(">ii")  # OffsetIndex entry: relative offset, file position
_MAX_TAIL_BYTES = 16 * 1024 * 1024  # past this the index is stale; walk the headers instead


def _index_tail_position(seg: Segment) -> int:
    """File position of the last batch the segment's offset index points at (0 without a usable index).

    The broker preallocates the active segment's index with zeros; the last non-zero entry is the
    newest. Entries are spaced ``index.interval.bytes`` (4 KiB) apart, so only a few KiB are left to walk.
    """
    index = seg.path.with_suffix(".index")
    try:
        raw = read_regular_file(index, kind="index")
    except OSError:
        return 0
    used = len(raw.rstrip(b"\0"))
    if used < 8:
        return 0
    _rel, best = _INDEX_ENTRY.unpack_from(raw, (used - 1) // 8 * 8)
    return best if 0 < best < seg.size else 0


def _last_offset(seg: Segment, partition: int, errors: list[DecodeError]) -> int | None:
    """Last offset of a segment: from its index tail when the index is sound, else a header walk."""
    tail = _index_tail_position(seg)
    if tail and seg.size - tail <= _MAX_TAIL_BYTES:
        probe: list[DecodeError] = []
        last = None
        try:
            with open_regular_file(seg.path, kind="segment", follow_symlinks=True) as fh:
                fh.seek(tail)
                data = fh.read()
        except OSError:
            data = b""  # the walk below reports the read error with the file name
        for batch in read_batches(data, errors=probe, verify_crc=False):
            last = batch.last_offset
        if last is not None and not probe:
            return last
        # A stale or corrupt index: fall back to the walk, which reports what is wrong with the file.
    last = None
    for batch in iter_segment_batches(seg.path, partition=partition, errors=errors, verify_crc=False):
        last = batch.last_offset
    return last


def _partition_dir_offsets(path: Path, topic: str, log_start_ckpt: int | None) -> PartitionOffsets | None:
    try:
        pdir = open_log_dir(path, topic=topic).partitions[0]
    except LogDirError:
        return None
    if not pdir.segments:
        return None
    errors: list[DecodeError] = []
    end = pdir.segments[-1].base_offset  # an empty active segment is named after the log end offset
    # Walk back from the newest segment to the first that holds a batch.
    for seg in reversed(pdir.segments):
        last = _last_offset(seg, pdir.partition, errors)
        if last is not None:
            end = max(end, last + 1)
            break
    start = pdir.segments[0].base_offset
    if log_start_ckpt is not None:
        start = max(start, log_start_ckpt)
    note = None
    if errors:
        first = errors[0]
        note = f"{len(errors)} read error(s), first: {first.kind} in {first.file}: {first.reason}"
    return PartitionOffsets(start, max(end, start), SOURCE_PARTITION_DIR, note)


def offline_offsets(
    log_dirs: Iterable[str | os.PathLike[str]], wanted: Iterable[TopicPartition]
) -> dict[TopicPartition, PartitionOffsets]:
    """Log start/end of each wanted partition found in the log dirs (absent ones are left out).

    With several log dirs (JBOD, or one per broker) the copy with the greatest log end wins: that is
    the leader's, or the most caught-up replica's.
    """
    found: dict[TopicPartition, PartitionOffsets] = {}
    wanted = sorted(set(wanted))
    for root in map(Path, log_dirs):
        try:
            ckpt_start = read_offset_checkpoint(root / LOG_START_CHECKPOINT)
        except LogDirError:
            ckpt_start = {}
        try:
            hw = read_offset_checkpoint(root / REPLICATION_CHECKPOINT)
        except LogDirError:
            hw = {}
        for tp in wanted:
            topic, part = tp
            got = _partition_dir_offsets(root / f"{topic}-{part}", topic, ckpt_start.get(tp))
            if got is None and tp in hw:
                got = PartitionOffsets(
                    ckpt_start.get(tp),
                    hw[tp],
                    SOURCE_CHECKPOINT,
                    f"no {topic}-{part} folder in {root}; log end is the high watermark in "
                    f"{REPLICATION_CHECKPOINT} (as of its last write)",
                )
            if got is None:
                continue
            prev = found.get(tp)
            if (
                prev is None
                or (prev.source == SOURCE_CHECKPOINT and got.source == SOURCE_PARTITION_DIR)
                or (prev.source == got.source and (got.log_end_offset or -1) > (prev.log_end_offset or -1))
            ):
                found[tp] = got
    return found


def live_offsets(config: Any, wanted: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionOffsets]:
    """ListOffsets EARLIEST/LATEST for each wanted partition, through the one client configuration.

    A topic that cannot be read (deleted, not authorized) is reported per partition in ``note``,
    never dropped silently.
    """
    from offsetops.coordinator_core.kafka_client import KafkaClientError
    from offsetops.coordinator_core.sources.live import LiveSource

    by_topic: dict[str, list[int]] = {}
    for topic, part in sorted(set(wanted)):
        by_topic.setdefault(topic, []).append(part)
    out: dict[TopicPartition, PartitionOffsets] = {}
    for topic, parts in by_topic.items():
        try:
            with LiveSource(config, topic=topic) as source:
                existing = set(source.partitions())
                present = [p for p in parts if p in existing]
                ends = source.end_offsets(present) if present else {}
                starts = source.start_offsets(present) if present else {}
        except KafkaClientError as exc:
            for p in parts:
                out[(topic, p)] = PartitionOffsets(None, None, SOURCE_LIST_OFFSETS, str(exc))
            continue
        for p in parts:
            if p in ends:
                out[(topic, p)] = PartitionOffsets(starts.get(p), ends[p], SOURCE_LIST_OFFSETS)
            else:
                out[(topic, p)] = PartitionOffsets(
                    None, None, SOURCE_LIST_OFFSETS, f"{topic}-{p} does not exist on the cluster"
                )
    return out
