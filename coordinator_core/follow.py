"""Following ``__consumer_offsets``: look at the source cheaply, and re-read only the partitions that moved.

A loaded coordinator applies each append to its cache (``CoordinatorRuntime`` replays every committed
batch into the shard it loaded once, ``GroupMetadataManager.replay``); Burrow and KMinion consume the
topic continuously. :class:`Follower` does the same for offsetops: :meth:`Follower.look` compares each
partition's :data:`Mark` (a log dir: its segments' base offsets, sizes and modification times, from one
directory listing; a live cluster: its log end offset, from ListOffsets) with the one seen at the last
read, and :meth:`Follower.apply` re-reads only the partitions whose mark moved, through the source's
resume state (``Source(state_dir=...)`` or ``Source(state_store=...)``,
:mod:`~offsetops.coordinator_core.resume`), so the read starts where the last one stopped.

Every read goes through the one :class:`~offsetops.coordinator_core.sources.source.Source`, with its
limits; what the resume state refused (truncation, a leader change, compaction it could not explain, a
corrupt file) comes back in :attr:`FollowStep.fresh` with the reason code, and a state that could not
be saved in :attr:`FollowStep.unsaved`, for the front end to report.
The marks are taken before the read, so an append that races a read is seen again by the next look.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.clock import wall_clock_ms
from offsetops.coordinator_core.sources.source import Source

if TYPE_CHECKING:
    from offsetops.coordinator_core.sources.live import LiveSource
    from offsetops.coordinator_core.sources.logdir import PartitionDir

__all__ = ["FollowStep", "Follower", "Fresh", "LogDirLook", "Mark", "source_marks"]

#: What one cheap look sees of a partition: a log dir's ``(path, ((base offset, size, mtime ms), ...))``,
#: a live partition's ``(log end offset,)``. Two equal marks mean nothing was appended, removed or rewritten.
Mark = tuple[Any, ...]

#: resume reasons that are not news: no state asked for, or none yet (the first read of a partition)
QUIET_REASONS = frozenset({"not_requested", "no_state"})


@dataclass(frozen=True, slots=True)
class Fresh:
    """A partition read from its start although a resume state was asked for: the reason code
    (``LoadStats.resume_reason``, not one of :data:`QUIET_REASONS`) and its sentence (data: escape it
    for the medium)."""

    partition: int
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class FollowStep:
    """What one :meth:`Follower.apply` did: the partitions re-read, the bytes of segment data read, how many
    reads resumed, the partitions gone, the reads that could not resume and the states not saved
    (``(partition, why)``: the next read of that partition starts over)."""

    read: tuple[int, ...]
    bytes_read: int
    resumed: int
    removed: tuple[int, ...] = ()
    fresh: tuple[Fresh, ...] = ()
    unsaved: tuple[tuple[int, str], ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.read or self.removed)

    def notices(self, topic: str = "__consumer_offsets") -> list[str]:
        """One sentence per read that could not resume and per state not saved (data in them: escape
        each for the medium)."""
        return [f"{topic}-{f.partition} read from its start ({f.reason}): {f.detail}" for f in self.fresh] + [
            f"{topic}-{part}: resume state not saved: {why}" for part, why in self.unsaved
        ]


def source_marks(source: Source, live: LiveSource | None = None) -> dict[int, Mark]:
    """Each wanted partition's :data:`Mark`: one listing of the partition dirs (the copy each partition
    is read from, with several brokers' log dirs), or one ListOffsets round on ``live``."""
    if source.client is not None:
        if live is None:
            raise ValueError("a live source is looked at through an open LiveSource")
        wanted = list(source.partitions) if source.partitions is not None else None
        return {p: (end,) for p, end in live.end_offsets(wanted).items()}
    return {pdir.partition: _mark(pdir) for pdir in source.partition_dirs()}


def _mark(pdir: PartitionDir) -> Mark:
    return str(pdir.path), tuple((s.base_offset, s.size, s.mtime_ms) for s in pdir.segments)


#: a directory whose modification time is this close to (or after) the moment it was listed may have
#: changed again within the file system's timestamp granularity: it is listed again, never trusted
TRUST_AFTER_NS = 1_000_000_000


def _trusted(mtime_ns: int, listed_mtime_ns: int, listed_at_ns: int) -> bool:
    """The directory is as it was listed: the same modification time, which was already old then."""
    return mtime_ns == listed_mtime_ns and listed_mtime_ns < listed_at_ns - TRUST_AFTER_NS


@dataclass(frozen=True, slots=True)
class _Listed:
    """A partition dir as the last listing saw it: its path, modification time (ns), when it was
    listed (wall clock, ns) and its last segment (the one a broker appends to; None: no segment)."""

    path: str
    mtime_ns: int
    at_ns: int
    active: Path | None


