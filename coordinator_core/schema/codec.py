"""The one table-driven reader/writer for every message in :mod:`.messages`.

Decoded messages are plain dicts keyed by the camelCase field names, holding only the fields of that
version; nested structs are dicts, arrays are lists. Unknown tagged fields are skipped by length and kept
under :data:`UNKNOWN_TAGS` as ``((tag, raw_bytes), ...)`` so that encoding gives the same bytes back.
This mirrors the read/write methods Kafka's ``MessageDataGenerator`` emits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import types as t
from .messages import Field, MessageSchema, in_range
from .types import Buf, CorruptData

UNKNOWN_TAGS = "_unknownTaggedFields"

_Reader = Callable[[Buf, int], tuple[Any, int]]

_FIXED_READERS: dict[str, _Reader] = {
    "int8": t.read_int8,
    "int16": t.read_int16,
    "int32": t.read_int32,
    "int64": t.read_int64,
    "float64": t.read_float64,
    "bool": t.read_bool,
    "uuid": t.read_uuid,
}
_FIXED_WRITERS: dict[str, Callable[[bytearray, Any], None]] = {
    "int8": t.write_int8,
    "int16": t.write_int16,
    "int32": t.write_int32,
    "int64": t.write_int64,
    "float64": t.write_float64,
    "bool": t.write_bool,
    "uuid": t.write_uuid,
}
_FIXED_SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "float64": 8, "bool": 1, "uuid": 16}


class UnsupportedVersion(Exception):
    """Internal: a version outside the schema's ``validVersions``."""


# --- reading -------------------------------------------------------------------------------------


def _read_primitive(type_: str, nullable: bool, flexible: bool, buf: Buf, pos: int) -> tuple[Any, int]:
    reader = _FIXED_READERS.get(type_)
    if reader is not None:
        return reader(buf, pos)
    if type_ == "string":
        if flexible:
            return t.read_compact_string(buf, pos, nullable=nullable)
        return t.read_string(buf, pos, nullable=nullable)
    if type_ == "bytes":
        if flexible:
            return t.read_compact_bytes(buf, pos, nullable=nullable)
        return t.read_bytes(buf, pos, nullable=nullable)
    raise AssertionError(f"unknown schema type {type_!r}")


def _read_value(
    f: Field, version: int, flexible: bool, buf: Buf, pos: int, *, tagged: bool
) -> tuple[Any, int]:
    nullable = f.is_nullable(version)
    type_ = f.type
    if type_.startswith("[]"):
        if flexible:
            count, pos = t.read_uvarint(buf, pos)
            count -= 1
        else:
            count, pos = t.read_int32(buf, pos)
        if count < 0:
            if nullable:
                return None, pos
            raise CorruptData("non-nullable array was serialized as null")
        if count > len(buf) - pos:
            raise CorruptData(f"array of {count} elements but only {len(buf) - pos} bytes remain")
        elem = type_[2:]
        items: list[Any] = []
        if elem == "struct":
            for i in range(count):
                try:
                    item, pos = read_struct(f.fields, version, flexible, buf, pos)
                except CorruptData as e:
                    raise CorruptData(f"[{i}].{e}") from None
                items.append(item)
        else:
            for _ in range(count):
                item, pos = _read_primitive(elem, False, flexible, buf, pos)
                items.append(item)
        return items, pos
    if type_ == "struct":
        if nullable:
            if tagged:
                present, pos = t.read_uvarint(buf, pos)
                if present <= 0:
                    return None, pos
            else:
                present, pos = t.read_int8(buf, pos)
                if present < 0:
                    return None, pos
        return read_struct(f.fields, version, flexible, buf, pos)
    return _read_primitive(type_, nullable, flexible, buf, pos)


def read_struct(
    fields: tuple[Field, ...], version: int, flexible: bool, buf: Buf, pos: int
) -> tuple[dict[str, Any], int]:
    """Read one struct at ``version``; raises :class:`CorruptData` naming the field that failed."""
    out: dict[str, Any] = {}
    tagged: dict[int, Field] = {}
    for f in fields:
        if not in_range(f.versions, version):
            continue
        if f.tag is not None:
            if flexible and in_range(f.tagged_versions, version):
                out[f.name] = f.default_value(version)
                tagged[f.tag] = f
            continue
        try:
            out[f.name], pos = _read_value(f, version, flexible, buf, pos, tagged=False)
        except CorruptData as e:
            raise CorruptData(f"{f.name}: {e}") from None
    if flexible:
        try:
            pos = _read_tagged_section(buf, pos, version, tagged, out)
        except CorruptData as e:
            raise CorruptData(f"tagged fields: {e}") from None
    return out, pos


def _read_tagged_section(
    buf: Buf, pos: int, version: int, known: dict[int, Field], out: dict[str, Any]
) -> int:
    count, pos = t.read_uvarint(buf, pos)
    unknown: list[tuple[int, bytes]] = []
    for _ in range(count):
        tag, pos = t.read_uvarint(buf, pos)
        size, pos = t.read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise CorruptData(f"tag {tag} has size {size} but only {len(buf) - pos} bytes remain")
        f = known.get(tag)
        value = _read_known_tag(f, version, buf, pos, end) if f is not None else _NOT_READ
        if value is _NOT_READ:
            unknown.append((tag, bytes(buf[pos:end])))
        else:
            out[f.name] = value  # type: ignore[union-attr]
        pos = end
    if unknown:
        out[UNKNOWN_TAGS] = tuple(unknown)
    return pos


