"""Several brokers' log dirs in one run: which broker's copy of each partition to read, and why.

Every broker that hosts a replica of an ``__consumer_offsets`` partition has its own copy of it. A
follower appends the leader's batches byte for byte (``UnifiedLog.appendAsFollower``), so in the range
that neither broker's Log Cleaner has rewritten yet, two healthy copies hold the same batches. They
differ legitimately in how far they reach (a lagging follower), in what their own cleaner has already
compacted, and in their log start offset. :func:`choose_replica` picks the copy a reload reads, by the
rules of leader election as the files show them: the highest leader epoch in ``leader-epoch-checkpoint``
(``LeaderEpochFileCache.latestEpoch``: the copy that saw the newest leader), then the highest log end
offset, then the lowest log start offset (more history kept), then the lowest broker id. Copies that
disagree (other bytes at the same offsets, different start offsets for the same leader epoch, or a copy
that reaches past the chosen one) are reported as :class:`Divergence`, never merged.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records.batch import RecordBatch
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.logdir import (
    LEADER_EPOCH_CHECKPOINT,
    META_PROPERTIES,
    OFFSETS_TOPIC,
    LogDir,
    LogDirError,
    PartitionDir,
    open_log_dir,
    read_broker_id,
    read_leader_epoch_checkpoint,
)
from offsetops.coordinator_core.untrusted import open_regular_file

__all__ = [
    "BatchDigest",
    "BrokerLogDir",
    "Divergence",
    "LogDirs",
    "ReplicaChoice",
    "ReplicaCopy",
    "choose_replica",
    "compare_copies",
    "digest",
    "find_divergences",
    "open_log_dirs",
    "split_broker_prefix",
]

#: Divergence kinds, worst first: other bytes at the same offsets, a different history of leader epochs,
#: and records on a copy beyond the chosen copy's log end (a follower ahead of the leader).
DIFFERENT_BATCHES, EPOCH_HISTORY, AHEAD_OF_CHOSEN = "different_batches", "epoch_history", "ahead_of_chosen"


@dataclass(frozen=True, slots=True)
class BrokerLogDir:
    """One broker's log dir."""

    broker_id: int
    log_dir: LogDir


@dataclass(frozen=True, slots=True)
class BatchDigest:
    """One stored batch, as the divergence check compares it: offsets, size and a digest of its bytes."""

    base_offset: int
    last_offset: int
    size: int
    digest: str

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


@dataclass(frozen=True, slots=True)
class ReplicaCopy:
    """One broker's copy of a partition, with what the choice and the divergence check need.

    Read here from the files (``pdir``), or read back from a broker scan written where the files are
    (``digests``: the batches from ``first_dirty_offset`` on, see
    :mod:`offsetops.coordinator_core.cleaner.collect`).
    """

    broker_id: int
    partition: int
    path: str
    size_bytes: int
    #: ``(epoch, start offset)`` from ``leader-epoch-checkpoint``, oldest first
    leader_epochs: tuple[tuple[int, int], ...]
    log_start_offset: int
    log_end_offset: int
    #: where this broker's cleaner stopped (``cleaner-offset-checkpoint``, at least the log start):
    #: from here on the copy holds the batches exactly as replicated
    first_dirty_offset: int
    pdir: PartitionDir | None = None
    digests: tuple[BatchDigest, ...] | None = None
    #: the stored digests stop here (a cap on what a broker scan carries); None = to the log end
    digests_until: int | None = None

    @property
    def leader_epoch(self) -> int | None:
        return self.leader_epochs[-1][0] if self.leader_epochs else None

    def digests_from(self, start: int) -> Iterator[BatchDigest]:
        """The batches that end after ``start``, in offset order (bounded memory when read from files)."""
        if self.digests is not None:
            yield from (d for d in self.digests if d.next_offset > start)
            return
        if self.pdir is None:
            return
        errors: list[DecodeError] = []
        with _BatchBytes() as read:
            for batch in _batches_from(self.pdir, start, errors):
                yield BatchDigest(batch.base_offset, batch.last_offset, batch.size, digest(read(batch)))

    def to_json(self) -> dict[str, Any]:
        return {
            "broker_id": self.broker_id,
            "path": self.path,
            "leader_epoch": self.leader_epoch,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "first_dirty_offset": self.first_dirty_offset,
            "size_bytes": self.size_bytes,
        }


