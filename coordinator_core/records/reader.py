"""Walk segment bytes batch by batch (``FileLogInputStream`` / ``ByteBufferLogInputStream``).

This is the one framing walker: the general reader below and the reload's fold
(:mod:`~offsetops.coordinator_core.records.fold`) both step through :func:`read_entry`; the fold's native twin
takes runs of well-formed magic-2 batches and hands every other entry back to it. Bad input never raises
and is never skipped silently: each problem becomes one
:class:`~offsetops.coordinator_core.errors.DecodeError` handed to ``errors`` (a list, or any callable),
and the walk goes on:

- ``crc_mismatch`` and ``corrupt_batch`` (a bad header field inside a well-framed batch): that batch is
  skipped, the next one is read.
- ``truncated`` (the last batch runs past the end of the data, as after a crash mid-append),
  ``bad_length`` (a size below the minimum for its magic, above ``max_batch_bytes``, or past the end of
  the data when a later batch shows it was not a tail) and ``unknown_magic``: the framing is lost.
  The reader then *resyncs*: it scans forward for the next position that holds a plausible magic-2
  batch header whose CRC-32C matches its bytes (size within bounds, record count not negative) and
  resumes there. The error says how many bytes were skipped and where reading resumed, or that the
  rest of the segment was skipped. Legacy (magic 0/1) data is not resynced: a CRC-32 over arbitrary
  bytes is too weak a signal to trust a guessed message boundary in a format without a batch header.

Zero-filled regions: a segment written with ``log.preallocate=true`` (or left by a crash on a file
system that extends files with zeros) ends in a run of zero bytes. When a batch header reads offset 0
and size 0 *and every byte from there to the end is zero*, that is the end of the valid data, as for the
broker after recovery. It is reported as a ``zero_tail`` notice with the number of bytes skipped (not an
error: ``--strict`` ignores it). The zeros are checked without reading them into memory: holes of a
sparse file are skipped with ``SEEK_DATA``, other pages are scanned a chunk at a time and released.
A zero region followed by data is a ``bad_length`` error, after which the reader resyncs. Fewer than 12
trailing zero bytes are a ``truncated`` error instead: they could be the start of a batch at offset 0
that was cut before its size field, and no real batch header starts with 12 zero bytes.

Memory is bounded whatever the bytes say: a batch bigger than ``max_batch_bytes`` (``message.max.bytes``
style, default :data:`~offsetops.coordinator_core.records.compression.DEFAULT_MAX_BATCH_BYTES`) is a
``bad_length`` error, and a compressed payload may not inflate beyond it either.

Size: one walker, every framing rule and its error in one place, is the point of this module.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
import zlib
from collections.abc import Callable, Iterator

from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records.batch import (
    CODEC_MASK,
    LEGACY_OVERHEAD_V0,
    LEGACY_OVERHEAD_V1,
    LOG_OVERHEAD,
    V2_HEADER,
    V2_HEADER_SIZE,
    V2_MIN_SIZE,
    RecordBatch,
    decode_legacy_message,
    decode_legacy_wrapper,
)
from offsetops.coordinator_core.records.compression import (
    DEFAULT_MAX_BATCH_BYTES,
    CompressionError,
    decompress,
)
from offsetops.coordinator_core.records.crc import crc32c
from offsetops.coordinator_core.untrusted import open_regular_file

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_MAX_BATCH_BYTES",
    "ErrorSink",
    "Scan",
    "iter_segment_batches",
    "read_batches",
    "read_entry",
]

DEFAULT_CHUNK_SIZE = 8 << 20
_HEAD = struct.Struct(">qi")  # offset / baseOffset, size / length
_MAGIC_AT = 16  # the magic byte sits 16 bytes into the entry in every format
_MIN_SIZE = {0: LEGACY_OVERHEAD_V0, 1: LEGACY_OVERHEAD_V1, 2: V2_MIN_SIZE}
_U32 = struct.Struct(">I")
_MAGIC2 = b"\x02"
#: How many bytes of CRC a resync may compute per byte it scans (beyond one batch's worth).
RESYNC_CRC_PER_BYTE = 8
_UNKNOWN_ATTRIBUTES = ~0x7F & 0xFFFF  # DefaultRecordBatch uses attribute bits 0-6
_MAX_CODEC = 4  # zstd, the highest CompressionType id

ErrorSink = list[DecodeError] | Callable[[DecodeError], object]


def _sink(errors: ErrorSink) -> Callable[[DecodeError], object]:
    return errors.append if isinstance(errors, list) else errors


class Scan:
    """How a walk over one buffer may look ahead: the file (for ``SEEK_DATA``) and page release.

    ``fd`` is the open segment file when the buffer maps it, so that holes of a sparse file are skipped
    without touching them; ``release(upto)`` drops pages before ``upto`` from memory (mapped files);
    ``chunk`` is how much is scanned between releases.
    """

    __slots__ = ("chunk", "fd", "release")

    def __init__(
        self,
        fd: int | None = None,
        release: Callable[[int], None] | None = None,
        chunk: int = DEFAULT_CHUNK_SIZE,
    ):
        self.fd = fd
        self.release = release
        self.chunk = max(1 << 16, chunk)

    def next_data(self, pos: int, end: int) -> int:
        """The first position at or after ``pos`` that is not in a hole of the file (``end`` if none)."""
        if self.fd is None or not hasattr(os, "SEEK_DATA"):
            return pos
        try:
            return min(end, os.lseek(self.fd, pos, os.SEEK_DATA))
        except OSError as exc:  # ENXIO: only a hole remains; anything else: the file system cannot tell
            return end if exc.errno == errno.ENXIO else pos

    def done_with(self, pos: int) -> None:
        if self.release is not None:
            self.release(pos)


_NO_SCAN = Scan()


def zero_run_end(data, pos: int, end: int, scan: Scan = _NO_SCAN) -> int:
    """The first non-zero byte at or after ``pos`` (``end`` if there is none), without copying the run."""
    step = scan.chunk
    i = pos
    while i < end:
        i = scan.next_data(i, end)
        if i >= end:
            break
        j = min(end, i + step)
        chunk = data[i:j]
        rest = chunk.lstrip(b"\0")
        if rest:
            return j - len(rest)
        i = j
        scan.done_with(i)
    return end


def resync(data, pos: int, end: int, max_batch_bytes: int, scan: Scan = _NO_SCAN) -> int | None:
    """The resync rule: the first position after ``pos`` holding a plausible magic-2 batch.

    Plausible means: magic byte 2, a size between the v2 header size and ``max_batch_bytes`` that ends
    inside the data, attributes with no unknown bit and a known codec, a record count from 0 to the last
    offset delta + 1, and a CRC-32C that matches. Returns None when no such position exists before ``end``.

    The cost is linear in the bytes scanned: checking a candidate's CRC costs its claimed size, so
    crafted data with a fake header every few bytes, each claiming to run to the end, would make it
    quadratic. A resync spends at most ``max_batch_bytes`` plus :data:`RESYNC_CRC_PER_BYTE` bytes of
    CRC per byte it has scanned; a candidate beyond that budget is passed over (as a failed check).
    """
    find = data.find
    i = pos + 1 + _MAGIC_AT
    unpack = V2_HEADER.unpack_from
    mv = memoryview(data)
    next_release = i + scan.chunk
    checked = 0  # bytes of CRC computed so far
    while i < end:
        if scan.fd is not None:
            nxt = scan.next_data(i, end)
            if nxt >= end:
                return None
            i = max(i, nxt)
        stop = min(end, i + scan.chunk)
        j = find(_MAGIC2, i, stop)
        if j < 0:
            i = stop
            if i >= next_release:
                scan.done_with(i - _MAGIC_AT - 1)
                next_release = i + scan.chunk
            continue
        start = j - _MAGIC_AT
        i = j + 1
        if end - start < V2_HEADER_SIZE:
            return None
        (_b, size, _e, _m, crc, attrs, lod, _t, _x, _p, _pe, _s, count) = unpack(data, start)
        total = LOG_OVERHEAD + size
        if (
            V2_MIN_SIZE <= size <= max_batch_bytes
            and start + total <= end
            and 0 <= count <= lod + 1
            and not attrs & _UNKNOWN_ATTRIBUTES
            and attrs & CODEC_MASK <= _MAX_CODEC
            and checked + total <= max_batch_bytes + RESYNC_CRC_PER_BYTE * (start - pos)
        ):
            checked += total
            if crc32c(mv[start + 21 : start + total]) == crc:
                return start
    return None


def _legacy_batch(
    data,
    pos: int,
    total: int,
    magic: int,
    file_pos: int,
    file: str | None,
    partition: int | None,
    verify_crc: bool,
    max_batch_bytes: int,
) -> RecordBatch:
    """One top-level legacy message as a batch (raises ValueError if its key/value framing is bad)."""
    offset, crc, _magic, attrs, ts, key, value = decode_legacy_message(data, pos, pos + total)
    codec = attrs & CODEC_MASK
    batch = RecordBatch(
        magic,
        offset,
        offset,
        file_pos,
        total,
        attrs,
        crc,
        -1,
        -1,
        -1,
        -1,
        ts,
        ts,
        1,
        file,
        partition,
        data,
        pos,
    )
    if codec == 0:
        batch._legacy_records = [(offset, ts, key, value)]
        return batch
    # A compressed wrapper: its base offset and count are only known after deep iteration
    # (AbstractLegacyRecordBatch.baseOffset does the same), so decode now and keep the records.
    # A failure is raised later by iter_records(), like a corrupt magic-2 payload.
    kind = "decompression"
    try:
        if value is None:
            raise CompressionError("compressed wrapper message has a null value")
        payload = decompress(codec, value, limit=max_batch_bytes)
        kind = "corrupt_record"
        records = decode_legacy_wrapper(payload, offset, magic, attrs, ts, verify_crc)
    except (CompressionError, ValueError, struct.error) as exc:
        batch.record_count = 0
        batch._legacy_error = DecodeError(kind, str(exc), file, partition, file_pos, offset)
        return batch
    batch.base_offset = records[0][0]
    batch.record_count = len(records)
    batch._legacy_records = records
    return batch


def _framing_lost(
    data,
    pos: int,
    end: int,
    base: int,
    kind: str,
    reason: str,
    offset: int | None,
    file: str | None,
    partition: int | None,
    report: Callable[[DecodeError], object],
    max_batch_bytes: int,
    scan: Scan,
    legacy: bool,
    tail_kind: str | None,
) -> int:
    """Report a framing loss at ``pos`` with what it cost, and return where reading resumes.

    ``tail_kind`` is the kind to report instead when nothing valid follows (a batch that runs past the
    end is a partial last batch, ``truncated``, unless a later batch shows its length was corrupt).
    """
    resume = None if legacy else resync(data, pos, end, max_batch_bytes, scan)
    if resume is None:
        kind = tail_kind or kind
        how = f"skipped the remaining {end - pos} bytes"
        how += " (no resync in message format v0/v1)" if legacy else " (no later batch with a valid CRC)"
        resume = end
    else:
        how = f"skipped {resume - pos} bytes, resumed at byte {base + resume} (next batch with a valid CRC)"
    report(DecodeError(kind, f"{reason}; {how}", file, partition, base + pos, offset, resume - pos))
    return resume


def read_entry(
    data,
    pos: int,
    end: int,
    *,
    base: int = 0,
    file: str | None = None,
    partition: int | None = None,
    report: Callable[[DecodeError], object],
    verify_crc: bool = True,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    scan: Scan = _NO_SCAN,
    legacy: bool = False,
) -> tuple[RecordBatch | None, int]:
    """Read the entry at ``data[pos]`` (file position ``base + pos``): ``(batch or None, next pos)``.

    Every problem is reported; ``next pos`` is where reading goes on (``end`` when nothing is left).
    ``legacy`` says the walk has seen magic 0/1 data (no resync then). A batch that lives in anything
    but a ``bytes`` buffer (a mapped file) gets a copy of its own bytes, so it outlives the mapping.
    """
    rem = end - pos
    if rem < _MAGIC_AT + 1:
        return _short_tail(data, pos, end, base, file, partition, report)
    offset, size = _HEAD.unpack_from(data, pos)
    magic = data[pos + _MAGIC_AT]

    def lost(
        kind: str, reason: str, off: int | None = offset, tail_kind: str | None = None
    ) -> tuple[None, int]:
        nxt = _framing_lost(
            data, pos, end, base, kind, reason, off, file, partition, report, max_batch_bytes, scan, legacy,
            tail_kind,
        )  # fmt: skip
        return None, nxt

    if offset == 0 and size == 0:
        zend = zero_run_end(data, pos, end, scan)
        if zend >= end:
            report(_zero_tail(end - pos, file, partition, base + pos))
            return None, end
        return lost("bad_length", f"{zend - pos} zero bytes (a zero batch header) followed by data", 0)
    min_size = _MIN_SIZE.get(magic)
    if min_size is None:
        return lost("unknown_magic", f"magic byte {magic} (known: 0, 1, 2)")
    if size < min_size:
        return lost("bad_length", f"size {size} is below the minimum {min_size} for magic {magic}")
    total = LOG_OVERHEAD + size
    if size > max_batch_bytes:
        return lost("bad_length", f"size {size} is above the batch limit of {max_batch_bytes} bytes")
    if pos + total > end:
        reason = f"batch of {total} bytes runs past the end of the data ({rem} bytes left)"
        return lost("bad_length", reason, tail_kind="truncated")
    own = data if type(data) is bytes else data[pos : pos + total]
    start = pos if own is data else 0
    if magic == 2:
        (base_offset, _size, ple, _m, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq, count) = (
            V2_HEADER.unpack_from(own, start)
        )
        if verify_crc and crc32c(memoryview(own)[start + 21 : start + total]) != crc:
            reason = f"stored CRC-32C {crc:#010x} does not match the batch"
            report(DecodeError("crc_mismatch", reason, file, partition, base + pos, base_offset))
            return None, pos + total
        if count < 0 or lod < 0:
            reason = f"record count {count} / last offset delta {lod} is negative"
            report(DecodeError("corrupt_batch", reason, file, partition, base + pos, base_offset))
            return None, pos + total
        batch = RecordBatch(
            2, base_offset, base_offset + lod, base + pos, total, attrs, crc, pid, pepoch, bseq, ple,
            base_ts, max_ts, count, file, partition, own, start,
        )  # fmt: skip
        if max_batch_bytes != DEFAULT_MAX_BATCH_BYTES:
            batch._limit = max_batch_bytes
        return batch, pos + total
    legacy_batch = _legacy_entry(
        own, start, total, magic, offset, base + pos, file, partition, report, verify_crc, max_batch_bytes
    )
    return legacy_batch, pos + total


def _short_tail(
    data,
    pos: int,
    end: int,
    base: int,
    file: str | None,
    partition: int | None,
    report: Callable[[DecodeError], object],
) -> tuple[None, int]:
    """The last bytes of ``data``, too few for a batch header: a zero tail (a notice) or truncated."""
    rem = end - pos
    if rem >= LOG_OVERHEAD and not any(data[pos:end]):
        report(_zero_tail(rem, file, partition, base + pos))
        return None, end
    off = _HEAD.unpack_from(data, pos)[0] if rem >= 12 else None
    reason = f"{rem} trailing bytes, too few for a batch header"
    report(DecodeError("truncated", f"{reason}; skipped them", file, partition, base + pos, off, rem))
    return None, end


def _legacy_entry(
    own,
    start: int,
    total: int,
    magic: int,
    offset: int,
    position: int,
    file: str | None,
    partition: int | None,
    report: Callable[[DecodeError], object],
    verify_crc: bool,
    max_batch_bytes: int,
) -> RecordBatch | None:
    """A magic 0/1 message (its CRC-32 checked) as a batch, or None after a reported problem."""
    (crc,) = _U32.unpack_from(own, start + LOG_OVERHEAD)
    if verify_crc and zlib.crc32(memoryview(own)[start + _MAGIC_AT : start + total]) != crc:
        reason = f"stored CRC-32 {crc:#010x} does not match the message"
        report(DecodeError("crc_mismatch", reason, file, partition, position, offset))
        return None
    try:
        return _legacy_batch(own, start, total, magic, position, file, partition, verify_crc, max_batch_bytes)
    except (ValueError, struct.error) as exc:
        report(DecodeError("corrupt_batch", str(exc), file, partition, position, offset))
        return None


def _zero_tail(n: int, file: str | None, partition: int | None, position: int) -> DecodeError:
    return DecodeError(
        "zero_tail",
        f"{n} zero bytes after the last batch (preallocated or crashed segment): end of the valid data",
        file,
        partition,
        position,
        None,
        n,
    )


def walk(
    data,
    *,
    base: int = 0,
    file: str | None = None,
    partition: int | None = None,
    report: Callable[[DecodeError], object],
    verify_crc: bool = True,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    scan: Scan = _NO_SCAN,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[RecordBatch]:
    """Yield every batch of ``data`` (bytes or a mapped file) from ``data[start]`` (a resumed read goes
    on inside a segment) up to ``data[stop]`` (a batch boundary), reporting and resyncing as documented."""
    pos = start
    end = len(data) if stop is None else min(stop, len(data))
    legacy = False
    next_release = start + scan.chunk
    while pos < end:
        batch, pos = read_entry(
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
        if batch is not None:
            legacy = legacy or batch.magic < 2
            yield batch
        if pos >= next_release:
            scan.done_with(pos)
            next_release = pos + scan.chunk


def read_batches(
    buf: bytes | bytearray | memoryview,
    *,
    file: str | None = None,
    partition: int | None = None,
    start_position: int = 0,
    errors: ErrorSink,
    verify_crc: bool = True,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> Iterator[RecordBatch]:
    """Walk a buffer of concatenated batches of any magic (``MemoryRecords.batches``).

    ``start_position`` is the file position of ``buf[0]``, so batch positions and errors name real
    file offsets. The buffer is taken to end where the data ends: a partial last batch is ``truncated``.
    Batches keep views into ``buf``.
    """
    data = buf if isinstance(buf, bytes) else bytes(buf)
    yield from walk(
        data,
        base=start_position,
        file=file,
        partition=partition,
        report=_sink(errors),
        verify_crc=verify_crc,
        max_batch_bytes=max_batch_bytes,
    )


def iter_segment_batches(
    path: str | os.PathLike[str],
    *,
    partition: int | None = None,
    errors: ErrorSink,
    verify_crc: bool = True,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> Iterator[RecordBatch]:
    """Stream the batches of one ``.log`` segment with bounded memory (``FileRecords.batches``).

    The file is memory-mapped; pages are released every ``chunk_size`` bytes, and each batch gets a copy
    of its own bytes, so memory stays at about one chunk plus whatever batches the caller holds on to.
    An unreadable file is one ``io`` error.
    """
    file = str(path)
    report = _sink(errors)
    try:
        f = open_regular_file(path, kind="segment", follow_symlinks=True)
    except OSError as exc:
        report(DecodeError("io", f"cannot open: {exc}", file, partition, None, None))
        return
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            report(DecodeError("io", f"cannot read: {exc}", file, partition, 0, None))
            return
        with mm:
            scan = Scan(f.fileno(), page_release(mm), chunk_size)
            yield from walk(
                mm,
                file=file,
                partition=partition,
                report=report,
                verify_crc=verify_crc,
                max_batch_bytes=max_batch_bytes,
                scan=scan,
            )


def page_release(mm: mmap.mmap) -> Callable[[int], None]:
    """A ``release(upto)`` for a read-only mapping: pages before ``upto`` are dropped from RSS."""

    def release(upto: int) -> None:
        # Clean file pages: dropping them keeps RSS flat; touching them again just re-reads the file.
        page = upto - upto % mmap.PAGESIZE
        if page > 0 and hasattr(mm, "madvise"):
            mm.madvise(mmap.MADV_DONTNEED, 0, page)

    return release
