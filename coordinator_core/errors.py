"""Typed decode errors: every failure names the file, partition, byte position, offset and reason."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from offsetops.coordinator_core.escape import visible


@dataclass(frozen=True, slots=True)
class DecodeError:
    """One problem found while reading ``__consumer_offsets`` data.

    ``kind`` is a stable machine-readable category; ``reason`` is for people.
    Kinds: truncated, crc_mismatch, bad_length, unknown_magic, decompression, corrupt_batch,
    corrupt_record, missing_key, unknown_value_version, corrupt_key, corrupt_value,
    corrupt_embedded (consumer-protocol bytes inside a group value), offset_order (a batch whose base
    offset is not after the previous batch's last offset), io, and the log-dir anomalies
    (see :data:`LOG_DIR_KINDS`). ``zero_tail`` and ``embedded_layout`` are notices (see :data:`NOTICE_KINDS`).
    ``skipped_bytes`` says how many bytes of the file were not read because of this problem.
    ``count`` is how many problems this entry stands for: 1, or more for the summary an
    :class:`ErrorLog` keeps of the repeats of one kind in one batch beyond its first examples.
    """

    kind: str
    reason: str
    file: str | None = None
    partition: int | None = None
    position: int | None = None
    offset: int | None = None
    skipped_bytes: int | None = None
    count: int = 1

    @property
    def is_notice(self) -> bool:
        """Reported for the record but not an error: ``--strict`` does not fail on it."""
        return self.kind in NOTICE_KINDS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = self.file or "<buffer>"
        if self.partition is not None:
            where += f" (partition {self.partition})"
        if self.position is not None:
            where += f" at byte {self.position}"
        if self.offset is not None:
            where += f", offset {self.offset}"
        times = f" ({self.count:,} errors)" if self.count != 1 else ""
        return f"{where}: {self.kind}{times}: {self.reason}"


#: Kinds that are reported but are not errors. A zero-filled tail is what ``log.preallocate=true``
#: leaves after the last batch of an active segment: the data before it is intact. ``embedded_layout``:
#: a member's consumer-protocol bytes do not follow the standard layout of their declared version, but
#: Kafka loads them as usual (see ``coordinator_core.embedded``).
NOTICE_KINDS = frozenset({"zero_tail", "embedded_layout"})

#: Kinds found while listing a partition dir and ordering its segments (``LogLoader``).
LOG_DIR_KINDS = frozenset(
    {
        "unreadable",  # a dir or segment that cannot be listed, opened or followed (permissions, loops)
        "dangling_segment",  # a .log symlink whose target is missing
        "not_a_file",  # a NNN.log that is a directory or other non-regular file
        "bad_segment_name",  # a .log whose name does not parse as an offset (the broker cannot load it)
        "leftover_file",  # .swap / .cleaned / .deleted left by an interrupted broker
        "duplicate_segment",  # two files whose names parse to the same base offset
        "segment_offset_mismatch",  # a batch below its segment's base offset (file renamed/misplaced)
        "overlapping_segments",  # a segment starting at or below the previous one's last offset
    }
)


def printable(text: object) -> str:
    """``text`` with every non-printable character escaped (newlines, ANSI escapes, bidi controls).

    Strings from the data (group ids, topics, member ids, error reasons that quote them) must never
    reach a terminal raw: a newline would forge a line of output and an escape sequence could rewrite
    the screen. Printable non-ASCII stays readable. The terminal policy of :mod:`.escape`.
    """
    return visible(text)


def count_errors(errors: list[DecodeError]) -> int:
    """How many of ``errors`` are errors (notices left out; summaries by their count), for ``--strict``."""
    return sum(e.count for e in errors if not e.is_notice)


def error_total(errors: list[DecodeError]) -> int:
    """How many problems ``errors`` stands for, notices included (summaries by their count)."""
    return sum(e.count for e in errors)


#: How many problems of one kind in one batch an :class:`ErrorLog` keeps whole.
EXAMPLES_PER_BATCH = 5


class ErrorLog(list):  # a list, so every reader of ``stats.errors`` keeps working
    """The errors of a read, with the cost of an error storm bounded: per batch and kind (the batch's
    ``file``, ``partition`` and ``position``), the first :data:`EXAMPLES_PER_BATCH` problems are kept
    whole and every further one is counted into one summary entry (``count``), which names the first
    of them. A 3 KB batch that inflates to millions of keyless records is a handful of entries, and
    :func:`count_errors` / :func:`error_total` still give the exact number.
    """

    __slots__ = ("_groups",)

    def __init__(self, errors: Iterable[DecodeError] = ()) -> None:
        super().__init__()
        # (kind, file, partition, position) -> [examples kept, index of the summary or -1, its first form]
        self._groups: dict[tuple, list[Any]] = {}
        self.extend(errors)

    def append(self, error: DecodeError) -> None:
        key = (error.kind, error.file, error.partition, error.position)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = [0, -1, None]
        if group[0] < EXAMPLES_PER_BATCH and error.count == 1:
            group[0] += 1
            list.append(self, error)
            return
        if group[1] < 0:
            group[1], group[2] = len(self), _summary(error, error.count)
            list.append(self, group[2])
        else:
            self._count(group, error.count)

    def _count(self, group: list[Any], n: int) -> None:
        """Add ``n`` to the summary of ``group`` (the summary as first made holds its reason and where)."""
        at, first = group[1], group[2]
        n += list.__getitem__(self, at).count
        list.__setitem__(self, at, DecodeError(first.kind, first.reason, first.file, first.partition,
                                               first.position, first.offset, None, n))  # fmt: skip

    def report(
        self,
        kind: str,
        reason: str,
        file: str | None,
        partition: int | None,
        position: int | None,
        offset: int,
    ) -> None:
        """``append(DecodeError(...))`` without building the error when it would only be counted (an error
        storm reports millions)."""
        group = self._groups.get((kind, file, partition, position))
        if group is not None and group[1] >= 0:
            self._count(group, 1)
        else:
            self.append(DecodeError(kind, reason, file, partition, position, offset))

    def extend(self, errors: Iterable[DecodeError]) -> None:
        for error in errors:
            self.append(error)

    def __iadd__(self, errors: Iterable[DecodeError]) -> ErrorLog:  # type: ignore[override,misc]
        self.extend(errors)
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_error_log, (list(self), self._groups))


def _summary(first: DecodeError, n: int) -> DecodeError:
    """The entry that stands for ``n`` repeats of ``first``'s kind in ``first``'s batch (``first`` may
    itself be a summary, from another log merged into this one)."""
    reason = first.reason
    if first.count == 1:
        reason = (
            f"repeated in this batch beyond the first {EXAMPLES_PER_BATCH} shown; the first repeat: {reason}"
        )
    return DecodeError(first.kind, reason, first.file, first.partition, first.position, first.offset, None, n)


def _restore_error_log(entries: list[DecodeError], groups: dict[tuple, list[Any]]) -> ErrorLog:
    log = ErrorLog()
    list.extend(log, entries)
    log._groups = groups
    return log


class OffsetsDecodeException(Exception):
    """Raised where decoding cannot go on; carries the typed :class:`DecodeError`."""

    def __init__(self, error: DecodeError):
        super().__init__(str(error))
        self.error = error
