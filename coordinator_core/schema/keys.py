"""Record types and record keys (``CoordinatorRecordType``, ``GroupCoordinatorRecordSerde``).

A key is an int16 record *type* followed by the key struct, whose body has a single non-flexible layout for
every type (KAFKA-18301 renamed the prefix from "version" to "apiKey"; the bytes never changed). Like
Kafka's generated readers, bytes after the key struct are ignored.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from . import codec
from . import types as t
from .messages import KEY_SCHEMAS
from .types import CorruptData, SchemaError


class RecordType(IntEnum):
    """Record-type ids of ``__consumer_offsets`` keys (``CoordinatorRecordType``)."""

    LEGACY_OFFSET_COMMIT = 0
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_PARTITION_METADATA = 4
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    SHARE_GROUP_PARTITION_METADATA = 9
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16
    STREAMS_GROUP_METADATA = 17
    STREAMS_GROUP_PARTITION_METADATA = 18
    STREAMS_GROUP_MEMBER_METADATA = 19
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
    STREAMS_GROUP_TOPOLOGY = 23
    STREAMS_GROUP_TARGET_ASSIGNMENT_RESOLVED_TOPIC_IDS = 24


def record_type_name(record_type: int) -> str:
    """Kafka's record name for a type id (``"OffsetCommit"``, ``"ConsumerGroupMetadata"``).

    Unknown ids give ``Unknown(N)``.
    """
    schema = KEY_SCHEMAS.get(record_type)
    if schema is None:
        return f"Unknown({record_type})"
    return schema.name.removesuffix("Key")


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Types 0 (LegacyOffsetCommitKey) and 1 (OffsetCommitKey): a GroupTopicPartition."""

    group: str
    topic: str
    partition: int
    record_type: int = 1

    @property
    def group_id(self) -> str:
        return self.group


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """Type 2: the classic group's metadata record."""

    group: str

    record_type = RecordType.GROUP_METADATA

    @property
    def group_id(self) -> str:
        return self.group


@dataclass(frozen=True, slots=True)
class GroupKey:
    """Types 3..24 (KIP-848 consumer, KIP-932 share, KIP-1071 streams groups). ``fields`` holds the
    whole key struct in camelCase (``groupId``, and ``memberId`` / ``regularExpression`` where present)."""

    record_type: int
    group_id: str
    fields: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def member_id(self) -> str | None:
        return self.fields.get("memberId")


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A record type this table does not know; Kafka >= 3.4.1 skips these (KIP-915). ``raw`` is the whole
    key, prefix included, so :func:`encode_key` gives it back unchanged."""

    record_type: int
    raw: bytes

    @property
    def group_id(self) -> None:
        return None


CoordinatorKey = OffsetCommitKey | GroupMetadataKey | GroupKey | UnknownKey

_H = struct.Struct(">h")
_I = struct.Struct(">i")


def decode_key(data: bytes | bytearray | memoryview) -> CoordinatorKey:
    """Decode a ``__consumer_offsets`` record key; raises :class:`SchemaError` kind ``corrupt_key``."""
    n = len(data)
    if n < 2:
        raise SchemaError("corrupt_key", f"key of {n} bytes cannot hold the 2-byte record type")
    record_type = _H.unpack_from(data, 0)[0]
    if record_type <= 1 and record_type >= 0:
        # Hot path: one key per offset commit.
        try:
            glen = _H.unpack_from(data, 2)[0]
            p = 4 + glen
            if glen < 0 or p > n:
                raise CorruptData("group")
            tlen = _H.unpack_from(data, p)[0]
            q = p + 2 + tlen
            if tlen < 0 or q + 4 > n:
                raise CorruptData("topic")
            mv = data if isinstance(data, bytes) else bytes(data)
            return OffsetCommitKey(
                mv[4:p].decode("utf-8", "surrogateescape"),
                mv[p + 2 : q].decode("utf-8", "surrogateescape"),
                _I.unpack_from(data, q)[0],
                record_type,
            )
        except (CorruptData, struct.error):
            pass  # fall through to the table-driven reader for a precise reason
    schema = KEY_SCHEMAS.get(record_type)
    if schema is None:
        return UnknownKey(record_type, bytes(data))
    try:
        fields, _ = codec.decode_body(schema, 0, data, 2)
    except CorruptData as e:
        raise SchemaError("corrupt_key", f"{schema.name}: {e}") from None
    if record_type <= 1:
        return OffsetCommitKey(fields["group"], fields["topic"], fields["partition"], record_type)
    if record_type == 2:
        return GroupMetadataKey(fields["group"])
    return GroupKey(record_type, fields["groupId"], fields)


def encode_key(key: CoordinatorKey) -> bytes:
    """The inverse of :func:`decode_key` (``MessageUtil.toCoordinatorTypePrefixedBytes``)."""
    if isinstance(key, UnknownKey):
        return key.raw
    if isinstance(key, OffsetCommitKey):
        rt = key.record_type
        values: dict[str, Any] = {"group": key.group, "topic": key.topic, "partition": key.partition}
    elif isinstance(key, GroupMetadataKey):
        rt = 2
        values = {"group": key.group}
    else:
        rt = key.record_type
        values = {**key.fields, "groupId": key.group_id}
    schema = KEY_SCHEMAS.get(rt)
    if schema is None:
        raise ValueError(f"no key schema for record type {rt}")
    out = bytearray()
    t.write_int16(out, rt)
    out += codec.encode_body(schema, 0, values)
    return bytes(out)
