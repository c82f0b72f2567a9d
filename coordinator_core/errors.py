"""Typed decode errors: every failure names the file, partition, byte position, offset and reason."""

from __future__ import annotations

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
    """

    kind: str
    reason: str
    file: str | None = None
    partition: int | None = None
    position: int | None = None
    offset: int | None = None
    skipped_bytes: int | None = None

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
        return f"{where}: {self.kind}: {self.reason}"


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
    """How many of ``errors`` are errors (notices left out), for ``--strict`` exit codes."""
    return sum(1 for e in errors if not e.is_notice)


class OffsetsDecodeException(Exception):
    """Raised where decoding cannot go on; carries the typed :class:`DecodeError`."""

    def __init__(self, error: DecodeError):
        super().__init__(str(error))
        self.error = error
