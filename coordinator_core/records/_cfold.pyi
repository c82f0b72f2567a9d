"""The interface of the compiled twin (``_cfold.c``), for the type checker; ``native.INTERFACE`` is its
version. ``fold_run`` reads the fold through the fields of :class:`~.fold.FoldState` and no others."""

import mmap
from collections.abc import Callable

from offsetops.coordinator_core.records.fold import FoldState

#: The calling convention; ``native.py`` refuses a build whose number differs from its own.
INTERFACE: int

def fold_run(
    data: bytes | bytearray | memoryview | mmap.mmap,
    pos: int,
    limit: int,
    base: int,
    file: str | None,
    verify_crc: bool,
    max_batch_bytes: int,
    prev_last: int,
    state: FoldState,
    decompress: Callable[[int, memoryview, int], bytes | None],
    /,
) -> tuple[int, int, int, int, int, int, int, int, int]:
    """Fold the run of plain magic-2 batches from ``pos`` up to ``limit`` into ``state``: (position
    reached, last offset, batches, bytes, records, first offset, last offset, transactional batches,
    control records)."""

def commit_pending(
    latest: dict[bytes, tuple[int, int, int, bytes | None]],
    pending: dict[bytes, tuple[int, int, int, bytes | None]],
    scala: bool,
    created: dict[bytes, int],
    /,
) -> None:
    """Apply a committed transaction's offsets to ``latest``; the losers go to ``created``."""

def decode_records(
    data: bytes | memoryview, pos: int, end: int, count: int, base_offset: int, base_timestamp: int, /
) -> list[tuple[int, int, bytes | None, bytes | None]] | None:
    """The records of a magic-2 records section, or None where the Python parser decides."""

def offset_commit_key(data: bytes | bytearray | memoryview, /) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an OffsetCommitKey (type 0 or 1), or None where Python decides."""

def offset_commit_value(
    data: bytes | bytearray | memoryview, /
) -> tuple[int, int, int, str, int, int, int] | None:
    """(version, offset, leader_epoch, metadata, commit_timestamp, expire_timestamp, end) of an
    OffsetCommitValue v0-v3 or v4 without tagged fields, or None where the Python reader decides."""

def crc32c(data: bytes | memoryview, /) -> int:
    """CRC-32C of a bytes-like object."""
