"""A broker log dir on disk: partition folders, segments and checkpoint files (``UnifiedLog``)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from offsetops.coordinator_core.atomic import write_text_atomic
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records.batch import RecordBatch
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.untrusted import read_regular_file

OFFSETS_TOPIC = "__consumer_offsets"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
META_PROPERTIES = "meta.properties"

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
    # What listing the dir found wrong (see ``list_segments``); reported by every reader of the dir.
    anomalies: tuple[DecodeError, ...] = ()

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def iter_batches(
        self,
        errors: list[DecodeError],
        *,
        verify_crc: bool = True,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    ) -> Iterator[RecordBatch]:
        """Stream the batches of every segment in order; index files are never consulted.

        The listing's anomalies are reported first, then each segment's errors as it is read; a batch
        over ``max_batch_bytes`` (framed or decompressed) is an error, not an allocation.
        """
        errors.extend(self.anomalies)
        for seg in self.segments:
            yield from iter_segment_batches(
                seg.path,
                partition=self.partition,
                errors=errors,
                verify_crc=verify_crc,
                max_batch_bytes=max_batch_bytes,
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
    lines = _checkpoint_lines(p)
    entries: dict[tuple[str, int], int] = {}
    for n, line in enumerate(lines or [], start=3):
        parts = line.split()
        if len(parts) != 3:
            raise LogDirError(f"{p}:{n}: expected 'topic partition offset', got {line!r}")
        topic, part, off = parts
        try:
            entries[(topic, int(part))] = int(off)
        except ValueError as exc:
            raise LogDirError(f"{p}:{n}: non-numeric partition or offset in {line!r}") from exc
    if lines is not None and len(entries) != len(lines):
        raise LogDirError(f"{p}: header says {len(lines)} entries but {len(entries)} were found")
    return entries


def _checkpoint_lines(p: Path) -> list[str] | None:
    """The non-blank lines of a ``CheckpointFile`` after its version (0) and entry count, checked."""
    if not os.path.lexists(p):
        return None
    try:
        text = read_regular_file(p, kind="checkpoint").decode("utf-8", errors="replace")
    except OSError as exc:
        raise LogDirError(str(exc)) from None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    if lines[0].strip() != "0":
        raise LogDirError(f"{p}: unsupported checkpoint version {lines[0].strip()!r} (expected 0)")
    if len(lines) < 2 or not lines[1].strip().isdigit():
        raise LogDirError(f"{p}: missing or malformed entry count line")
    if len(lines) - 2 != int(lines[1]):
        raise LogDirError(f"{p}: header says {int(lines[1])} entries but {len(lines) - 2} were found")
    return lines[2:]


def read_leader_epoch_checkpoint(path: str | os.PathLike[str]) -> tuple[tuple[int, int], ...]:
    """Parse a partition's ``leader-epoch-checkpoint`` (``LeaderEpochCheckpointFile``): ``(epoch, start
    offset)`` entries, oldest first. A missing or 0-byte file is empty (a log written before 0.11, or
    never led); a malformed one raises LogDirError naming the file and line."""
    p = Path(path)
    lines = _checkpoint_lines(p)
    out: list[tuple[int, int]] = []
    for n, line in enumerate(lines or [], start=3):
        parts = line.split()
        try:
            epoch, start = (int(x) for x in parts) if len(parts) == 2 else (None, None)
        except ValueError:
            epoch = start = None
        if epoch is None or start is None:
            raise LogDirError(f"{p}:{n}: expected 'epoch startOffset', got {line!r}")
        out.append((epoch, start))
    return tuple(out)


def read_broker_id(log_dir: str | os.PathLike[str]) -> int:
    """``broker.id`` (ZooKeeper mode) or ``node.id`` (KRaft) from a log dir's ``meta.properties``.

    Raises LogDirError naming the dir when the file is missing or holds neither key, so an operator
    who copied a log dir without it knows to give the broker id explicitly.
    """
    # imported here: kafka_client owns the one .properties parser, and pulls in the client stack
    from offsetops.coordinator_core.kafka_client import read_properties

    path = Path(log_dir) / META_PROPERTIES
    try:
        props = read_properties(path)
    except (OSError, ValueError) as exc:
        if not os.path.lexists(path):
            raise LogDirError(
                f"{log_dir}: no {META_PROPERTIES}, so its broker id is unknown; give it as BROKER_ID=PATH"
            ) from None
        raise LogDirError(f"{path}: cannot read: {exc}") from None
    for key in ("broker.id", "node.id"):
        value = props.get(key)
        if value is None:
            continue
        try:
            return int(value.strip())
        except ValueError:
            raise LogDirError(f"{path}: {key}={value!r} is not a broker id") from None
    raise LogDirError(f"{path}: neither broker.id nor node.id is set; give the broker id as BROKER_ID=PATH")


def write_offset_checkpoint(path: str | os.PathLike[str], entries: dict[tuple[str, int], int]) -> None:
    """Write a checkpoint the way the broker does: to a temporary file, fsync, then rename into place."""
    body = "".join(f"{t} {part} {off}\n" for (t, part), off in sorted(entries.items()))
    write_text_atomic(path, f"0\n{len(entries)}\n{body}")


#: Suffixes a broker leaves behind while cleaning, swapping or deleting segments (``LogFileUtils``).
LEFTOVER_SUFFIXES = {
    ".deleted": "a segment scheduled for deletion; the broker deletes it on startup",
    ".cleaned": "the output of an interrupted cleaning pass; the broker deletes it on startup",
    ".swap": "a cleaned segment not yet swapped in; the broker completes the swap on startup, replacing "
    "the segments it covers",
}


def segment_base_offset(name: str) -> int | None:
    """The base offset of a ``.log`` file name as Kafka parses it (``LogFileUtils.offsetFromFileName``).

    Kafka takes the text before the first dot as a long, so ``5.log`` is the segment at offset 5 just as
    ``00000000000000000005.log`` is. None for a name that is not a segment name.
    """
    if not name.endswith(".log"):
        return None
    head = name[: name.index(".")]
    if not head.isascii() or not head.isdigit():
        return None
    value = int(head)
    return value if value < 2**63 else None


def _anomaly(kind: str, reason: str, path: str | Path, partition: int | None) -> DecodeError:
    return DecodeError(kind, reason, str(path), partition)


def classify_segment_name(name: str) -> tuple[str, int | str | None]:
    """What a file name in a partition dir is, as ``LogLoader`` sees it.

    ``("segment", base_offset)``, ``("leftover_file", reason)`` for ``*.log.swap``/``.cleaned``/
    ``.deleted``, ``("bad_segment_name", reason)`` for a ``.log`` whose name is not an offset, or
    ``("skip", None)`` for everything the load does not need (indexes, snapshots, metadata).
    """
    suffix = next((sfx for sfx in LEFTOVER_SUFFIXES if name.endswith(sfx)), None)
    if suffix is not None and ".log" in name:
        return "leftover_file", f"{LEFTOVER_SUFFIXES[suffix]} (not read)"
    if not name.endswith(".log"):
        return "skip", None
    base = segment_base_offset(name)
    if base is None:
        return (
            "bad_segment_name",
            "a .log file whose name is not <offset>.log; the broker cannot load it (not read)",
        )
    return "segment", base


T = TypeVar("T")


def dedupe_segments(
    segments: list[T], *, key: Callable[[T], tuple[int, str]], partition: int | None
) -> tuple[list[T], list[DecodeError]]:
    """One segment per base offset, in base-offset order, and a ``duplicate_segment`` for each other.

    ``key(segment)`` is ``(base offset, file name)``. The broker keeps one segment per base offset; the
    canonical 20-digit name is the one it wrote, so that one is read.
    """
    by_offset: dict[int, list[T]] = {}
    for seg in segments:
        by_offset.setdefault(key(seg)[0], []).append(seg)
    kept: list[T] = []
    anomalies: list[DecodeError] = []
    for base, found in sorted(by_offset.items()):
        found.sort(key=lambda sg: (len(key(sg)[1]) != 24, key(sg)[1]))
        kept.append(found[0])
        for other in found[1:]:
            anomalies.append(
                _anomaly(
                    "duplicate_segment",
                    f"same base offset {base} as {key(found[0])[1]}, which is read instead (not read)",
                    getattr(other, "path", key(other)[1]),
                    partition,
                )
            )
    return kept, anomalies


def list_segments(path: Path, partition: int | None) -> tuple[list[Segment], list[DecodeError]]:
    """The segments of one partition dir in Kafka's order, and every anomaly found on the way.

    Mirrors what ``LogLoader`` loads: every ``<offset>.log`` regular file (symlinks followed), ordered by
    the offset parsed from its name. Anything that would make a load differ from the broker's is
    reported: a dangling or looping symlink, a ``.log`` that is not a regular file, an unparseable
    name, leftover ``.swap``/``.cleaned``/``.deleted`` files, two files for the same base offset.
    """
    anomalies: list[DecodeError] = []
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        return [], [
            _anomaly("unreadable", f"cannot list the partition dir: {exc.strerror or exc}", path, partition)
        ]
    candidates: list[Segment] = []
    for entry in entries:
        kind, value = classify_segment_name(entry.name)
        if kind == "skip":
            continue
        if kind != "segment":
            anomalies.append(_anomaly(kind, str(value), entry.path, partition))
            continue
        try:
            st = os.stat(entry.path)
        except FileNotFoundError:
            anomalies.append(
                _anomaly(
                    "dangling_segment",
                    "symlink to a missing file: the segment is gone",
                    entry.path,
                    partition,
                )
            )
            continue
        except OSError as exc:
            anomalies.append(
                _anomaly("unreadable", f"cannot open: {exc.strerror or exc}", entry.path, partition)
            )
            continue
        if not stat.S_ISREG(st.st_mode):
            what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            anomalies.append(
                _anomaly("not_a_file", f"segment name, but {what} (not read)", entry.path, partition)
            )
            continue
        candidates.append(Segment(Path(entry.path), int(value), st.st_size, int(st.st_mtime * 1000)))  # type: ignore[arg-type]
    segments, dupes = dedupe_segments(
        candidates, key=lambda sg: (sg.base_offset, sg.path.name), partition=partition
    )
    return segments, anomalies + dupes


def segment_order_errors(
    file: str, partition: int | None, base_offset: int, first_offset: int | None, previous_last: int | None
) -> list[DecodeError]:
    """Check a segment against its name and the segment before it, once its batches are read.

    A batch below the segment's base offset means the file does not belong under that name; a first
    offset at or below the previous segment's last offset means two segments overlap, so a stale
    record could be replayed after a newer one (the log would not be monotonic, as ``LogSegment``
    requires). A first offset above the name is normal: the cleaner keeps a segment's name when it
    removes its first records.
    """
    errors = []
    if first_offset is not None and first_offset < base_offset:
        errors.append(
            DecodeError(
                "segment_offset_mismatch",
                f"first batch starts at offset {first_offset}, below the segment's base offset {base_offset}",
                file,
                partition,
                None,
                first_offset,
            )
        )
    if first_offset is not None and previous_last is not None and first_offset <= previous_last:
        errors.append(
            DecodeError(
                "overlapping_segments",
                f"first offset {first_offset} is not after the previous segment's last offset "
                f"{previous_last}; records are replayed in file order, so older ones may win",
                file,
                partition,
                None,
                first_offset,
            )
        )
    return errors


def _partition_dir(path: Path) -> PartitionDir | None:
    m = _PARTITION_RE.match(path.name)
    if not m:
        return None
    number = int(m.group("partition"))
    try:
        is_dir = stat.S_ISDIR(os.stat(path).st_mode)
    except OSError as exc:
        if not os.path.islink(path):
            return None
        why = "dangling symlink" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc)
        return PartitionDir(path, m.group("topic"), number, (), (_anomaly("unreadable", why, path, number),))
    if not is_dir:
        return None
    segments, anomalies = list_segments(path, number)
    return PartitionDir(path, m.group("topic"), number, tuple(segments), tuple(anomalies))


class _OfPartition(Protocol):
    @property
    def partition(self) -> int: ...


_P = TypeVar("_P", bound=_OfPartition)


def only_partitions(
    found: Iterable[_P],
    partitions: Iterable[int],
    *,
    where: object,
    topic: str,
    error: type[Exception] = LogDirError,
) -> list[_P]:
    """The entries of ``found`` that belong to ``partitions``; ``error`` names the path and any partition
    asked for that is not there (a typo in ``--partition`` is an error, never an empty result)."""
    items = list(found)
    wanted = set(partitions)
    missing = sorted(wanted - {f.partition for f in items})
    if missing:
        raise error(f"{where}: partition(s) {missing} of {topic} not found")
    return [f for f in items if f.partition in wanted]


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
    try:
        os.stat(root)
    except FileNotFoundError:
        raise LogDirError(f"{root}: no such file or directory") from None
    except OSError as exc:
        raise LogDirError(f"{root}: {exc.strerror or exc}") from exc
    if not root.is_dir():
        raise LogDirError(f"{root}: not a directory (expected a broker log dir or a {topic}-N dir)")
    single = _partition_dir(root)
    if single is not None and single.topic == topic:
        found = [single]
        base = root.parent
    else:
        found = []
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError as exc:
            raise LogDirError(f"{root}: cannot list: {exc.strerror or exc}") from exc
        for entry in entries:
            pd = _partition_dir(Path(entry.path))
            if pd is not None and pd.topic == topic:
                found.append(pd)
        base = root
        if not found:
            raise LogDirError(f"{root}: no {topic}-N partition folders found")
    if partitions is not None:
        found = only_partitions(found, partitions, where=root, topic=topic)
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