class LogDirLook:
    """The marks of a log dir's partitions at the cost of two stats each, while no directory changed.

    A broker appends to the last segment of a partition only; anything else it does to a partition
    (roll a segment, delete one, swap in what the cleaner wrote, truncate to a new segment) creates,
    removes or renames a file, which changes the partition dir's modification time, and partition dirs
    come and go in the log dir itself. So while the log dir and every partition dir keep the
    modification time of the last listing (and it was already old then: see :data:`TRUST_AFTER_NS`),
    each mark is the listed one with the last segment's size and time read again; otherwise
    (and at :meth:`full`) the log dir is listed again (``source_marks``).
    """

    def __init__(self, source: Source):
        self.source = source
        self._root: _Listed | None = None
        self._listed: dict[int, _Listed] = {}
        self._marks: dict[int, Mark] = {}
        #: looks that listed the log dir again
        self.full_looks = 0

    def marks(self) -> dict[int, Mark]:
        quick = self._quick()
        return quick if quick is not None else self.full()

    def full(self) -> dict[int, Mark]:
        """List the log dir again (errors of the source propagate)."""
        self.full_looks += 1
        at = wall_clock_ms() * 1_000_000  # compared with file times, which the wall clock writes
        root = _listed(Path(self.source.log_dir or ""), at, None)
        pdirs = self.source.partition_dirs()
        marks = {p.partition: _mark(p) for p in pdirs}
        listed = {
            p.partition: _listed(p.path, at, p.segments[-1].path if p.segments else None) for p in pdirs
        }
        self._root, self._marks = root, marks
        self._listed = {} if root is None or None in listed.values() else listed  # type: ignore[assignment]
        return marks

    def _quick(self) -> dict[int, Mark] | None:
        root = self._root
        if root is None or not self._listed or not _still(root):
            return None
        marks: dict[int, Mark] = {}
        for part, listed in self._listed.items():
            if not _still(listed):
                return None
            mark = self._marks[part]
            if listed.active is not None:
                try:
                    st = os.stat(listed.active)
                except OSError:
                    return None
                last = (mark[1][-1][0], st.st_size, int(st.st_mtime * 1000))
                mark = mark if mark[1][-1] == last else (mark[0], (*mark[1][:-1], last))
            marks[part] = mark
        self._marks = marks
        return marks


def _listed(path: Path, at_ns: int, active: Path | None) -> _Listed | None:
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _Listed(str(path), mtime, at_ns, active)


def _still(listed: _Listed) -> bool:
    try:
        return _trusted(os.stat(listed.path).st_mtime_ns, listed.mtime_ns, listed.at_ns)
    except OSError:
        return False


class Follower:
    """Keeps one source's coordinator caches current by re-reading only the partitions that moved.

    The reads go on from the source's resume state (``state_store``, or the files of ``state_dir``);
    without one every re-read is a whole partition, still only of the partitions that moved. Not
    thread-safe: one thread looks and applies.
    """

    def __init__(self, source: Source, *, num_partitions: int, semantics: str):
        self.source = source
        self._kw: dict[str, Any] = {"num_partitions": num_partitions, "semantics": semantics}
        self._marks: dict[int, Mark] = {}
        self._caches: dict[int, CoordinatorCache] = {}
        self._live: LiveSource | None = None
        # a log dir is looked at through its listing kept between looks; brokers' copies list every time
        plain = source.client is None and not source.broker_log_dirs and source.log_dir
        self._look = LogDirLook(source) if plain else None

    @property
    def caches(self) -> list[CoordinatorCache]:
        """The latest cache of every partition followed, in partition order."""
        return [self._caches[p] for p in sorted(self._caches)]

    def look(self) -> dict[int, Mark | None]:
        """The partitions whose mark moved since their last read (None: the partition is gone); {} when
        nothing moved. Errors of the source (a log dir gone, a cluster lost) propagate."""
        marks = self._current_marks()
        moved: dict[int, Mark | None] = {p: m for p, m in marks.items() if self._marks.get(p) != m}
        moved.update({p: None for p in self._marks.keys() - marks.keys()})
        return moved

    def apply(self, moved: dict[int, Mark | None]) -> FollowStep:
        """Re-read the partitions of ``moved`` (from :meth:`look`) and drop the ones gone."""
        removed = tuple(sorted(p for p, m in moved.items() if m is None))
        for p in removed:
            self._marks.pop(p, None)
            self._caches.pop(p, None)
        wanted = tuple(sorted(p for p, m in moved.items() if m is not None))
        caches = self._read(wanted) if wanted else []
        fresh, unsaved = [], []
        for cache in caches:
            part, s = cache.partition if cache.partition is not None else -1, cache.stats
            if s.resume_reason is not None and s.resume_reason not in QUIET_REASONS:
                fresh.append(Fresh(part, s.resume_reason, s.resume_detail or s.resume_reason))
            if s.state_error:
                unsaved.append((part, s.state_error))
            self._caches[part] = cache
            self._marks[part] = moved[part]  # type: ignore[assignment]
        return FollowStep(
            read=tuple(c.partition for c in caches if c.partition is not None),
            bytes_read=sum(c.stats.bytes_read for c in caches),
            resumed=sum(c.stats.resumed for c in caches),
            removed=removed,
            fresh=tuple(fresh),
            unsaved=tuple(unsaved),
        )

    def refresh(self) -> FollowStep:
        """Look and apply every partition, moved or not: the resume state checks each one against the log
        (a change a look cannot see, such as a truncation back to the same size, is caught here)."""
        marks = self._current_marks(full=True)
        moved: dict[int, Mark | None] = dict(marks)
        moved.update({p: None for p in self._marks.keys() - marks.keys()})
        return self.apply(moved)

    def close(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.close()

    def _current_marks(self, *, full: bool = False) -> dict[int, Mark]:
        if self._look is not None:
            return self._look.full() if full else self._look.marks()
        if self.source.client is not None and self._live is None:
            self._live = self.source.live()
        try:
            return source_marks(self.source, self._live)
        except Exception:
            self.close()  # a lost connection is rebuilt by the next look
            raise

    def _read(self, partitions: Iterable[int]) -> list[CoordinatorCache]:
        return replace(self.source, partitions=tuple(partitions)).load_caches(**self._kw)
