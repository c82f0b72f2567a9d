"""Kafka's generated reader for a non-flexible struct, failing as it fails (``MessageDataGenerator``).

Where bytes do not fit, what a coordinator does next depends on which exception the reader threw. A
buffer underflow (an int, a length or a count past the end) becomes a ``SchemaException`` that the
coordinator catches (``ConsumerProtocol.deserialize*``); everything else the generated code and
``ByteBufferAccessor`` check themselves is a plain ``RuntimeException`` (a null non-nullable field, a
collection larger than the bytes left, a string or bytes whose length passes the end) that no
``catch (SchemaException)`` stops. :class:`SchemaFailure` and :class:`RuntimeFailure` are those two.
Facts from apache/kafka 3.9.0 and the 4.x trunk (``generator/.../MessageDataGenerator.java``,
``clients/.../protocol/ByteBufferAccessor.java``); no code copied.
"""

from __future__ import annotations

import struct
from typing import Any

from .messages import Field
from .types import Buf

_FIXED = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "int32": struct.Struct(">i")}
_FIXED["int64"] = struct.Struct(">q")


class SchemaFailure(Exception):
    """A ``SchemaException``: a buffer underflow or an unsupported version (the coordinator catches it)."""


class RuntimeFailure(Exception):
    """A ``RuntimeException`` of the generated reader (nothing in the coordinator catches it)."""


def _fixed(type_: str, buf: Buf, pos: int, what: str) -> tuple[int, int]:
    s = _FIXED[type_]
    if pos + s.size > len(buf):
        raise SchemaFailure(f"buffer underflow reading {what} at byte {pos}")
    return s.unpack_from(buf, pos)[0], pos + s.size


def _length(nullable: bool, size: int, buf: Buf, pos: int, what: str) -> tuple[int | None, int]:
    """A length or count prefix; None for a null the field allows."""
    n, pos = _fixed("int16" if size == 2 else "int32", buf, pos, what)
    if n < 0:
        if nullable:
            return None, pos
        raise RuntimeFailure(f"non-nullable field {what} was serialized as null")
    return n, pos


def _value(
    f: Field, type_: str, nullable: bool, version: int, buf: Buf, pos: int, what: str
) -> tuple[Any, int]:
    """One value of ``type_`` (the field's own, or its array's element type, never nullable)."""
    if type_ in _FIXED:
        return _fixed(type_, buf, pos, what)
    if type_ in ("string", "bytes"):
        n, pos = _length(nullable, 2 if type_ == "string" else 4, buf, pos, what)
        if n is None:
            return None, pos
        if n > len(buf) - pos:
            raise RuntimeFailure(f"{what} of {n} byte(s) at byte {pos}: only {len(buf) - pos} available")
        raw = bytes(buf[pos : pos + n])
        return (raw.decode("utf-8", "surrogateescape") if type_ == "string" else raw), pos + n
    if type_.startswith("[]"):
        n, pos = _length(nullable, 4, buf, pos, what)
        if n is None:
            return None, pos
        if n > len(buf) - pos:
            raise RuntimeFailure(
                f"{what}: a collection of size {n} at byte {pos - 4}, but only {len(buf) - pos} bytes remain"
            )
        items = []
        for i in range(n):
            if type_ == "[]struct":
                item, pos = read_struct(f.fields, version, buf, pos, f"{what}[{i}]")
            else:
                item, pos = _value(f, type_[2:], False, version, buf, pos, f"{what}[{i}]")
            items.append(item)
        return items, pos
    if type_ == "struct":
        return read_struct(f.fields, version, buf, pos, what)
    raise AssertionError(f"type {type_!r} has no non-flexible reader here")


def read_struct(
    fields: tuple[Field, ...], version: int, buf: Buf, pos: int, prefix: str = ""
) -> tuple[dict, int]:
    """The fields of ``version`` read from ``buf[pos:]`` as Kafka reads them; absent fields get defaults.

    Bytes after the struct are left unread, as Kafka leaves them. Raises :class:`SchemaFailure` or
    :class:`RuntimeFailure`."""
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present(version):
            out[f.name] = f.default_value(version)
            continue
        what = f"{prefix}.{f.name}" if prefix else f.name
        out[f.name], pos = _value(f, f.type, f.is_nullable(version), version, buf, pos, what)
    return out, pos
