"""Encoders for segment bytes a broker would write (``MemoryRecordsBuilder``, ``DefaultRecord``,
``LegacyRecord``, ``EndTransactionMarker``). Used by the simulator, the tests and the segment executor.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from offsetops.coordinator_core.records.batch import (
    CONTROL_FLAG,
    DELETE_HORIZON_FLAG,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    V2_HEADER,
    V2_HEADER_SIZE,
)
from offsetops.coordinator_core.records.compression import NONE, ZSTD, compress
from offsetops.coordinator_core.records.crc import crc32c

__all__ = [
    "ABORT",
    "COMMIT",
    "BuildRecord",
    "build_control_batch",
    "build_legacy_message_set",
    "build_record_batch",
    "encode_varint",
]

ABORT, COMMIT = 0, 1  # ControlRecordType

Header = tuple["str | bytes", "bytes | None"]
BuildRecord = (
    tuple["bytes | None", "bytes | None", int] | tuple["bytes | None", "bytes | None", int, Sequence[Header]]
)
"""``(key, value, timestamp)``, optionally with a fourth element: the record headers."""

_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_VALUE = struct.Struct(">hi")  # version, coordinatorEpoch
_LEGACY_LOG_HEAD = struct.Struct(">qiI")  # offset, size, crc


def encode_varint(out: bytearray, value: int) -> None:
    """Append a zig-zag varint/varlong (``ByteUtils.writeVarint``/``writeVarlong``)."""
    v = (value << 1) ^ (value >> 63)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _encode_record(
    out: bytearray,
    offset_delta: int,
    ts_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
) -> None:
    body = bytearray(b"\x00")  # record attributes: always 0
    encode_varint(body, ts_delta)
    encode_varint(body, offset_delta)
    for blob in (key, value):
        if blob is None:
            encode_varint(body, -1)
        else:
            encode_varint(body, len(blob))
            body += blob
    encode_varint(body, len(headers))
    for hkey, hvalue in headers:
        hk = hkey.encode() if isinstance(hkey, str) else hkey
        encode_varint(body, len(hk))
        body += hk
        if hvalue is None:
            encode_varint(body, -1)
        else:
            encode_varint(body, len(hvalue))
            body += hvalue
    encode_varint(out, len(body))
    out += body


def build_record_batch(
    records: Sequence[BuildRecord],
    *,
    base_offset: int,
    compression: int = NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = 0,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    delete_horizon_ms: int | None = None,
    log_append_time: bool = False,
    last_offset_delta: int | None = None,
    offset_deltas: Sequence[int] | None = None,
) -> bytes:
    """One magic-2 ``DefaultRecordBatch`` holding ``records`` at consecutive offsets.

    ``base_timestamp`` defaults to the first record's timestamp and ``max_timestamp`` to the largest.
    With ``delete_horizon_ms`` (KIP-534) the horizon replaces baseTimestamp and attribute bit 0x40 is
    set; record timestamps stay right because their deltas are taken against the field as written.
    ``last_offset_delta`` only matters for an empty batch (the cleaner keeps those for producer state).
    ``offset_deltas`` places the records at those increasing deltas instead, with gaps between them as
    the log cleaner leaves them (it keeps a batch's last offset, so ``last_offset_delta`` may lie past
    the last record's).
    """
    if offset_deltas is not None and len(offset_deltas) != len(records):
        raise ValueError("offset_deltas needs one delta per record")
    if delete_horizon_ms is not None:
        if base_timestamp is not None:
            raise ValueError("base_timestamp and delete_horizon_ms both set the baseTimestamp field")
        base_timestamp = delete_horizon_ms
    timestamps = [r[2] for r in records]
    if base_timestamp is None:
        base_timestamp = timestamps[0] if timestamps else -1
    if max_timestamp is None:
        max_timestamp = max(timestamps) if timestamps else -1
    body = bytearray()
    for i, rec in enumerate(records):
        headers: Sequence[Header] = rec[3] if len(rec) > 3 else ()  # type: ignore[misc]
        delta = i if offset_deltas is None else offset_deltas[i]
        _encode_record(body, delta, rec[2] - base_timestamp, rec[0], rec[1], headers)
    payload = compress(compression, bytes(body)) if compression != NONE else bytes(body)

    attributes = compression & 0x07
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_FLAG
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG
    if is_control:
        attributes |= CONTROL_FLAG
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG
    if last_offset_delta is None:
        last_offset_delta = offset_deltas[-1] if offset_deltas else max(len(records) - 1, 0)

    header = bytearray(V2_HEADER_SIZE)
    V2_HEADER.pack_into(
        header,
        0,
        base_offset,
        V2_HEADER_SIZE - LOG_OVERHEAD + len(payload),
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    # CRC-32C covers attributes (byte 21) to the end of the batch.
    crc = crc32c(payload, crc32c(memoryview(header)[21:]))
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + payload


def build_control_batch(
    commit: bool,
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    partition_leader_epoch: int = 0,
) -> bytes:
    """A transaction marker batch (``EndTransactionMarker``): one control record, transactional."""
    key = _CONTROL_KEY.pack(0, COMMIT if commit else ABORT)
    value = _END_TXN_VALUE.pack(0, coordinator_epoch)
    return build_record_batch(
        [(key, value, timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def _legacy_message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = bytearray((magic, attributes))
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for blob in (key, value):
        if blob is None:
            body += b"\xff\xff\xff\xff"
        else:
            body += struct.pack(">i", len(blob))
            body += blob
    # LegacyRecord's CRC-32 covers magic..end and sits in front of it.
    return _LEGACY_LOG_HEAD.pack(offset, 4 + len(body), zlib.crc32(body)) + body


def build_legacy_message_set(
    records: Sequence[BuildRecord],
    *,
    magic: int,
    base_offset: int,
    compression: int = NONE,
    log_append_time: bool = False,
) -> bytes:
    """A magic-0/1 message set (``LegacyRecord``) at consecutive offsets from ``base_offset``.

    Uncompressed: one message per record. Compressed: one wrapper message, at the offset of the last
    inner message, whose value is the compressed inner set; magic-1 inner offsets are relative
    (0..n-1) and magic-0 inner offsets absolute, as a broker stores them. Magic 0 has no timestamps.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy message sets have magic 0 or 1, not {magic}")
    if compression == ZSTD:
        raise ValueError("zstd requires magic 2")
    ts_attr = TIMESTAMP_TYPE_FLAG if (log_append_time and magic == 1) else 0
    if compression == NONE:
        return b"".join(
            _legacy_message(base_offset + i, magic, ts_attr, r[2], r[0], r[1]) for i, r in enumerate(records)
        )
    if not records:
        raise ValueError("a compressed wrapper needs at least one record")
    inner = b"".join(
        _legacy_message(i if magic == 1 else base_offset + i, magic, 0, r[2], r[0], r[1])
        for i, r in enumerate(records)
    )
    wrapper_ts = max(r[2] for r in records)
    return _legacy_message(
        base_offset + len(records) - 1,
        magic,
        (compression & 0x07) | ts_attr,
        wrapper_ts,
        None,
        compress(compression, inner, magic=magic),
    )
