"""Record batches of every message format: ``DefaultRecordBatch`` (magic 2) and ``LegacyRecord`` (0/1).

Layouts (all big-endian; Kafka's ``Records.LOG_OVERHEAD`` = offset int64 + size int32 precedes each):

magic 2, ``DefaultRecordBatch`` (61-byte header)::

    baseOffset int64 | length int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32 (CRC-32C of
    attributes..end) | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 |
    producerId int64 | producerEpoch int16 | baseSequence int32 | recordCount int32 | records...

    record (``DefaultRecord``): length varint | attributes int8 | timestampDelta varlong |
    offsetDelta varint | keyLength varint | key | valueLength varint | value | headerCount varint | headers

magic 0/1, ``LegacyRecord``::

    offset int64 | size int32 | crc uint32 (CRC-32 of magic..end) | magic int8 | attributes int8 |
    [timestamp int64, magic 1 only] | keyLength int32 | key | valueLength int32 | value
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import offsetops.coordinator_core.records.native as _twin
from offsetops.coordinator_core.errors import DecodeError, OffsetsDecodeException
from offsetops.coordinator_core.records.compression import (
    DEFAULT_MAX_BATCH_BYTES,
    NONE,
    CompressionError,
    decompress,
)

__all__ = [
    "CONTROL_FLAG",
    "DELETE_HORIZON_FLAG",
    "LOG_APPEND_TIME",
    "LOG_OVERHEAD",
    "NO_TIMESTAMP",
    "TIMESTAMP_TYPE_FLAG",
    "TRANSACTIONAL_FLAG",
    "V2_HEADER_SIZE",
    "V2_MIN_SIZE",
    "Record",
    "RecordBatch",
    "decode_legacy_message",
]

Record = tuple[int, int, "bytes | None", "bytes | None"]
"""``(offset, timestamp, key, value)``: one record, as :meth:`RecordBatch.iter_records` yields it."""

LOG_OVERHEAD = 12  # Records.LOG_OVERHEAD: offset int64 + size int32
V2_HEADER_SIZE = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
V2_MIN_SIZE = V2_HEADER_SIZE - LOG_OVERHEAD  # the smallest size field of a magic-2 batch (no records)
LEGACY_OVERHEAD_V0 = 14  # LegacyRecord.RECORD_OVERHEAD_V0 (crc, magic, attrs, key len, value len)
LEGACY_OVERHEAD_V1 = 22  # LegacyRecord.RECORD_OVERHEAD_V1 (+ timestamp)
NO_TIMESTAMP = -1  # RecordBatch.NO_TIMESTAMP
#: The most records decoded into memory at once from a batch that holds more (an inflated batch of 7-byte
#: records holds millions): the fold takes them a chunk at a time.
RECORD_CHUNK = 65536
# The smallest DefaultRecord: length, attributes, timestamp delta, offset delta, key length, value
# length and header count, one byte each.
MIN_RECORD_SIZE = 7

CODEC_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40
CREATE_TIME, LOG_APPEND_TIME = 0, 1

# baseOffset, length, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_LEGACY_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
# Zig-zag decoding of every 1-byte varint, so the hot loop does one index instead of four operations.
_ZIGZAG1 = tuple((b >> 1) ^ -(b & 1) for b in range(0x80))


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varint/varlong (``ByteUtils.readVarint``/``readVarlong``) at ``pos``: (value, next pos)."""
    result = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


