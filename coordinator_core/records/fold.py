"""The reload's walk over a buffer of batches: the fast fold entry point of the one framing walker.

:func:`fold_buffer` steps through a buffer (a whole segment, mapped, or a Fetch response) with
:func:`~offsetops.coordinator_core.records.reader.read_entry`, so framing, CRCs, resyncs and zero
tails are checked and reported exactly as
:func:`~offsetops.coordinator_core.records.reader.read_batches` does, and hands what it reads to a
:class:`FoldTarget`: the records of each plain magic-2 batch (nearly all of an offsets topic) to
``fold_records``, every other batch to ``fold_batch``.

When the native twin (``_cfold``, a C extension) is built, runs of well-formed magic-2 batches are
walked, CRC-checked, decompressed (through :func:`decompress`) and parsed in C: records of plain batches
are folded, last writer wins, and those of transactional batches staged per producer, with the same
rules; control batches (a marker or two per transaction) resolve transactions in C too (``first_marker``,
``open_txns``, ``created``), and go to ``fold_control`` as one list when a key does not parse. The twin
reads the fold through one :class:`FoldState` (its contract, also declared in ``_cfold.pyi``). It stops,
without touching anything, at the first entry it does not take whole (legacy magic, anything
malformed, a record it cannot represent exactly), and that one entry goes through the Python path
above, which reports it. Records outside the hot case (any key but an offset commit's, a tombstone, a
value that is not a well-formed ``OffsetCommitValue`` v3) are handed to ``fold_record`` /
``fold_transactional_record`` one at a time and in log order, so every rule has one definition.
``OFFSETOPS_NATIVE=0`` turns the twin off (:mod:`~offsetops.coordinator_core.records.native` loads it and
holds the switch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import offsetops.coordinator_core.records.native as _twin
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records.batch import Record, RecordBatch
from offsetops.coordinator_core.records.compression import (
    DEFAULT_MAX_BATCH_BYTES,
    CompressionError,
    decompress,
)
from offsetops.coordinator_core.records.native import native_available
from offsetops.coordinator_core.records.reader import Scan, read_entry

__all__ = ["FoldState", "FoldTarget", "fold_buffer", "native_available", "native_commit"]

RELEASE_EVERY = 64 << 20  # drop already-folded pages of a mapped segment from RSS this often


def native_commit():
    """``commit_pending(latest, pending, scala, created)`` of the C twin when it is in use, else None
    (``created`` is the fold's dict of groups created by values that did not survive)."""
    cfold = _twin.cfold
    return cfold.commit_pending if _twin.NATIVE and cfold is not None else None


@dataclass(frozen=True, slots=True)
class FoldState:
    """Everything the C twin reads of a fold, by these names (``_cfold.pyi`` declares the same fields).

    The containers are the fold's own, updated in place by both paths; the callbacks take what the
    twin does not (see the module docstring). ``scala`` picks the coordinator's rules up to 3.x.
    """

    # key -> its winning record: (record offset, batch base offset, batch position, value or None)
    latest: dict[bytes, tuple[int, int, int, bytes | None]]
    open_txns: dict[int, dict[bytes, tuple[int, int, int, bytes | None]]]
    first_marker: dict[int, tuple[int, bool]]
    created: dict[bytes, int]
    # key -> producer ids whose open transaction stages it (Java semantics; the twin keeps it too)
    txn_keys: dict[bytes, set[int]]
    small_types: list[int]  # the tally of record types 0..255; the twin adds its offset commits to [1]
    scala: bool
    fold_record: Callable[[int, bytes | None, bytes | None, int, int, str | None], None]
    # (producer id, offset, key, value, base offset, position, file)
    fold_transactional_record: Callable[[int, int, bytes | None, bytes | None, int, int, str | None], None]
    fold_control: Callable[[int, list[Record], int, str | None], None]
    offset_order: Callable[[str | None, int, int, int], None]


class FoldTarget(Protocol):
    """What :func:`fold_buffer` folds into (``loader.PartitionFold``)."""

    def fold_state(self) -> FoldState:
        """The state the C twin folds into (the target's own containers and callbacks)."""
        ...

    # Positional-only: the walk and the C twin call these positionally, whatever the names at each site.
    def fold_records(
        self, records: list[Record], base_offset: int, position: int, file: str | None, /
    ) -> None:
        """Fold the records of one plain magic-2 batch (counted by the walk's tally)."""

    def fold_record(
        self, offset: int, key: bytes | None, value: bytes | None, base_offset: int, position: int,
        file: str | None, /,
    ) -> None:  # fmt: skip
        """Fold one record of a plain batch that is not the hot case (see the module docstring)."""

    def fold_transactional_record(
        self, pid: int, offset: int, key: bytes | None, value: bytes | None, base_offset: int,
        position: int, file: str | None, /,
    ) -> None:  # fmt: skip
        """Stage one record of a transactional batch that is not the hot case (C twin only)."""

    def fold_control(self, pid: int, records: list[Record], position: int, file: str | None, /) -> None:
        """The records of a control batch (C twin only; the walk hands control batches to fold_batch)."""

    def fold_batch(self, batch: RecordBatch) -> None:
        """Fold any other batch (control, transactional, legacy, or a plain one whose records are corrupt)."""

    def fold_tally(
        self, batches: int, nbytes: int, records: int, first: int, last: int, transactional: int, control: int
    ) -> None:
        """Count a run of batches the walk folded itself, before anything else is folded (``records``
        includes the ``control`` records of the markers the C twin resolved)."""

    def offset_order(self, file: str | None, position: int, base_offset: int, prev_last: int) -> None:
        """Report a batch whose base offset is not after the previous batch's last offset."""


def _decompress_or_none(codec: int, payload, limit: int) -> bytes | None:
    """For the C twin: the decompressed payload, or None so the Python path reports the failure."""
    try:
        return decompress(codec, payload, limit=limit)
    except CompressionError:
        return None


def fold_buffer(
    data,
    target: FoldTarget,
    *,
    report: Callable[[DecodeError], object],
    base: int = 0,
    file: str | None = None,
    partition: int | None = None,
    verify_crc: bool = True,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    scan: Scan | None = None,
    native: bool | None = None,
    start: int = 0,
    prev_last: int = -1,
) -> None:
    """Walk ``data`` (bytes or a mapped file; file position ``base`` at ``data[0]``) into ``target``,
    from ``data[start]`` (a resumed read goes on inside a segment; ``prev_last``: the last offset before).

    Offsets only increase within a buffer (``LogSegment``'s offset index rejects anything else; the base
    offset is outside the batch CRC, so a corrupt one is only seen here): each batch is checked against
    the last offset of the batch before it.
    """
    if scan is None:
        scan = Scan()
    use_native = _twin.NATIVE if native is None else native
    cfold = _twin.cfold.fold_run if use_native and _twin.cfold is not None else None
    state = target.fold_state() if cfold is not None else None
    end = len(data)
    pos = start
    next_release = RELEASE_EVERY
    # The run of batches folded through fold_records, counted in one go before anything else is folded.
    n_batches = n_bytes = n_records = n_txn = n_ctrl = 0
    first = last = -1
    legacy = False
    while pos < end:
        if pos >= next_release:
            scan.done_with(pos)
            next_release = pos + RELEASE_EVERY
        if cfold is not None and state is not None:
            pos, prev_last, nb, nby, nrec, cfirst, clast, ntxn, nctrl = cfold(
                data, pos, min(end, next_release), base, file, verify_crc, max_batch_bytes, prev_last, state,
                _decompress_or_none,
            )  # fmt: skip
            if nb:
                if not n_batches:
                    first = cfirst
                n_batches += nb
                n_bytes += nby
                n_records += nrec
                n_txn += ntxn
                n_ctrl += nctrl
                last = clast
            if pos >= end or pos >= next_release:
                continue
        # The same step as reader.walk (one entry, reported and resynced the same way), interleaved
        # here with the native runs, which a generator over walk() could not hand the position to.
        batch, nxt = read_entry(
            data,
            pos,
            end,
            base=base,
            file=file,
            partition=partition,
            report=report,
            verify_crc=verify_crc,
            max_batch_bytes=max_batch_bytes,
            scan=scan,
            legacy=legacy,
        )
        pos = nxt
        if batch is None:
            continue
        chunks = batch.plain_record_chunks()
        if chunks is not None:
            for records in chunks:
                target.fold_records(records, batch.base_offset, batch.position, file)
            if batch.base_offset <= prev_last:
                target.offset_order(file, batch.position, batch.base_offset, prev_last)
            prev_last = batch.last_offset
            if not n_batches:
                first = batch.base_offset
            n_batches += 1
            n_bytes += batch.size
            n_records += batch.record_count
            last = batch.last_offset
            continue
        if n_batches:
            target.fold_tally(n_batches, n_bytes, n_records, first, last, n_txn, n_ctrl)
            n_batches = n_bytes = n_records = n_txn = n_ctrl = 0
        if batch.base_offset <= prev_last:
            target.offset_order(file, batch.position, batch.base_offset, prev_last)
        prev_last = max(prev_last, batch.last_offset)
        legacy = legacy or batch.magic < 2
        target.fold_batch(batch)
    if n_batches:
        target.fold_tally(n_batches, n_bytes, n_records, first, last, n_txn, n_ctrl)