def digest(data: bytes) -> str:
    """The digest two copies of a batch are compared by (BLAKE2b, 128 bits: collisions are not a concern)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class Divergence:
    """Two copies of a partition that are not the same log: reported, never merged."""

    partition: int
    broker_id: int
    chosen_broker_id: int
    kind: str
    offset: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "broker_id": self.broker_id,
            "chosen_broker_id": self.chosen_broker_id,
            "kind": self.kind,
            "offset": self.offset,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class ReplicaChoice:
    """The copy of one partition a reload reads, why, and how the other copies compare."""

    partition: int
    chosen: ReplicaCopy
    copies: tuple[ReplicaCopy, ...]
    reason: str
    divergences: tuple[Divergence, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "chosen_broker_id": self.chosen.broker_id,
            "reason": self.reason,
            "copies": [c.to_json() for c in self.copies],
            "divergences": [d.to_json() for d in self.divergences],
        }


def _rank(c: ReplicaCopy) -> tuple[int, int, int, int]:
    epoch = -1 if c.leader_epoch is None else c.leader_epoch
    return (-epoch, -c.log_end_offset, c.log_start_offset, c.broker_id)


def _epoch_text(c: ReplicaCopy) -> str:
    return "none" if c.leader_epoch is None else str(c.leader_epoch)


def choose_replica(copies: Iterable[ReplicaCopy]) -> tuple[ReplicaCopy, str]:
    """The copy to read and the stated reason, comparing the winner with the runner-up on the first
    rule that separates them (leader epoch, log end offset, log start offset, broker id), and naming
    the copies that end earlier (lagging followers)."""
    ranked = sorted(copies, key=_rank)
    if not ranked:
        raise ValueError("no copies to choose from")
    best = ranked[0]
    if len(ranked) == 1:
        return best, f"broker {best.broker_id}: the only copy"
    return best, _why(best, ranked[1], ranked) + _behind(best, ranked)


def _why(best: ReplicaCopy, other: ReplicaCopy, ranked: list[ReplicaCopy]) -> str:
    b, o = f"broker {best.broker_id}", f"broker {other.broker_id}"
    if best.leader_epoch != other.leader_epoch:
        return f"{b}: leader epoch {_epoch_text(best)} > {_epoch_text(other)} on {o}"
    same = f"same leader epoch {_epoch_text(best)}"
    if best.log_end_offset != other.log_end_offset:
        return f"{b}: log end offset {best.log_end_offset} > {other.log_end_offset} on {o} ({same})"
    if best.log_start_offset != other.log_start_offset:
        return (
            f"{b}: log start offset {best.log_start_offset} < {other.log_start_offset} on {o} "
            f"({same}, same log end offset {best.log_end_offset})"
        )
    ties = ", ".join(str(c.broker_id) for c in ranked if _rank(c)[:3] == _rank(best)[:3])
    return (
        f"{b}: lowest broker id among brokers {ties}, whose copies have the {same}, log end offset "
        f"{best.log_end_offset} and log start offset {best.log_start_offset}"
    )


def _behind(best: ReplicaCopy, ranked: list[ReplicaCopy]) -> str:
    lagging = [c for c in ranked if c.log_end_offset < best.log_end_offset]
    if not lagging:
        return ""
    return "; behind it: " + ", ".join(f"broker {c.broker_id} (ends at {c.log_end_offset})" for c in lagging)


def _batches_from(pdir: PartitionDir, start: int, errors: list[DecodeError]) -> Iterator[RecordBatch]:
    """The batches of a partition that end after ``start``, from the segment holding it (bounded memory)."""
    segs = pdir.segments
    first = 0
    for i, seg in enumerate(segs):
        if seg.base_offset <= start:
            first = i
    for seg in segs[first:]:
        for batch in iter_segment_batches(
            seg.path, partition=pdir.partition, errors=errors, verify_crc=False
        ):
            if batch.next_offset > start:
                yield batch


def _log_end_offset(pdir: PartitionDir) -> int:
    """``UnifiedLog.logEndOffset`` from the files: the last batch's next offset, else the last segment's
    base offset (an empty active segment)."""
    errors: list[DecodeError] = []
    for seg in reversed(pdir.segments):
        last = None
        for batch in iter_segment_batches(
            seg.path, partition=pdir.partition, errors=errors, verify_crc=False
        ):
            last = batch.next_offset
        if last is not None:
            return max(last, pdir.segments[-1].base_offset)
    return pdir.segments[-1].base_offset if pdir.segments else 0


class _BatchBytes:
    """Reads a batch's stored bytes back from its file (one open handle per file, closed on exit)."""

    def __init__(self) -> None:
        self._files: dict[str, Any] = {}

    def __enter__(self) -> _BatchBytes:
        return self

    def __exit__(self, *exc: object) -> None:
        for fh in self._files.values():
            fh.close()

    def __call__(self, batch: RecordBatch) -> bytes:
        fh = self._files.get(batch.file or "")
        if fh is None:
            # a segment the listing found; checked again at the open (it could be swapped meanwhile)
            fh = self._files[batch.file or ""] = open_regular_file(
                batch.file or "", kind="segment", follow_symlinks=True
            )
        fh.seek(batch.position)
        return fh.read(batch.size)