@dataclass(slots=True)
class RecordBatch:
    """One batch as stored in a segment: a ``DefaultRecordBatch`` (magic 2) or one top-level legacy
    message (``AbstractLegacyRecordBatch``: a plain message is a batch of one record, a compressed
    wrapper a batch of its inner messages).

    ``position`` is the byte offset of the batch in its file and ``size`` its total size in bytes,
    the 12-byte log overhead included (``FileChannelRecordBatch.sizeInBytes``).
    """

    magic: int
    base_offset: int
    last_offset: int
    position: int
    size: int
    attributes: int
    crc: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    base_timestamp: int
    max_timestamp: int
    record_count: int
    file: str | None = None
    partition: int | None = None
    # The buffer the batch lives in (the reader's chunk, not a copy) and where the batch starts in it.
    # A bytes object rather than a memoryview: indexing and slicing bytes is what makes the record loop
    # fast, and slicing out key and value copies only those.
    _data: bytes = field(default=b"", repr=False, compare=False)
    _start: int = field(default=0, repr=False, compare=False)
    # Legacy only: records decoded by the reader (it has to, to learn a wrapper's base offset) or
    # the error that stopped it, raised from iter_records().
    _legacy_records: list[Record] | None = field(default=None, repr=False, compare=False)
    _legacy_error: DecodeError | None = field(default=None, repr=False, compare=False)
    # The most a compressed payload may inflate to (the reader's ``max_batch_bytes``).
    _limit: int = field(default=DEFAULT_MAX_BATCH_BYTES, repr=False, compare=False)

    # Derived from ``attributes``; properties so that building a batch stays cheap on the hot path.
    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CREATE_TIME, 1 = LOG_APPEND_TIME (``TimestampType``); magic 0 has CREATE_TIME by default."""
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_FLAG else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_FLAG)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: with attribute bit 0x40 the cleaner stored the delete horizon in baseTimestamp."""
        if self.magic >= 2 and self.attributes & DELETE_HORIZON_FLAG:
            return self.base_timestamp
        return None

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def raw(self) -> bytes:
        """The batch's bytes as stored (log overhead included)."""
        return self._data[self._start : self._start + self.size]

    def _error(self, kind: str, reason: str) -> OffsetsDecodeException:
        return OffsetsDecodeException(
            DecodeError(kind, reason, self.file, self.partition, self.position, self.base_offset)
        )

    def _payload(self) -> tuple[bytes, int, int]:
        """A magic-2 batch's records section as ``(data, pos, end)``, decompressed if need be."""
        start = self._start
        codec = self.attributes & CODEC_MASK
        if codec == NONE:
            return self._data, start + V2_HEADER_SIZE, start + self.size
        payload = memoryview(self._data)[start + V2_HEADER_SIZE : start + self.size]
        data = decompress(codec, payload, limit=self._limit)
        return data, 0, len(data)

    def records(self) -> list[Record]:
        """All records as a list of ``(offset, timestamp, key, value)``; see :meth:`iter_records`."""
        if self.magic < 2:
            if self._legacy_error is not None:
                raise OffsetsDecodeException(self._legacy_error)
            return list(self._legacy_records or ())
        try:
            data, pos, end = self._payload()
        except CompressionError as exc:
            raise self._error("decompression", str(exc)) from exc
        if self.record_count > (end - pos) // MIN_RECORD_SIZE:
            # Checked before decoding, so a bogus count cannot make the loop build a huge list.
            raise self._error(
                "corrupt_record",
                f"record count {self.record_count} cannot fit in {end - pos} bytes of records "
                f"(a record takes at least {MIN_RECORD_SIZE})",
            )
        log_append_ts = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_FLAG else None
        try:
            return decode_v2_records(
                data, pos, end, self.record_count, self.base_offset, self.base_timestamp, log_append_ts
            )
        except CorruptRecord as exc:
            raise self._error("corrupt_record", str(exc)) from None
        except (IndexError, ValueError) as exc:
            raise self._error("corrupt_record", f"record runs past the batch: {exc}") from exc

    def record_chunks(self) -> Iterator[list[Record]]:
        """:meth:`records` in lists of at most :data:`RECORD_CHUNK` records, checked whole before the first
        list is handed out (raises as :meth:`records` does, when called), so a batch that inflates to
        millions of records costs one chunk of memory."""
        if self.magic < 2 or self.record_count <= RECORD_CHUNK:
            return iter((self.records(),))
        try:
            data, pos, end = self._payload()
        except CompressionError as exc:
            raise self._error("decompression", str(exc)) from exc
        if self.record_count > (end - pos) // MIN_RECORD_SIZE:
            return iter((self.records(),))  # records() says why, before decoding anything
        try:
            chunks = _validated_chunks(
                data, pos, end, self.record_count, self.base_offset, self.base_timestamp
            )
        except CorruptRecord as exc:
            raise self._error("corrupt_record", str(exc)) from None
        except (IndexError, ValueError) as exc:
            raise self._error("corrupt_record", f"record runs past the batch: {exc}") from exc
        if self.attributes & TIMESTAMP_TYPE_FLAG:
            ts = self.max_timestamp
            return ([(o, ts, k, v) for o, _t, k, v in chunk] for chunk in chunks)
        return chunks

    def iter_records(self) -> Iterator[Record]:
        """Yield ``(offset, timestamp, key, value)`` per record, decompressing when needed.

        Offsets are absolute. Under LOG_APPEND_TIME every record carries the batch's max timestamp, as
        ``DefaultRecordBatch``/``AbstractLegacyRecordBatch`` report it. Raises
        ``OffsetsDecodeException`` (kind ``decompression`` or ``corrupt_record``) on a corrupt payload,
        when called: a batch is decoded whole (it is small, and a list is cheaper than a generator).
        """
        return iter(self.records())

    def plain_record_chunks(self) -> Iterator[list[Record]] | None:
        """:meth:`plain_records` in lists of at most :data:`RECORD_CHUNK` records (checked whole first)."""
        if self.record_count <= RECORD_CHUNK or self.magic < 2:
            records = self.plain_records()
            return None if records is None else iter((records,))
        if self.attributes & (TRANSACTIONAL_FLAG | CONTROL_FLAG):
            return None
        try:
            data, pos, end = self._payload()
            return _validated_chunks(data, pos, end, self.record_count, self.base_offset, 0)
        except (CompressionError, CorruptRecord, IndexError, ValueError):
            return None

    def plain_records(self) -> list[Record] | None:
        """The records of a plain magic-2 batch (neither transactional nor control), or None.

        The reload's fold takes these; None (another kind of batch, a payload that does not decompress
        or records that do not fit their lengths) sends the batch to :meth:`iter_records`, which reports
        why. Unlike :meth:`records`, the record count is not checked against a 7-byte minimum record up
        front: the records are parsed by their own lengths, as the reload always has.
        """
        if self.magic < 2 or self.attributes & (TRANSACTIONAL_FLAG | CONTROL_FLAG):
            return None
        try:
            data, pos, end = self._payload()
            return decode_v2_records(data, pos, end, self.record_count, self.base_offset, 0, None)
        except (CompressionError, CorruptRecord, IndexError, ValueError):
            return None


