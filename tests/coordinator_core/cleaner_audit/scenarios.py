"""Small broker log dirs for the cleaner audit tests, built segment by segment with the record builders."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from offsetops.coordinator_core.records.builder import build_control_batch, build_record_batch
from offsetops.coordinator_core.schema import OffsetCommitKey, encode_key
from offsetops.coordinator_core.sources.logdir import (
    CLEANER_CHECKPOINT,
    LOG_START_CHECKPOINT,
    write_offset_checkpoint,
)

TOPIC = "__consumer_offsets"
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
T0 = 1_717_000_000_000  # 2024-05-29, the scenarios' "now" unless a test says otherwise


def key(group: str, partition: int = 0) -> bytes:
    """A real OffsetCommit key, so the segments look like the coordinator's."""
    return encode_key(OffsetCommitKey(group, "orders", partition))


VALUE = b"\x00\x03" + b"\x00" * 30  # the audit never decodes values; only null vs not null matters


def commits(base: int, groups: Sequence[str], ts: int, **kw: object) -> bytes:
    """One batch per record at consecutive offsets (as the coordinator writes plain commits)."""
    return b"".join(
        build_record_batch([(key(g), VALUE, ts)], base_offset=base + i, **kw)  # type: ignore[arg-type]
        for i, g in enumerate(groups)
    )


def write_segment(pdir: Path, base_offset: int, batches: Sequence[bytes], mtime_ms: int) -> Path:
    path = pdir / f"{base_offset:020d}.log"
    path.write_bytes(b"".join(batches))
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path


def partition_dir(root: Path, partition: int) -> Path:
    pdir = root / f"{TOPIC}-{partition}"
    pdir.mkdir(parents=True, exist_ok=True)
    return pdir


def checkpoints(root: Path, cleaner: dict[int, int], log_start: dict[int, int] | None = None) -> None:
    write_offset_checkpoint(root / CLEANER_CHECKPOINT, {(TOPIC, p): o for p, o in cleaner.items()})
    write_offset_checkpoint(
        root / LOG_START_CHECKPOINT, {(TOPIC, p): o for p, o in (log_start or {}).items()}
    )


def dirty_partition(root: Path, partition: int = 0, *, now: int = T0) -> Path:
    """A compacted head (offsets 0-1) and three rolled dirty segments (2-21), then an active segment.

    Checkpoint 2, so clean = segment 0 and cleanable = segments 2, 8 and 14: the ratio is well above 0.5.
    """
    pdir = partition_dir(root, partition)
    old = now - 3 * DAY_MS
    write_segment(pdir, 0, [commits(0, ["g0", "g1"], old)], old)
    write_segment(pdir, 2, [commits(2, ["g0", "g1", "g2", "g0", "g1", "g2"], old + HOUR_MS)], old + HOUR_MS)
    write_segment(pdir, 8, [commits(8, ["g0", "g1", "g2", "g0", "g1", "g2"], old + 2 * HOUR_MS)],
                  old + 2 * HOUR_MS)  # fmt: skip
    write_segment(pdir, 14, [commits(14, ["g0", "g1", "g2", "g0", "g1", "g2"], old + 3 * HOUR_MS)],
                  old + 3 * HOUR_MS)  # fmt: skip
    write_segment(pdir, 20, [commits(20, ["g0", "g1"], now - HOUR_MS)], now - HOUR_MS)
    return pdir


def healthy_partition(root: Path, partition: int = 0, *, now: int = T0) -> Path:
    """Compacted up to the active segment: one clean segment (0-2), the active one (3-4). Ratio 0."""
    pdir = partition_dir(root, partition)
    write_segment(pdir, 0, [commits(0, ["g0", "g1", "g2"], now - DAY_MS)], now - DAY_MS)
    write_segment(pdir, 3, [commits(3, ["g0", "g1"], now - 60_000)], now - 60_000)
    return pdir


def hanging_txn_partition(root: Path, partition: int = 0, *, now: int = T0, opened_at: int) -> Path:
    """Segment 0 clean (0-3); segment 4 holds commits 4-7, a committed txn from producer 2000 (8 + marker
    9), an aborted txn from producer 3000 (10 + marker 11) and an open txn from producer 1002 at offset 12;
    segments 13 and 19 are dirty plain commits; 25 is active. The open txn pins the LSO at 12."""
    pdir = partition_dir(root, partition)
    old = now - 4 * DAY_MS
    write_segment(pdir, 0, [commits(0, ["a", "b", "c", "d"], old)], old)
    seg4 = [
        commits(4, ["a", "b", "c", "d"], opened_at - 1000),
        build_record_batch([(key("t1"), VALUE, opened_at - 500)], base_offset=8, producer_id=2000,
                           producer_epoch=0, base_sequence=0, is_transactional=True),
        build_control_batch(True, base_offset=9, producer_id=2000, producer_epoch=0, coordinator_epoch=5,
                            timestamp=opened_at - 400),
        build_record_batch([(key("t2"), VALUE, opened_at - 300)], base_offset=10, producer_id=3000,
                           producer_epoch=0, base_sequence=0, is_transactional=True),
        build_control_batch(False, base_offset=11, producer_id=3000, producer_epoch=0, coordinator_epoch=5,
                            timestamp=opened_at - 200),
        build_record_batch([(key("hang"), VALUE, opened_at)], base_offset=12, producer_id=1002,
                           producer_epoch=7, base_sequence=0, is_transactional=True),
    ]  # fmt: skip
    write_segment(pdir, 4, seg4, opened_at)
    write_segment(pdir, 13, [commits(13, ["a", "b", "c", "a", "b", "c"], opened_at + HOUR_MS)],
                  opened_at + HOUR_MS)  # fmt: skip
    write_segment(pdir, 19, [commits(19, ["a", "b", "c", "a", "b", "c"], opened_at + 2 * HOUR_MS)],
                  opened_at + 2 * HOUR_MS)  # fmt: skip
    write_segment(pdir, 25, [commits(25, ["a"], now - 60_000)], now - 60_000)
    return pdir
