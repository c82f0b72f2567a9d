"""Walk segment bytes batch by batch (``FileLogInputStream`` / ``ByteBufferLogInputStream``).

Bad input never raises and is never skipped silently: each problem becomes one
:class:`~coordinator_core.errors.DecodeError` handed to ``errors`` (a list, or any callable), and the
walk goes on where the framing allows:

- ``crc_mismatch`` and ``corrupt_batch`` (a bad header field inside a well-framed batch): that batch is
  skipped, the next one is read.
- ``truncated`` (the last batch runs past the end of the data, as after a crash mid-append),
  ``bad_length`` (a size that is negative or below the minimum for its magic) and ``unknown_magic``:
  the framing is lost, so reading that buffer/file stops.

Trailing zero bytes: a segment written with ``log.preallocate=true`` (or left by a crash on a file
system that extends files with zeros) ends in a run of zero bytes. When a batch header reads offset 0
and size 0 *and every byte from there to the end is zero*, that is the end of the log, as for the broker
after recovery, and no error is reported. A zero header followed by anything non-zero is a
``bad_length`` error.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Generator, Iterator

from crc32c import crc32c

from coordinator_core.errors import DecodeError
from coordinator_core.records.batch import (
    CODEC_MASK,
    LEGACY_OVERHEAD_V0,
    LEGACY_OVERHEAD_V1,
    LOG_OVERHEAD,
    V2_HEADER,
    V2_HEADER_SIZE,
    RecordBatch,
    decode_legacy_message,
    decode_legacy_wrapper,
)
from coordinator_core.records.compression import CompressionError, decompress

__all__ = ["DEFAULT_CHUNK_SIZE", "ErrorSink", "iter_segment_batches", "read_batches"]

DEFAULT_CHUNK_SIZE = 8 << 20
_HEAD = struct.Struct(">qi")  # offset / baseOffset, size / length
_MAGIC_AT = 16  # the magic byte sits 16 bytes into the entry in every format
_V2_MIN_SIZE = V2_HEADER_SIZE - LOG_OVERHEAD
_MIN_SIZE = {0: LEGACY_OVERHEAD_V0, 1: LEGACY_OVERHEAD_V1, 2: _V2_MIN_SIZE}
_U32 = struct.Struct(">I")

ErrorSink = list[DecodeError] | Callable[[DecodeError], object]

# What _walk stopped on.
_END, _NEED, _ZEROS, _STOP = 0, 1, 2, 3


def _sink(errors: ErrorSink) -> Callable[[DecodeError], object]:
    return errors.append if isinstance(errors, list) else errors


def _legacy_batch(
    data: bytes,
    pos: int,
    total: int,
    magic: int,
    file_pos: int,
    file: str | None,
    partition: int | None,
    verify_crc: bool,
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
        payload = decompress(codec, value)
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


def _walk(
    data: bytes,
    base: int,
    limit: int,
    file: str | None,
    partition: int | None,
    report: Callable[[DecodeError], object],
    verify_crc: bool,
) -> Generator[RecordBatch, None, tuple[int, int, int]]:
    """Yield the batches of ``data`` (which starts at file position ``base``; the data ends at ``limit``).

    Returns ``(status, pos, need)``: ``_END`` (consumed everything), ``_NEED`` (the batch at ``pos``
    needs ``need`` bytes but the buffer ends first; only when ``base + len(data) < limit``), ``_ZEROS``
    (a zero header at ``pos``: the caller decides whether the rest is padding) or ``_STOP`` (an error
    was reported and the framing is lost).
    """
    mv = memoryview(data)  # for zero-copy CRC input
    end = len(data)
    pos = 0
    head = _HEAD.unpack_from
    v2_head = V2_HEADER.unpack_from
    batch_cls = RecordBatch
    while pos < end:
        if end - pos >= V2_HEADER_SIZE and data[pos + _MAGIC_AT] == 2:
            # Fast path: one unpack for the whole magic-2 header.
            (base_offset, size, ple, _m, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq, count) = (
                v2_head(data, pos)
            )
            total = LOG_OVERHEAD + size
            if size >= _V2_MIN_SIZE and pos + total <= end:
                if verify_crc and crc32c(mv[pos + 21 : pos + total]) != crc:
                    report(
                        DecodeError(
                            "crc_mismatch",
                            f"stored CRC-32C {crc:#010x} does not match the batch",
                            file,
                            partition,
                            base + pos,
                            base_offset,
                        )
                    )
                elif count < 0 or lod < 0:
                    report(
                        DecodeError(
                            "corrupt_batch",
                            f"record count {count} / last offset delta {lod} is negative",
                            file,
                            partition,
                            base + pos,
                            base_offset,
                        )
                    )
                else:
                    yield batch_cls(
                        2,
                        base_offset,
                        base_offset + lod,
                        base + pos,
                        total,
                        attrs,
                        crc,
                        pid,
                        pepoch,
                        bseq,
                        ple,
                        base_ts,
                        max_ts,
                        count,
                        file,
                        partition,
                        data,
                        pos,
                    )
                pos += total
                continue
        # Everything else: legacy messages, and every edge (short tail, bad size, partial batch).
        rem = end - pos
        if rem < _MAGIC_AT + 1:
            if base + end < limit:
                return _NEED, pos, _MAGIC_AT + 1
            if not any(data[pos:end]):
                return _ZEROS, pos, 0
            off = head(data, pos)[0] if rem >= 12 else None
            report(
                DecodeError(
                    "truncated",
                    f"{rem} trailing bytes, too few for a batch header",
                    file,
                    partition,
                    base + pos,
                    off,
                )
            )
            return _STOP, pos, 0
        offset, size = head(data, pos)
        if offset == 0 and size == 0:
            return _ZEROS, pos, 0
        magic = data[pos + _MAGIC_AT]
        min_size = _MIN_SIZE.get(magic)
        if min_size is None:
            report(
                DecodeError(
                    "unknown_magic",
                    f"magic byte {magic} (known: 0, 1, 2)",
                    file,
                    partition,
                    base + pos,
                    offset,
                )
            )
            return _STOP, pos, 0
        if size < min_size:
            report(
                DecodeError(
                    "bad_length",
                    f"size {size} is below the minimum {min_size} for magic {magic}",
                    file,
                    partition,
                    base + pos,
                    offset,
                )
            )
            return _STOP, pos, 0
        total = LOG_OVERHEAD + size
        if base + pos + total > limit:
            report(
                DecodeError(
                    "truncated",
                    f"batch of {total} bytes runs past the end of the data ({limit - base - pos} bytes left)",
                    file,
                    partition,
                    base + pos,
                    offset,
                )
            )
            return _STOP, pos, 0
        if pos + total > end:
            return _NEED, pos, total
        if magic == 2:
            continue  # complete now that the buffer holds it: the fast path takes it
        (crc,) = _U32.unpack_from(data, pos + LOG_OVERHEAD)
        if verify_crc and zlib.crc32(mv[pos + _MAGIC_AT : pos + total]) != crc:
            report(
                DecodeError(
                    "crc_mismatch",
                    f"stored CRC-32 {crc:#010x} does not match the message",
                    file,
                    partition,
                    base + pos,
                    offset,
                )
            )
        else:
            try:
                yield _legacy_batch(data, pos, total, magic, base + pos, file, partition, verify_crc)
            except (ValueError, struct.error) as exc:
                report(DecodeError("corrupt_batch", str(exc), file, partition, base + pos, offset))
        pos += total
    # A chunk can end exactly on a batch boundary with more of the file still to come.
    return (_END if base + end >= limit else _NEED), pos, 0


def read_batches(
    buf: bytes | bytearray | memoryview,
    *,
    file: str | None = None,
    partition: int | None = None,
    start_position: int = 0,
    errors: ErrorSink,
    verify_crc: bool = True,
) -> Iterator[RecordBatch]:
    """Walk a buffer of concatenated batches of any magic (``MemoryRecords.batches``).

    ``start_position`` is the file position of ``buf[0]``, so batch positions and errors name real
    file offsets. The buffer is taken to end where the data ends: a partial last batch is ``truncated``.
    Batches keep views into ``buf``.
    """
    data = buf if isinstance(buf, bytes) else bytes(buf)
    report = _sink(errors)
    limit = start_position + len(data)
    status, pos, _need = yield from _walk(data, start_position, limit, file, partition, report, verify_crc)
    if status == _ZEROS and data[pos:].strip(b"\0"):
        report(
            DecodeError(
                "bad_length",
                "zero batch header followed by non-zero bytes",
                file,
                partition,
                start_position + pos,
                0,
            )
        )


def iter_segment_batches(
    path: str | os.PathLike[str],
    *,
    partition: int | None = None,
    errors: ErrorSink,
    verify_crc: bool = True,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> Iterator[RecordBatch]:
    """Stream the batches of one ``.log`` segment with bounded memory (``FileRecords.batches``).

    The file is read ``chunk_size`` bytes at a time; a batch bigger than a chunk gets a buffer of its
    own size. Batches keep views into the chunk they came from, so memory stays at about one chunk
    plus whatever batches the caller holds on to. An unreadable file is one ``io`` error.
    """
    file = str(path)
    report = _sink(errors)
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below, after the generator finishes
    except OSError as exc:
        report(DecodeError("io", f"cannot open: {exc}", file, partition, None, None))
        return
    with f:
        try:
            limit = os.fstat(f.fileno()).st_size
            buf = f.read(chunk_size)
        except OSError as exc:
            report(DecodeError("io", f"cannot read: {exc}", file, partition, 0, None))
            return
        base = 0
        while True:
            status, pos, need = yield from _walk(buf, base, limit, file, partition, report, verify_crc)
            if status == _NEED:
                rest = buf[pos:]
                base += pos
                try:
                    more = f.read(max(chunk_size, need - len(rest)))
                except OSError as exc:
                    report(DecodeError("io", f"cannot read: {exc}", file, partition, base, None))
                    return
                if not more:  # the file shrank under us
                    report(
                        DecodeError(
                            "truncated",
                            "file ended early (shrank while being read)",
                            file,
                            partition,
                            base,
                            None,
                        )
                    )
                    return
                buf = rest + more
                continue
            if status == _ZEROS:
                _check_zero_tail(f, buf, pos, base, file, partition, report, chunk_size)
            return


def _check_zero_tail(
    f: object,
    buf: bytes,
    pos: int,
    base: int,
    file: str,
    partition: int | None,
    report: Callable[[DecodeError], object],
    chunk_size: int,
) -> None:
    """After a zero header: the rest of the file must be zeros (preallocation), else report it."""
    chunk = buf[pos:]
    while chunk:
        if chunk.strip(b"\0"):
            report(
                DecodeError(
                    "bad_length",
                    "zero batch header followed by non-zero bytes",
                    file,
                    partition,
                    base + pos,
                    0,
                )
            )
            return
        chunk = f.read(chunk_size)  # type: ignore[attr-defined]
