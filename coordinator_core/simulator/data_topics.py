"""Data-topic partition dirs next to ``__consumer_offsets``, so lag and out-of-range views have a truth.

For each topic-partition the simulated groups committed, the broker's log dir gets a ``<topic>-<p>``
folder whose log start and log end are chosen around the committed offsets: mostly in range, some with
every commit below the log start (retention or DeleteRecords overtook the consumer), some with commits
above the log end (the topic was recreated or truncated after an unclean leader election), and some
absent (the partition lives on another broker), which then appear only in the log dir's checkpoints or
not at all. The chosen bounds go into ``truth.json``; they are never derived from the files.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.records.builder import build_record_batch
from offsetops.coordinator_core.sources.logdir import (
    LOG_START_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)

_SEED_SALT = 0x5EED_DA7A  # a stream of its own, so the offsets log dir is the same with or without this


def _committed(partitions_truth: list[dict[str, Any]]) -> dict[tuple[str, int], list[int]]:
    out: dict[tuple[str, int], list[int]] = {}
    for part in partitions_truth:
        for group in part["groups"]:
            for o in group["offsets"]:
                out.setdefault((o["topic"], o["partition"]), []).append(o["offset"])
    return out


def _segment(pdir: Path, base: int, offsets: list[int], timestamp: int) -> None:
    """One segment at ``base`` holding one single-record batch at each of ``offsets`` (gaps are legal:
    a compacted or DeleteRecords-trimmed log has them too)."""
    pdir.mkdir(parents=True, exist_ok=True)
    with open(pdir / f"{base:020d}.log", "wb") as fh:
        for off in offsets:
            fh.write(build_record_batch([(b"k", b"v", timestamp)], base_offset=off))
    for ext in (".index", ".timeindex"):
        (pdir / f"{base:020d}{ext}").touch()


def write_data_partitions(
    out: Path, partitions_truth: list[dict[str, Any]], *, seed: int, end_ms: int
) -> list[dict[str, Any]]:
    """Write the data-topic partition dirs and checkpoint entries; return their truth, sorted."""
    rng = random.Random(seed ^ _SEED_SALT)
    replication = read_offset_checkpoint(out / REPLICATION_CHECKPOINT)
    log_start_ckpt = read_offset_checkpoint(out / LOG_START_CHECKPOINT)
    truth: list[dict[str, Any]] = []
    for (topic, part), offs in sorted(_committed(partitions_truth).items()):
        low, high = min(offs), max(offs)
        roll = rng.random()
        if roll < 0.03 and high >= 0:
            kind = "below_log_start"
            start = high + rng.randint(1, 1000)
            end = start + rng.randint(0, 5000)
        elif roll < 0.06 and low > 0:
            kind = "above_log_end"
            end = rng.randint(0, low - 1)
            start = rng.randint(0, end)
        else:
            kind = "in_range"
            start = rng.randint(0, max(low, 0))
            end = max(high, 0) + rng.randint(0, 5000)
        entry: dict[str, Any] = {"topic": topic, "partition": part, "scenario": kind}
        placement = rng.random()
        if placement < 0.08:
            # On another broker: this log dir knows nothing about it.
            entry.update(log_start_offset=None, log_end_offset=None, source=None)
        elif placement < 0.16:
            # Not hosted here any more, but the high-watermark checkpoint still lists it.
            replication[(topic, part)] = end
            entry.update(log_start_offset=None, log_end_offset=end, source="checkpoint")
        else:
            base = start
            if end > start and rng.random() < 0.3:
                # DeleteRecords moved the log start past the first segment's base offset.
                base = max(0, start - rng.randint(1, 100))
                if base < start:
                    log_start_ckpt[(topic, part)] = start
            offsets = sorted({base, end - 1}) if end > start else []
            _segment(out / f"{topic}-{part}", base if offsets else end, offsets, end_ms)
            replication[(topic, part)] = end
            entry.update(log_start_offset=start, log_end_offset=end, source="partition_dir")
        truth.append(entry)
    write_offset_checkpoint(out / REPLICATION_CHECKPOINT, replication)
    write_offset_checkpoint(out / LOG_START_CHECKPOINT, log_start_ckpt)
    for name in (REPLICATION_CHECKPOINT, LOG_START_CHECKPOINT):
        os.utime(out / name, (end_ms / 1000, end_ms / 1000))
    return truth
