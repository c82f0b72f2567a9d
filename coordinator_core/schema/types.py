"""Kafka protocol primitives (``org.apache.kafka.common.protocol.types.Type``) and the schema error type.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; they raise :class:`CorruptData` on short or
malformed input. Writers append to a ``bytearray``. Everything is big-endian.

Strings are decoded with ``surrogateescape`` so that invalid UTF-8 (which Java silently replaces) still
decodes, and re-encodes to the very same bytes.
"""

from __future__ import annotations

import struct
import uuid
from typing import Literal

SchemaErrorKind = Literal["corrupt_key", "corrupt_value", "unknown_value_version"]

ZERO_UUID = uuid.UUID(int=0)
MAX_STRING_LENGTH = 0x7FFF  # generated readers reject longer strings ("had invalid length")

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")


class SchemaError(Exception):
    """A key or value that cannot be decoded; ``kind`` is one of :data:`SchemaErrorKind`."""

    def __init__(self, kind: SchemaErrorKind, reason: str):
        super().__init__(f"{kind}: {reason}")
        self.kind: SchemaErrorKind = kind
        self.reason = reason


class CorruptData(Exception):
    """Internal: the bytes do not fit the layout being read (truncated, bad length, ...)."""


Buf = bytes | bytearray | memoryview


def _need(buf: Buf, pos: int, n: int, what: str) -> None:
    if n < 0 or pos + n > len(buf):
        raise CorruptData(f"{what} needs {n} bytes at position {pos}, only {len(buf) - pos} left")


def read_int8(buf: Buf, pos: int) -> tuple[int, int]:
    _need(buf, pos, 1, "int8")
    return _I8.unpack_from(buf, pos)[0], pos + 1


def read_bool(buf: Buf, pos: int) -> tuple[bool, int]:
    _need(buf, pos, 1, "boolean")
    return buf[pos] != 0, pos + 1


def read_int16(buf: Buf, pos: int) -> tuple[int, int]:
    _need(buf, pos, 2, "int16")
    return _I16.unpack_from(buf, pos)[0], pos + 2


def read_uint16(buf: Buf, pos: int) -> tuple[int, int]:
    _need(buf, pos, 2, "uint16")
    return _U16.unpack_from(buf, pos)[0], pos + 2


def read_int32(buf: Buf, pos: int) -> tuple[int, int]:
    _need(buf, pos, 4, "int32")
    return _I32.unpack_from(buf, pos)[0], pos + 4


def read_int64(buf: Buf, pos: int) -> tuple[int, int]:
    _need(buf, pos, 8, "int64")
    return _I64.unpack_from(buf, pos)[0], pos + 8


def read_float64(buf: Buf, pos: int) -> tuple[float, int]:
    _need(buf, pos, 8, "float64")
    return _F64.unpack_from(buf, pos)[0], pos + 8


def read_uuid(buf: Buf, pos: int) -> tuple[uuid.UUID, int]:
    _need(buf, pos, 16, "uuid")
    return uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def read_uvarint(buf: Buf, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varint, at most 5 bytes (``ByteUtils.readUnsignedVarint``)."""
    value = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise CorruptData("unsigned varint runs past the end of the buffer")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise CorruptData("unsigned varint is longer than 5 bytes")


def _read_utf8(buf: Buf, pos: int, n: int, what: str) -> tuple[str, int]:
    _need(buf, pos, n, what)
    return bytes(buf[pos : pos + n]).decode("utf-8", "surrogateescape"), pos + n


def read_string(buf: Buf, pos: int, *, nullable: bool = False) -> tuple[str | None, int]:
    n, pos = read_int16(buf, pos)
    if n < 0:
        if nullable:
            return None, pos
        raise CorruptData("non-nullable string was serialized as null")
    return _read_utf8(buf, pos, n, f"string of length {n}")


def read_compact_string(buf: Buf, pos: int, *, nullable: bool = False) -> tuple[str | None, int]:
    n, pos = read_uvarint(buf, pos)
    n -= 1
    if n < 0:
        if nullable:
            return None, pos
        raise CorruptData("non-nullable compact string was serialized as null")
    if n > MAX_STRING_LENGTH:
        raise CorruptData(f"compact string has invalid length {n}")
    return _read_utf8(buf, pos, n, f"compact string of length {n}")


def read_bytes(buf: Buf, pos: int, *, nullable: bool = False) -> tuple[bytes | None, int]:
    n, pos = read_int32(buf, pos)
    if n < 0:
        if nullable:
            return None, pos
        raise CorruptData("non-nullable bytes were serialized as null")
    _need(buf, pos, n, f"bytes of length {n}")
    return bytes(buf[pos : pos + n]), pos + n


def read_compact_bytes(buf: Buf, pos: int, *, nullable: bool = False) -> tuple[bytes | None, int]:
    n, pos = read_uvarint(buf, pos)
    n -= 1
    if n < 0:
        if nullable:
            return None, pos
        raise CorruptData("non-nullable compact bytes were serialized as null")
    _need(buf, pos, n, f"compact bytes of length {n}")
    return bytes(buf[pos : pos + n]), pos + n


# --- writers -------------------------------------------------------------------------------------


def write_int8(out: bytearray, v: int) -> None:
    out += _I8.pack(v)


def write_bool(out: bytearray, v: bool) -> None:
    out.append(1 if v else 0)


def write_int16(out: bytearray, v: int) -> None:
    out += _I16.pack(v)


def write_uint16(out: bytearray, v: int) -> None:
    out += _U16.pack(v)


def write_int32(out: bytearray, v: int) -> None:
    out += _I32.pack(v)


def write_int64(out: bytearray, v: int) -> None:
    out += _I64.pack(v)


def write_float64(out: bytearray, v: float) -> None:
    out += _F64.pack(v)


def write_uuid(out: bytearray, v: uuid.UUID) -> None:
    out += v.bytes


def write_uvarint(out: bytearray, v: int) -> None:
    if v < 0 or v > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {v}")
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _utf8(v: str) -> bytes:
    data = v.encode("utf-8", "surrogateescape")
    if len(data) > MAX_STRING_LENGTH:
        raise ValueError(f"string is too long to be serialized ({len(data)} bytes)")
    return data


def write_string(out: bytearray, v: str | None, *, nullable: bool = False) -> None:
    if v is None:
        if not nullable:
            raise ValueError("non-nullable string is None")
        out += _I16.pack(-1)
        return
    data = _utf8(v)
    out += _I16.pack(len(data))
    out += data


def write_compact_string(out: bytearray, v: str | None, *, nullable: bool = False) -> None:
    if v is None:
        if not nullable:
            raise ValueError("non-nullable string is None")
        out.append(0)
        return
    data = _utf8(v)
    write_uvarint(out, len(data) + 1)
    out += data


def write_bytes(out: bytearray, v: bytes | None, *, nullable: bool = False) -> None:
    if v is None:
        if not nullable:
            raise ValueError("non-nullable bytes are None")
        out += _I32.pack(-1)
        return
    out += _I32.pack(len(v))
    out += v


def write_compact_bytes(out: bytearray, v: bytes | None, *, nullable: bool = False) -> None:
    if v is None:
        if not nullable:
            raise ValueError("non-nullable bytes are None")
        out.append(0)
        return
    write_uvarint(out, len(v) + 1)
    out += v
