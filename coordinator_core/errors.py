"""Typed decode errors: every failure names the file, partition, byte position, offset and reason."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class DecodeError:
    """One problem found while reading ``__consumer_offsets`` data.

    ``kind`` is a stable machine-readable category; ``reason`` is for people.
    Kinds: truncated, crc_mismatch, bad_length, unknown_magic, decompression, corrupt_batch,
    corrupt_record, missing_key, unknown_value_version, corrupt_key, corrupt_value, io.
    """

    kind: str
    reason: str
    file: str | None = None
    partition: int | None = None
    position: int | None = None
    offset: int | None = None

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


class OffsetsDecodeException(Exception):
    """Raised where decoding cannot go on; carries the typed :class:`DecodeError`."""

    def __init__(self, error: DecodeError):
        super().__init__(str(error))
        self.error = error