def _first_different_batch(
    mine: ReplicaCopy, theirs: ReplicaCopy, low: int, high: int
) -> tuple[BatchDigest, BatchDigest] | None:
    """The first pair of batches in [low, high) whose offsets or stored bytes differ (the whole batch,
    header included: a follower stores the leader's batch unchanged, partition leader epoch and all)."""
    left, right = mine.digests_from(low), theirs.digests_from(low)
    a, b = next(left, None), next(right, None)
    while a is not None and b is not None and min(a.next_offset, b.next_offset) <= high:
        # a batch that straddles `low` may have been rewritten by one side's cleaner: skip it
        if a.base_offset < low:
            a = next(left, None)
            continue
        if b.base_offset < low:
            b = next(right, None)
            continue
        if a != b:
            return a, b
        a, b = next(left, None), next(right, None)
    return None


def find_divergences(chosen: ReplicaCopy, other: ReplicaCopy) -> list[Divergence]:
    """How ``other`` disagrees with ``chosen``: the first batch that differs in the range both hold as
    replicated (above both cleaner checkpoints, below both log ends), leader epochs that started at
    different offsets, and records past the chosen copy's log end."""
    out: list[Divergence] = []
    part, ob, cb = chosen.partition, other.broker_id, chosen.broker_id

    def report(kind: str, offset: int | None, message: str) -> None:
        out.append(Divergence(part, ob, cb, kind, offset, message))

    starts = dict(chosen.leader_epochs)
    for epoch, start in other.leader_epochs:
        if epoch in starts and starts[epoch] != start:
            report(
                EPOCH_HISTORY,
                min(start, starts[epoch]),
                f"leader epoch {epoch} starts at offset {start} on broker {ob} but at {starts[epoch]} on "
                f"broker {cb}: the two copies have different histories (an unclean leader election?)",
            )
            break
    low = max(chosen.first_dirty_offset, other.first_dirty_offset)
    high = min(chosen.log_end_offset, other.log_end_offset)
    for c in (chosen, other):
        if c.digests_until is not None:
            high = min(high, c.digests_until)
    if low < high:
        first = _first_different_batch(chosen, other, low, high)
        if first is not None:
            a, b = first
            at = min(a.base_offset, b.base_offset)
            report(
                DIFFERENT_BATCHES,
                at,
                f"at offset {at} broker {ob} holds batch [{b.base_offset}, {b.last_offset}] "
                f"({b.size} bytes) and broker {cb} [{a.base_offset}, {a.last_offset}] ({a.size} bytes) with "
                "other bytes, in a range neither cleaner has rewritten",
            )
    if other.log_end_offset > chosen.log_end_offset:
        report(
            AHEAD_OF_CHOSEN,
            chosen.log_end_offset,
            f"broker {ob} has offsets [{chosen.log_end_offset}, {other.log_end_offset}) beyond the log end "
            f"of broker {cb}, whose copy is read (leader epoch {_epoch_text(chosen)} vs "
            f"{_epoch_text(other)}); a follower ahead of the leader holds records the leader never had, "
            "which it truncates when it next fetches",
        )
    return out