class CorruptRecord(Exception):
    """A record of a magic-2 batch does not fit its declared length, or bytes are left after the last."""


def decode_v2_records(
    data: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int, log_append_ts: int | None
) -> list[Record]:
    """The ``DefaultRecord``s of a batch's records section ``data[pos:end]`` (the one record parser).

    With the C twin (:mod:`~offsetops.coordinator_core.records.native`), well-formed sections are parsed
    in C; anything it does not take whole comes here, to :func:`decode_v2_records_py`, which says why.
    """
    cfold = _twin.cfold
    out = None
    if _twin.NATIVE and cfold is not None:
        out = cfold.decode_records(data, pos, end, count, base_offset, base_ts)
    if out is None:
        out = decode_v2_records_py(data, pos, end, count, base_offset, base_ts)
    if log_append_ts is not None:
        # LOG_APPEND_TIME: every record reports the batch's max timestamp (rare; fixed up afterwards so
        # neither parser has a branch for it).
        out = [(o, log_append_ts, k, v) for o, _t, k, v in out]
    return out


def decode_v2_records_py(
    data: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int
) -> list[Record]:
    """The pure-Python record parser, the reference (see :func:`_parse_v2_records`)."""
    out: list[Record] = []
    pos = _parse_v2_records(data, pos, end, count, base_offset, base_ts, out, 0)
    if pos != end:
        raise CorruptRecord(f"{end - pos} bytes left after {count} records (wrong record count?)")
    return out


