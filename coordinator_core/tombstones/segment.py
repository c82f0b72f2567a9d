"""Offline executor: append the tombstones as a new segment in a *copy* of a log dir.

For offline repair and simulation. The source dir is never written: the ``__consumer_offsets``
partition dirs are copied to ``--output-dir`` first (via a temporary name, renamed into place when
complete). Per offsets partition, one new segment file named by the log end offset receives one
batch per group, as ``cleanupGroupMetadata`` appends one batch per group: the partition's record
format (the magic of its last batch), consecutive offsets from the log end offset, timestamp = the
plan's ``now``, CREATE_TIME, the last batch's partition leader epoch.

Idempotence: before the first write the segment's name and start position are journaled. A rerun
first cuts a torn tail (a batch half written when the process died, as the broker's log recovery
would), then marks every planned key already present as a tombstone in that segment as applied,
and appends only the rest. The broker rebuilds the missing index files of the new segment on load.
"""

from __future__ import annotations

import os
import shutil
from collections import OrderedDict
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.atomic import open_append, write_text_atomic
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records.builder import build_legacy_message_set, build_record_batch
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.logdir import (
    CLEANER_CHECKPOINT,
    LOG_START_CHECKPOINT,
    OFFSETS_TOPIC,
    LogDirError,
    PartitionDir,
    open_log_dir,
)
from offsetops.coordinator_core.tombstones.journal import APPLIED, Journal, fault_point
from offsetops.coordinator_core.tombstones.runner import ExecutorRefused, VerifyResult
from offsetops.coordinator_core.tombstones.verify import verify_partition_dir
from offsetops.coordinator_core.untrusted import open_regular_file, read_regular_text

MARKER = ".offsetops-plan"