def replica_copy(broker_id: int, log_dir: LogDir, pdir: PartitionDir) -> ReplicaCopy:
    """One broker's copy of a partition, read from its files."""
    tp = (pdir.topic, pdir.partition)
    first_base = pdir.segments[0].base_offset if pdir.segments else 0
    log_start = max(log_dir.log_start_checkpoint.get(tp, 0), first_base)
    ckpt = log_dir.cleaner_checkpoint.get(tp)
    return ReplicaCopy(
        broker_id=broker_id,
        partition=pdir.partition,
        path=str(pdir.path),
        size_bytes=pdir.size_bytes,
        pdir=pdir,
        leader_epochs=read_leader_epoch_checkpoint(pdir.path / LEADER_EPOCH_CHECKPOINT),
        log_start_offset=log_start,
        log_end_offset=_log_end_offset(pdir),
        first_dirty_offset=log_start if ckpt is None or ckpt < log_start else ckpt,
    )


def compare_copies(partition: int, copies: list[ReplicaCopy]) -> ReplicaChoice:
    """:func:`choose_replica` and :func:`find_divergences` of every other copy against the chosen one."""
    chosen, reason = choose_replica(copies)
    divergences = [d for c in copies if c is not chosen for d in find_divergences(chosen, c)]
    by_broker = tuple(sorted(copies, key=lambda c: c.broker_id))
    return ReplicaChoice(partition, chosen, by_broker, reason, tuple(divergences))


@dataclass(frozen=True)
class LogDirs:
    """The log dirs of several brokers (a broker with several ``log.dirs`` appears once per dir)."""

    brokers: tuple[BrokerLogDir, ...]
    #: partitions asked for that no broker holds are an error; these are the ones some broker lacks
    notes: tuple[str, ...] = ()
    _choices: dict[int, ReplicaChoice] = field(default_factory=dict, repr=False, compare=False)

    @property
    def partitions(self) -> list[int]:
        return sorted({p.partition for b in self.brokers for p in b.log_dir.partitions})

    def copies(self, partition: int) -> list[ReplicaCopy]:
        return [
            replica_copy(b.broker_id, b.log_dir, p)
            for b in self.brokers
            for p in b.log_dir.partitions
            if p.partition == partition and p.segments
        ]

    def choice(self, partition: int) -> ReplicaChoice | None:
        """The copy of ``partition`` to read (None when no broker has a segment of it); cached."""
        if partition not in self._choices:
            copies = self.copies(partition)
            if not copies:
                return None
            self._choices[partition] = compare_copies(partition, copies)
        return self._choices[partition]

    def choices(self) -> list[ReplicaChoice]:
        return [c for c in (self.choice(p) for p in self.partitions) if c is not None]

    def to_json(self) -> dict[str, Any]:
        return {
            "brokers": [{"broker_id": b.broker_id, "log_dir": str(b.log_dir.path)} for b in self.brokers],
            "replicas": [c.to_json() for c in self.choices()],
            "notes": list(self.notes),
        }


