"""JSON in the style of ``kafka-dump-log --offsets-decoder`` (Kafka 3.8+, KAFKA-16470).

``key_json`` gives ``{"type": "<id>", "data": {...}}`` and ``value_json`` ``{"version": "<v>", "data":
{...}}``, with the camelCase names of Kafka's generated JSON converters and only the fields of that
version. Tagged fields appear only when they differ from their default; bytes are base64, uuids use
Kafka's ``Uuid.toString`` (URL-safe base64, no padding). For a GroupMetadata value whose protocol type is
``consumer``, each member's subscription and assignment are shown decoded with the fields of the layout
the bytes follow (``consumer_protocol.read_embedded``: a v1 header over a v0 body shows the v0 fields);
bytes that fit no layout stay base64.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from .codec import UNKNOWN_TAGS
from .consumer_protocol import SCHEMAS, read_embedded
from .keys import CoordinatorKey, GroupKey, GroupMetadataKey, OffsetCommitKey, UnknownKey
from .messages import VALUE_SCHEMAS, Field
from .values import CoordinatorValue, GenericValue, GroupMetadataValue, value_fields


def kafka_uuid(u: uuid.UUID) -> str:
    """``org.apache.kafka.common.Uuid.toString``."""
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def _json_scalar(v: Any) -> Any:
    if isinstance(v, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, uuid.UUID):
        return kafka_uuid(v)
    return v


def fields_json(fields: tuple[Field, ...], version: int, values: dict[str, Any]) -> dict[str, Any]:
    """Render a table-codec dict as Kafka's JSON converter would for ``version``."""
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present(version) or f.name not in values:
            continue
        v = values[f.name]
        if f.tag is not None and v == f.default_value(version):
            continue
        if f.type == "[]struct" and v is not None:
            out[f.name] = [fields_json(f.fields, version, item) for item in v]
        elif f.type == "struct" and v is not None:
            out[f.name] = fields_json(f.fields, version, v)
        elif f.type.startswith("[]") and v is not None:
            out[f.name] = [_json_scalar(x) for x in v]
        else:
            out[f.name] = _json_scalar(v)
    return out


def key_json(key: CoordinatorKey) -> dict[str, Any]:
    if isinstance(key, OffsetCommitKey):
        data: Any = {"group": key.group, "topic": key.topic, "partition": key.partition}
        return {"type": str(key.record_type), "data": data}
    if isinstance(key, GroupMetadataKey):
        return {"type": "2", "data": {"group": key.group}}
    if isinstance(key, GroupKey):
        data = {k: v for k, v in key.fields.items() if k != UNKNOWN_TAGS} or {"groupId": key.group_id}
        return {"type": str(key.record_type), "data": data}
    if isinstance(key, UnknownKey):
        return {"type": str(key.record_type), "data": "unknown"}
    raise TypeError(f"not a coordinator key: {key!r}")


def unknown_record_text(record_type: int, offset: int) -> str:
    """What dump-log prints in place of the key for an unknown record type (3.8+)."""
    return f"Unknown record type {record_type} at offset {offset}, skipping."


def _protocol_json(role: str, data: bytes) -> Any:
    r = read_embedded(role, data)
    if r.seen is None:
        return _json_scalar(data)
    return fields_json(SCHEMAS[role].fields, r.seen, r.fields)


def _group_metadata_json(value: GroupMetadataValue) -> dict[str, Any]:
    schema = VALUE_SCHEMAS[2]
    d = fields_json(schema.fields, value.version, value_fields(value))
    if value.protocol_type == "consumer":
        for member_json, member in zip(d.get("members", []), value.members, strict=True):
            member_json["subscription"] = _protocol_json("subscription", member.subscription)
            member_json["assignment"] = _protocol_json("assignment", member.assignment)
    return d


def value_json(record_type: int, value: CoordinatorValue | None) -> dict[str, Any] | None:
    """``None`` for a tombstone (dump-log prints ``<DELETE>``)."""
    if value is None:
        return None
    if isinstance(value, GroupMetadataValue):
        return {"version": str(value.version), "data": _group_metadata_json(value)}
    if isinstance(value, GenericValue) and (value.raw is not None or record_type not in VALUE_SCHEMAS):
        return {"version": str(value.version), "data": "unknown"}
    schema = VALUE_SCHEMAS[record_type]
    return {
        "version": str(value.version),
        "data": fields_json(schema.fields, value.version, value_fields(value)),
    }