def _validated_chunks(
    data: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int
) -> Iterator[list[Record]]:
    """The records of a section of more than :data:`RECORD_CHUNK` records, :data:`RECORD_CHUNK` at a time.

    The whole section is parsed once first, a chunk at a time and thrown away, so a corrupt section
    raises before the first chunk is handed out (a corrupt batch folds nothing) and memory holds one
    chunk, not millions of records, whatever the count.
    """
    at = pos
    for first in range(0, count, RECORD_CHUNK):
        at = _parse_v2_records(
            data, at, end, min(RECORD_CHUNK, count - first), base_offset, base_ts, [], first
        )
    if at != end:
        raise CorruptRecord(f"{end - at} bytes left after {count} records (wrong record count?)")

    def chunks() -> Iterator[list[Record]]:
        at = pos
        for first in range(0, count, RECORD_CHUNK):
            out: list[Record] = []
            at = _parse_v2_records(
                data, at, end, min(RECORD_CHUNK, count - first), base_offset, base_ts, out, first
            )
            yield out

    return chunks()


def _parse_v2_records(
    data: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int, out: list[Record], first: int
) -> int:
    """Parse ``count`` records from ``data[pos]`` (record ``first`` of the batch) into ``out``; returns where
    they end. Each varint's 1-byte case (and 2-byte case for the lengths, which often exceed 63) is
    inlined; anything longer goes through :func:`_varint`."""
    append = out.append
    zz = _ZIGZAG1
    for n in range(first, first + count):
        b = data[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        else:
            b2 = data[pos + 1]
            if b2 < 0x80:
                v = (b & 0x7F) | (b2 << 7)
                length = (v >> 1) ^ -(v & 1)
                pos += 2
            else:
                length, pos = _varint(data, pos)
        rec_end = pos + length
        # pos + 1: skip the record attributes, unused by every Kafka version so far.
        b = data[pos + 1]
        if b < 0x80:
            ts_delta = zz[b]
            pos += 2
        else:
            ts_delta, pos = _varint(data, pos + 1)
        b = data[pos]
        if b < 0x80:
            offset_delta = zz[b]
            pos += 1
        else:
            offset_delta, pos = _varint(data, pos)
        b = data[pos]
        if b < 0x80:
            klen = zz[b]
            pos += 1
        else:
            klen, pos = _varint(data, pos)
        if klen < 0:
            key = None
        else:
            key = data[pos : pos + klen]
            pos += klen
        b = data[pos]
        if b < 0x80:
            vlen = zz[b]
            pos += 1
        else:
            b2 = data[pos + 1]
            if b2 < 0x80:
                v = (b & 0x7F) | (b2 << 7)
                vlen = (v >> 1) ^ -(v & 1)
                pos += 2
            else:
                vlen, pos = _varint(data, pos)
        if vlen < 0:
            value = None
        else:
            value = data[pos : pos + vlen]
            pos += vlen
        # Headers mean nothing on __consumer_offsets: jump over them by the record's declared length,
        # which also checks that key and value stayed inside the record and the record inside the batch.
        if pos > rec_end or rec_end > end:
            raise CorruptRecord(f"record {n} (offset delta {offset_delta}) overruns its length {length}")
        pos = rec_end
        append((base_offset + offset_delta, base_ts + ts_delta, key, value))
    return pos


def decode_legacy_message(
    mv: memoryview | bytes, pos: int, end: int
) -> tuple[int, int, int, int, int, bytes | None, bytes | None]:
    """Decode one ``LegacyRecord`` whose log overhead starts at ``pos`` and which ends at ``end``.

    Returns ``(offset, crc, magic, attributes, timestamp, key, value)``; the CRC is not checked here.
    Raises ``ValueError`` when a key or value length runs outside the message.
    """
    offset, _size, crc, magic, attrs = _LEGACY_HEAD.unpack_from(mv, pos)
    p = pos + 18
    if magic == 1:
        (timestamp,) = _I64.unpack_from(mv, p)
        p += 8
    else:
        timestamp = NO_TIMESTAMP
    if p + 4 > end:
        raise ValueError("message too short for its key length")
    (klen,) = _I32.unpack_from(mv, p)
    p += 4
    if klen < 0:
        key = None
    else:
        if p + klen + 4 > end:
            raise ValueError(f"key length {klen} runs past the message")
        key = bytes(mv[p : p + klen])
        p += klen
    (vlen,) = _I32.unpack_from(mv, p)
    p += 4
    if vlen < 0:
        value = None
    else:
        if p + vlen > end:
            raise ValueError(f"value length {vlen} runs past the message")
        value = bytes(mv[p : p + vlen])
        p += vlen
    if p != end:
        raise ValueError(f"{end - p} bytes left after the value")
    return offset, crc, magic, attrs, timestamp, key, value


def decode_legacy_wrapper(
    payload: bytes,
    wrapper_offset: int,
    wrapper_magic: int,
    wrapper_attrs: int,
    wrapper_ts: int,
    verify_crc: bool,
) -> list[Record]:
    """Deep iteration of a compressed legacy wrapper's (already decompressed) inner message set.

    ``AbstractLegacyRecordBatch.DeepRecordsIterator``: inner magic must match the wrapper's, nested
    compression is invalid, and magic-1 inner offsets are relative (absolute = wrapper offset - last
    inner relative offset + inner relative offset, unless the wrapper offset is 0) while magic-0 inner
    offsets are already absolute.
    Raises ``ValueError`` on anything malformed.
    """
    out: list[Record] = []
    pos, end = 0, len(payload)
    while pos < end:
        if pos + LOG_OVERHEAD > end:
            raise ValueError(f"inner message set truncated at byte {pos}")
        (size,) = _I32.unpack_from(payload, pos + 8)
        min_size = LEGACY_OVERHEAD_V1 if wrapper_magic == 1 else LEGACY_OVERHEAD_V0
        if size < min_size or pos + LOG_OVERHEAD + size > end:
            raise ValueError(f"inner message at byte {pos} has bad size {size}")
        msg_end = pos + LOG_OVERHEAD + size
        offset, crc, magic, attrs, ts, key, value = decode_legacy_message(payload, pos, msg_end)
        if magic != wrapper_magic:
            raise ValueError(f"inner message magic {magic} does not match wrapper magic {wrapper_magic}")
        if attrs & CODEC_MASK:
            raise ValueError("nested compression in a legacy wrapper")
        if verify_crc and zlib.crc32(payload[pos + 16 : msg_end]) != crc:
            raise ValueError(f"inner message at offset {offset} fails its CRC-32")
        out.append((offset, ts, key, value))
        pos = msg_end
    if not out:
        raise ValueError("compressed wrapper holds no inner messages")
    if wrapper_magic >= 1:
        # A wrapper offset of 0 is produce-side data (offsets not yet assigned, as some clients send it);
        # AbstractLegacyRecordBatch then keeps the inner offsets as they are.
        shift = wrapper_offset - out[-1][0] if wrapper_offset != 0 else 0
        log_append = bool(wrapper_attrs & TIMESTAMP_TYPE_FLAG)
        out = [(o + shift, wrapper_ts if log_append else ts, k, v) for o, ts, k, v in out]
    return out