def split_broker_prefix(text: str) -> tuple[int | None, str]:
    """``BROKER_ID=VALUE`` -> ``(id, VALUE)``, anything else -> ``(None, text)`` (``--log-dir`` and the
    per-broker options: a plain path takes the broker id from its meta.properties)."""
    head, sep, tail = text.partition("=")
    if sep and head.strip().isdigit():
        if not tail:
            raise ValueError(f"{text!r}: nothing after the broker id")
        return int(head), tail
    return None, text


def open_log_dirs(
    dirs: Mapping[int, str | os.PathLike[str]] | Iterable[str | os.PathLike[str] | tuple[int | None, str]],
    *,
    topic: str = OFFSETS_TOPIC,
    partitions: list[int] | None = None,
) -> LogDirs:
    """Open several brokers' log dirs: ``{broker_id: path}``, or paths (with optional broker ids).

    A dir given without a broker id takes it from its ``meta.properties`` (``broker.id``/``node.id``);
    one without that file is an error naming the dir. Given both, they must agree. The same partition in
    two dirs of one broker is an error (a broker keeps one copy). ``partitions`` filters; a partition no
    broker holds is an error, one that only some brokers hold is expected (replica placement).
    """
    items: list[tuple[int | None, str | os.PathLike[str]]]
    if isinstance(dirs, Mapping):
        items = [(int(k), v) for k, v in dirs.items()]  # pyright: ignore[reportArgumentType]  # broker ids
    else:
        items = [d if isinstance(d, tuple) else (None, d) for d in dirs]
    if not items:
        raise LogDirError("no log dirs given")
    brokers: list[BrokerLogDir] = []
    notes: list[str] = []
    seen: dict[tuple[int, int], Path] = {}
    given_paths: set[Path] = set()
    for given, path in items:
        resolved = Path(path).resolve()
        if resolved in given_paths:
            raise LogDirError(f"{path}: given twice")
        given_paths.add(resolved)
        broker_id = _broker_id(given, Path(path))
        try:
            logdir = open_log_dir(path, topic=topic)
        except LogDirError:
            if not (Path(path) / META_PROPERTIES).is_file():
                raise
            # a real broker log dir that hosts no replica of the topic (replica placement)
            notes.append(f"broker {broker_id} ({path}): no {topic}-N partition folders")
            logdir = LogDir(path=Path(path), partitions=())
        for pdir in logdir.partitions:
            key = (broker_id, pdir.partition)
            if key in seen:
                raise LogDirError(
                    f"{topic}-{pdir.partition} is in two log dirs of broker {broker_id}: {seen[key]} and "
                    f"{pdir.path}; a broker holds one copy of a partition"
                )
            seen[key] = pdir.path
        if partitions is not None:
            wanted = set(partitions)
            logdir = LogDir(
                path=logdir.path,
                partitions=tuple(p for p in logdir.partitions if p.partition in wanted),
                cleaner_checkpoint=logdir.cleaner_checkpoint,
                log_start_checkpoint=logdir.log_start_checkpoint,
                checkpoint_errors=logdir.checkpoint_errors,
            )
        brokers.append(BrokerLogDir(broker_id, logdir))
    if partitions is not None:
        held = {p.partition for b in brokers for p in b.log_dir.partitions}
        missing = sorted(set(partitions) - held)
        if missing:
            raise LogDirError(f"partition(s) {missing} of {topic} are in none of the log dirs given")
    brokers.sort(key=lambda b: (b.broker_id, str(b.log_dir.path)))
    return LogDirs(tuple(brokers), tuple(notes))


def _broker_id(given: int | None, path: Path) -> int:
    if given is None:
        return read_broker_id(path)
    if (path / META_PROPERTIES).is_file():
        found = read_broker_id(path)
        if found != given:
            raise LogDirError(f"{path}: given as broker {given}, but its {META_PROPERTIES} says {found}")
    return given