def _is_within(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
    except ValueError:
        return False
    return True


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def partition_tail(pdir: PartitionDir) -> tuple[int, int, int]:
    """``(log_end_offset, magic, partition_leader_epoch)`` of a partition dir, from its last batch.

    An empty partition takes its last segment's base offset, magic 2 and epoch 0.
    """
    leo = pdir.segments[-1].base_offset if pdir.segments else 0
    magic, epoch = 2, 0
    errors: list[DecodeError] = []
    for seg in reversed(pdir.segments):
        last = None
        for batch in iter_segment_batches(seg.path, partition=pdir.partition, errors=errors):
            last = batch
        if last is not None:
            leo = max(leo, last.last_offset + 1)
            magic = last.magic
            epoch = max(last.partition_leader_epoch, 0) if last.magic == 2 else 0
            break
    return leo, magic, epoch


class SegmentExecutor:
    """Write tombstone batches into a copy of ``source`` at ``output_dir``."""

    name = "segment"

    def __init__(
        self, source: str | os.PathLike[str], output_dir: str | os.PathLike[str], *, semantics: str = "java"
    ) -> None:
        self.source = Path(source).resolve()
        self.output_dir = Path(output_dir).resolve()
        self.semantics = semantics
        if _is_within(self.output_dir, self.source) or _is_within(self.source, self.output_dir):
            raise ExecutorRefused(
                f"--output-dir {self.output_dir} overlaps the source {self.source}; the segment executor "
                "writes to a separate copy and never touches the source"
            )

    def target(self) -> dict[str, Any]:
        return {"source": str(self.source), "output_dir": str(self.output_dir)}

    def close(self) -> None:
        return None

    # -- the copy ---------------------------------------------------------------------------------

    def _ensure_copy(self, journal: Journal) -> None:
        marker = self.output_dir / MARKER
        if self.output_dir.exists():
            owner = read_regular_text(marker, kind="state").strip() if marker.is_file() else None
            if owner != journal.plan_id:
                raise ExecutorRefused(
                    f"{self.output_dir} already exists and is not the copy made for plan {journal.plan_id}"
                    f"{f' (it belongs to plan {owner})' if owner else ''}; choose a new --output-dir"
                )
            return
        logdir = open_log_dir(self.source)
        tmp = self.output_dir.with_name(f".{self.output_dir.name}.tmp-{journal.plan_id}")
        if tmp.exists():
            shutil.rmtree(tmp)  # a copy interrupted by a crash; start it again
        tmp.mkdir(parents=True)
        for pdir in logdir.partitions:
            shutil.copytree(pdir.path, tmp / pdir.path.name)
        for name in (CLEANER_CHECKPOINT, LOG_START_CHECKPOINT):
            if (logdir.path / name).is_file() and self.source == logdir.path:
                shutil.copy2(logdir.path / name, tmp / name)
        write_text_atomic(tmp / MARKER, journal.plan_id + "\n")
        for f in tmp.rglob("*"):
            if f.is_file():
                _fsync_file(f)
        os.replace(tmp, self.output_dir)
        journal.event(
            "copied",
            source=str(self.source),
            output_dir=str(self.output_dir),
            partitions=[p.partition for p in logdir.partitions],
        )

    def _partition_dir(self, partition: int) -> PartitionDir:
        try:
            return open_log_dir(self.output_dir, partitions=[partition]).partition(partition)
        except LogDirError as exc:
            raise ExecutorRefused(f"the copy has no {OFFSETS_TOPIC}-{partition}: {exc}") from exc

    # -- applying ---------------------------------------------------------------------------------

    def apply(self, journal: Journal, todo: list[dict[str, Any]]) -> None:
        self._ensure_copy(journal)
        by_partition: OrderedDict[int, list[dict[str, Any]]] = OrderedDict()
        for item in todo:
            if item["offsets_partition"] is None:
                raise ExecutorRefused("the plan has a tombstone with no offsets partition")
            by_partition.setdefault(item["offsets_partition"], []).append(item)
        prepared = {e["partition"]: e for e in journal.events("segment")}
        now_ms = journal.plan["now_ms"]
        for partition, items in by_partition.items():
            pdir = self._partition_dir(partition)
            info = prepared.get(partition)
            if info is None:
                leo, magic, epoch = partition_tail(pdir)
                seg_path = pdir.path / f"{leo:020d}.log"
                start = seg_path.stat().st_size if seg_path.exists() else 0
                info = {
                    "partition": partition,
                    "file": seg_path.name,
                    "start_position": start,
                    "base_offset": leo,
                    "magic": magic,
                    "leader_epoch": epoch,
                }
                journal.event("segment", **info)
            seg_path = pdir.path / info["file"]
            next_offset, present = self._recover(seg_path, info)
            reconciled = [i for i in items if bytes.fromhex(i["key_hex"]) in present]
            if reconciled:
                journal.record([i["item_id"] for i in reconciled], APPLIED, f"found in {info['file']}")
            remaining = [i for i in items if bytes.fromhex(i["key_hex"]) not in present]
            groups: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
            for item in remaining:
                groups.setdefault(item["group_id"], []).append(item)
            for group_items in groups.values():
                records = [(bytes.fromhex(i["key_hex"]), None, now_ms) for i in group_items]
                if info["magic"] == 2:
                    data = build_record_batch(
                        records, base_offset=next_offset, partition_leader_epoch=info["leader_epoch"]
                    )
                else:
                    data = build_legacy_message_set(records, magic=info["magic"], base_offset=next_offset)
                with open_append(seg_path) as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                first, last = next_offset, next_offset + len(records) - 1
                next_offset = last + 1
                for _ in group_items:
                    fault_point("send")
                journal.record(
                    [i["item_id"] for i in group_items], APPLIED, f"offsets {first}..{last} in {info['file']}"
                )

    def _recover(self, seg_path: Path, info: dict[str, Any]) -> tuple[int, set[bytes]]:
        """Cut a torn tail from our segment; return the next offset and the keys tombstoned there."""
        start = info["start_position"]
        if not seg_path.exists():
            return info["base_offset"], set()
        with open_regular_file(seg_path, kind="segment", follow_symlinks=True) as fh:
            fh.seek(start)
            data = fh.read()
        from offsetops.coordinator_core.records.reader import read_batches

        errors: list[DecodeError] = []
        present: set[bytes] = set()
        next_offset = info["base_offset"]
        good_end = 0
        for batch in read_batches(data, errors=errors, start_position=0):
            for _off, _ts, key, value in batch.iter_records():
                if key is not None and value is None:
                    present.add(key)
            next_offset = batch.last_offset + 1
            good_end = batch.position + batch.size
        if good_end < len(data):
            with open(seg_path, "r+b") as fh:
                fh.truncate(start + good_end)
                fh.flush()
                os.fsync(fh.fileno())
        return next_offset, present

    # -- verifying --------------------------------------------------------------------------------

    def verify(self, journal: Journal) -> list[VerifyResult]:
        """Reload each touched partition of the copy and classify every planned key."""
        results: list[VerifyResult] = []
        by_partition: dict[int, list[dict[str, Any]]] = {}
        for item in journal.items:
            by_partition.setdefault(item["offsets_partition"], []).append(item)
        for partition, items in sorted(by_partition.items()):
            pdir = self._partition_dir(partition)
            found, errors = verify_partition_dir(pdir, items, semantics=self.semantics)
            if errors:
                found = [
                    VerifyResult(
                        r.item_id,
                        r.key_hex,
                        r.group_id,
                        r.topic,
                        r.partition,
                        "unknown",
                        f"reload of the copy met {len(errors)} decode error(s): {errors[0]}",
                    )
                    if r.state == "present"
                    else r
                    for r in found
                ]
            results += found
        return results