_NOT_READ: Any = object()


def _read_known_tag(f: Field, version: int, buf: Buf, pos: int, end: int) -> Any:
    """A known tagged field's value, or :data:`_NOT_READ` when its payload is not that field.

    KIP-915: a tag means the field the schema in force gives it only when the payload is exactly that
    field (a fixed-size type of that size, or a variable one that parses to the last byte); anything
    else is a field of another version of the record, skipped by length and kept as unknown.
    """
    size = _FIXED_SIZE.get(f.type)
    if size is not None and end - pos != size:
        return _NOT_READ
    try:
        value, stop = _read_value(f, version, True, memoryview(buf)[:end], pos, tagged=True)
    except CorruptData:
        return _NOT_READ
    return value if stop == end else _NOT_READ


def read_version(data: Buf) -> int:
    if len(data) < 2:
        raise CorruptData(f"{len(data)} bytes cannot hold the 2-byte version prefix")
    return t.read_int16(data, 0)[0]


def decode_body(schema: MessageSchema, version: int, data: Buf, pos: int = 0) -> tuple[dict[str, Any], int]:
    """Decode the struct of ``schema`` at ``version`` from ``data[pos:]``; returns ``(fields, end)``."""
    if not in_range(schema.valid_versions, version):
        raise UnsupportedVersion(f"{schema.name} has no version {version}")
    return read_struct(schema.fields, version, schema.is_flexible(version), memoryview(data), pos)


# --- writing -------------------------------------------------------------------------------------


def _write_primitive(type_: str, nullable: bool, flexible: bool, value: Any, out: bytearray) -> None:
    writer = _FIXED_WRITERS.get(type_)
    if writer is not None:
        writer(out, value)
    elif type_ == "string":
        (t.write_compact_string if flexible else t.write_string)(out, value, nullable=nullable)
    elif type_ == "bytes":
        (t.write_compact_bytes if flexible else t.write_bytes)(out, value, nullable=nullable)
    else:
        raise AssertionError(f"unknown schema type {type_!r}")


def _write_value(f: Field, version: int, flexible: bool, value: Any, out: bytearray, *, tagged: bool) -> None:
    nullable = f.is_nullable(version)
    type_ = f.type
    if type_.startswith("[]"):
        if value is None:
            if not nullable:
                raise ValueError(f"non-nullable array {f.name} is None")
            out += b"\x00" if flexible else b"\xff\xff\xff\xff"
            return
        if flexible:
            t.write_uvarint(out, len(value) + 1)
        else:
            t.write_int32(out, len(value))
        elem = type_[2:]
        for item in value:
            if elem == "struct":
                write_struct(f.fields, version, flexible, item, out)
            else:
                _write_primitive(elem, False, flexible, item, out)
        return
    if type_ == "struct":
        if nullable:
            if value is None:
                if tagged:
                    out.append(0)
                else:
                    t.write_int8(out, -1)
                return
            if tagged:
                out.append(1)
            else:
                t.write_int8(out, 1)
        elif value is None:
            raise ValueError(f"non-nullable struct {f.name} is None")
        write_struct(f.fields, version, flexible, value, out)
        return
    _write_primitive(type_, nullable, flexible, value, out)


def write_struct(
    fields: tuple[Field, ...], version: int, flexible: bool, values: dict[str, Any], out: bytearray
) -> None:
    """Write one struct; a non-default value for a field the version lacks is an error, as in Kafka."""
    tags: list[tuple[int, bytes]] = []
    for f in fields:
        value = values.get(f.name, _MISSING)
        if not f.present(version) or (f.tag is not None and not flexible):
            if value is not _MISSING and value != f.default_value(version):
                raise ValueError(f"cannot write a non-default {f.name} at version {version}")
            continue
        if value is _MISSING:
            value = f.default_value(version)
        if f.tag is not None:
            if value != f.default_value(version):
                payload = bytearray()
                _write_value(f, version, True, value, payload, tagged=True)
                tags.append((f.tag, bytes(payload)))
            continue
        try:
            _write_value(f, version, flexible, value, out, tagged=False)
        except (ValueError, TypeError, OverflowError) as e:
            raise ValueError(f"{f.name}: {e}") from None
    unknown = values.get(UNKNOWN_TAGS) or ()
    if not flexible:
        if unknown:
            raise ValueError(f"tagged fields were set, but version {version} does not support them")
        return
    tags.extend(unknown)
    tags.sort(key=lambda kv: kv[0])
    t.write_uvarint(out, len(tags))
    for tag, payload in tags:
        t.write_uvarint(out, tag)
        t.write_uvarint(out, len(payload))
        out += payload


_MISSING: Any = object()


def encode_body(schema: MessageSchema, version: int, values: dict[str, Any]) -> bytes:
    if not in_range(schema.valid_versions, version):
        raise ValueError(f"{schema.name} has no version {version}")
    out = bytearray()
    write_struct(schema.fields, version, schema.is_flexible(version), values, out)
    return bytes(out)


def encode_versioned(schema: MessageSchema, version: int, values: dict[str, Any]) -> bytes:
    """``MessageUtil.toVersionPrefixedBytes``: int16 version, then the struct."""
    out = bytearray()
    t.write_int16(out, version)
    out += encode_body(schema, version, values)
    return bytes(out)
