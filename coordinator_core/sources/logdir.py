"""A broker log dir on disk: partition folders, segments and checkpoint files (``UnifiedLog``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from coordinator_core.errors import DecodeError
from coordinator_core.records.batch import RecordBatch
from coordinator_core.records.reader import iter_segment_batches

OFFSETS_TOPIC = "__consumer_offsets"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"

_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
_PARTITION_RE = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


class LogDirError(Exception):
    """A log dir, partition dir or checkpoint file that cannot be used, with the path and reason."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One ``NNNNNNNNNNNNNNNNNNNN.log`` file; the name is its base offset."""

    path: Path
    base_offset: int
    size: int
    mtime_ms: int


@dataclass(frozen=True, slots=True)
class PartitionDir:
    """A ``<topic>-<partition>`` folder with its segments in base-offset order."""

    path: Path
    topic: str
    partition: int
    segments: tuple[Segment, ...]

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def iter_batches(self, errors: list[DecodeError], *, verify_crc: bool = True) -> Iterator[RecordBatch]:
        """Stream the batches of every segment in order; index files are never consulted."""
        for seg in self.segments:
            yield from iter_segment_batches(
                seg.path, partition=self.partition, errors=errors, verify_crc=verify_crc
            )


@dataclass(frozen=True, slots=True)
class LogDir:
    """A broker log dir (or the parent of one partition dir) and its checkpoint files."""

    path: Path
    partitions: tuple[PartitionDir, ...]
    cleaner_checkpoint: dict[tuple[str, int], int] = field(default_factory=dict)
    log_start_checkpoint: dict[tuple[str, int], int] = field(default_factory=dict)
    checkpoint_errors: tuple[str, ...] = ()

    def partition(self, number: int) -> PartitionDir:
        for p in self.partitions:
            if p.partition == number:
                return p
        raise LogDirError(f"{self.path}: no partition {number} of {OFFSETS_TOPIC}")


def read_offset_checkpoint(path: str | os.PathLike[str]) -> dict[tuple[str, int], int]:
    """Parse an ``OffsetCheckpointFile`` (version line, count line, ``topic partition offset`` lines).

    A missing or 0-byte file is an empty checkpoint (brokers leave them 0 bytes before the first write).
    A wrong version, a count that disagrees with the entries, or a malformed line raises LogDirError.
    """
    p = Path(path)
    if not p.exists():
        return {}
    text = p.read_text(encoding="utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return {}
    if lines[0].strip() != "0":
        raise LogDirError(f"{p}: unsupported checkpoint version {lines[0].strip()!r} (expected 0)")
    if len(lines) < 2 or not lines[1].strip().isdigit():
        raise LogDirError(f"{p}: missing or malformed entry count line")
    expected = int(lines[1])
    entries: dict[tuple[str, int], int] = {}
    for n, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != 3:
            raise LogDirError(f"{p}:{n}: expected 'topic partition offset', got {line!r}")
        topic, part, off = parts
        try:
            entries[(topic, int(part))] = int(off)
        except ValueError as exc:
            raise LogDirError(f"{p}:{n}: non-numeric partition or offset in {line!r}") from exc
    if len(entries) != expected:
        raise LogDirError(f"{p}: header says {expected} entries but {len(entries)} were found")
    return entries


def write_offset_checkpoint(path: str | os.PathLike[str], entries: dict[tuple[str, int], int]) -> None:
    """Write a checkpoint the way the broker does: to ``<file>.tmp``, fsync, then rename into place."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    body = "".join(f"{t} {part} {off}\n" for (t, part), off in sorted(entries.items()))
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(f"0\n{len(entries)}\n{body}")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, p)


def _partition_dir(path: Path) -> PartitionDir | None:
    m = _PARTITION_RE.match(path.name)
    if not m or not path.is_dir():
        return None
    segments = []
    for entry in os.scandir(path):
        sm = _SEGMENT_RE.match(entry.name)
        if sm and entry.is_file():
            st = entry.stat()
            segments.append(Segment(Path(entry.path), int(sm.group(1)), st.st_size, int(st.st_mtime * 1000)))
    segments.sort(key=lambda s: s.base_offset)
    return PartitionDir(path, m.group("topic"), int(m.group("partition")), tuple(segments))


def open_log_dir(
    path: str | os.PathLike[str],
    *,
    topic: str = OFFSETS_TOPIC,
    partitions: list[int] | None = None,
) -> LogDir:
    """Open a broker log dir, or a single ``__consumer_offsets-N`` partition dir.

    Partitions are returned in partition order, each with its segments in base-offset order.
    """
    root = Path(path)
    if not root.exists():
        raise LogDirError(f"{root}: no such file or directory")
    if not root.is_dir():
        raise LogDirError(f"{root}: not a directory (expected a broker log dir or a {topic}-N dir)")
    single = _partition_dir(root)
    if single is not None and single.topic == topic:
        found = [single]
        base = root.parent
    else:
        found = []
        for entry in sorted(os.scandir(root), key=lambda e: e.name):
            pd = _partition_dir(Path(entry.path)) if entry.is_dir() else None
            if pd is not None and pd.topic == topic:
                found.append(pd)
        base = root
        if not found:
            raise LogDirError(f"{root}: no {topic}-N partition folders found")
    if partitions is not None:
        wanted = set(partitions)
        missing = wanted - {p.partition for p in found}
        if missing:
            raise LogDirError(f"{root}: partition(s) {sorted(missing)} of {topic} not found")
        found = [p for p in found if p.partition in wanted]
    found.sort(key=lambda p: p.partition)

    checkpoint_errors: list[str] = []

    def _ckpt(name: str) -> dict[tuple[str, int], int]:
        try:
            return read_offset_checkpoint(base / name)
        except LogDirError as exc:
            checkpoint_errors.append(str(exc))
            return {}

    return LogDir(
        path=base,
        partitions=tuple(found),
        cleaner_checkpoint=_ckpt(CLEANER_CHECKPOINT),
        log_start_checkpoint=_ckpt(LOG_START_CHECKPOINT),
        checkpoint_errors=tuple(checkpoint_errors),
    )
