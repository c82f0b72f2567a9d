"""Record values: ``OffsetCommitValue``, ``GroupMetadataValue`` and the generic KIP-848/932 values.

The value's int16 prefix is a real schema version. As in both Kafka loaders, an unknown version of a known
type is an error (``unknown_value_version``), and truncated or malformed bytes are ``corrupt_value``.

Trailing bytes: Kafka's generated readers stop at the end of the struct and never look at what follows,
so a value with extra bytes after the struct loads fine on a broker. We do the same by default and offer
``strict=True`` on :func:`decode_value` to report them as ``corrupt_value`` (useful for auditing).

The fast paths (:func:`decode_offset_commit_value`, :func:`decode_group_metadata_value`) are hand-unrolled
for the reload hot path; tests check them against the table-driven codec for every version.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.records import native as _twin

from . import codec
from .codec import UNKNOWN_TAGS, UnsupportedVersion
from .messages import GROUP_METADATA_VALUE, OFFSET_COMMIT_VALUE, VALUE_SCHEMAS, MessageSchema
from .share_streams import EARLY_ACCESS_VALUE_SCHEMAS
from .types import ZERO_UUID, Buf, CorruptData, SchemaError, read_uvarint

TaggedFields = tuple[tuple[int, bytes], ...]


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """``OffsetCommitValue`` v0-v4 (types 0 and 1). Fields a version lacks hold Kafka's defaults:
    ``leader_epoch`` -1 before v3, ``expire_timestamp`` -1 outside v1, ``topic_id`` None (ZERO_UUID)."""

    version: int
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int = -1
    topic_id: uuid.UUID | None = None
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """One member of ``GroupMetadataValue.members``. ``rebalance_timeout`` is -1 in v0 (loaders then use
    the session timeout); ``subscription``/``assignment`` are consumer-protocol bytes when the group's
    protocol type is ``consumer``."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """``GroupMetadataValue`` v0-v4 (type 2). ``protocol_type`` "" means none (a simple group)."""

    version: int
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadata, ...] = ()
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class GenericValue:
    """A value of types 3..24 decoded by its table (``fields`` in camelCase), or, where no table fits,
    kept as ``raw`` (the whole value, version prefix included) with empty ``fields``. ``early_access``
    names the early-access layout (``share_streams.EARLY_ACCESS_VALUE_SCHEMAS``) the value was written in."""

    record_type: int
    version: int
    fields: dict[str, Any] = field(default_factory=dict, hash=False)
    raw: bytes | None = None
    early_access: str | None = None

    @property
    def decoded(self) -> bool:
        return self.raw is None


CoordinatorValue = OffsetCommitValue | GroupMetadataValue | GenericValue

_H = struct.Struct(">h")
_Q = struct.Struct(">q")
_QH = struct.Struct(">qh")
_QQ = struct.Struct(">qq")
_QIH = struct.Struct(">qih")
_QI = struct.Struct(">qi")
_I = struct.Struct(">i")
_IH = struct.Struct(">ih")


_new = object.__new__
(_set_version, _set_offset, _set_epoch, _set_metadata, _set_ts, _set_expire, _set_topic_id, _set_tags) = (
    OffsetCommitValue.__dict__[f].__set__
    for f in (
        "version",
        "offset",
        "leader_epoch",
        "metadata",
        "commit_timestamp",
        "expire_timestamp",
        "topic_id",
        "unknown_tagged_fields",
    )
)


def _offset_commit(
    version: int,
    offset: int,
    epoch: int,
    metadata: str,
    ts: int,
    expire: int = -1,
    topic_id: uuid.UUID | None = None,
    tags: TaggedFields = (),
) -> OffsetCommitValue:
    """Same as ``OffsetCommitValue(...)`` without the frozen-dataclass ``__init__`` cost (~0.3 us)."""
    v = _new(OffsetCommitValue)
    _set_version(v, version)
    _set_offset(v, offset)
    _set_epoch(v, epoch)
    _set_metadata(v, metadata)
    _set_ts(v, ts)
    _set_expire(v, expire)
    _set_topic_id(v, topic_id)
    _set_tags(v, tags)
    return v


def _corrupt_reason(schema_fields: Any, data: Buf, version: int) -> str:
    """Re-run the table-driven reader to say which field failed (error path only)."""
    try:
        codec.decode_body(schema_fields, version, data, 2)
    except CorruptData as e:
        return str(e)
    except UnsupportedVersion as e:
        return str(e)
    return "malformed value"


# --- OffsetCommitValue ---------------------------------------------------------------------------


def _decode_offset_commit(data: Buf, known_tags: bool = True) -> tuple[OffsetCommitValue, int]:
    if _twin.NATIVE and _twin.cfold is not None:
        # The twin reads v0-v3 and v4 without tagged fields, and hands anything else (tags, other versions,
        # every malformed value) to the reader below, which says why.
        fields = _twin.cfold.offset_commit_value(data)
        if fields is not None:
            version, offset, epoch, metadata, ts, expire, end = fields
            return _offset_commit(version, offset, epoch, metadata, ts, expire), end
    try:
        version = _H.unpack_from(data, 0)[0]
    except struct.error:
        raise SchemaError("corrupt_value", f"{len(data)} bytes cannot hold the 2-byte version") from None
    try:
        if version == 3:
            offset, epoch, mlen = _QIH.unpack_from(data, 2)
            p = 16 + mlen
            if mlen >= 0:
                ts = _Q.unpack_from(data, p)[0]
                return _offset_commit(
                    3, offset, epoch, bytes(data[16:p]).decode("utf-8", "surrogateescape"), ts
                ), p + 8
        elif version == 0 or version == 2:
            offset, mlen = _QH.unpack_from(data, 2)
            p = 12 + mlen
            if mlen >= 0:
                ts = _Q.unpack_from(data, p)[0]
                return _offset_commit(
                    version, offset, -1, bytes(data[12:p]).decode("utf-8", "surrogateescape"), ts
                ), p + 8
        elif version == 1:
            offset, mlen = _QH.unpack_from(data, 2)
            p = 12 + mlen
            if mlen >= 0:
                ts, expire = _QQ.unpack_from(data, p)
                return _offset_commit(
                    1, offset, -1, bytes(data[12:p]).decode("utf-8", "surrogateescape"), ts, expire
                ), p + 16
        elif version == 4:
            return _decode_offset_commit_v4(data, known_tags)
        else:
            raise SchemaError("unknown_value_version", f"OffsetCommitValue has no version {version}")
    except (struct.error, CorruptData, ValueError, IndexError):
        pass
    raise SchemaError(
        "corrupt_value",
        f"OffsetCommitValue v{version}: {_corrupt_reason(OFFSET_COMMIT_VALUE, data, version)}",
    )


def _decode_offset_commit_v4(data: Buf, known_tags: bool) -> tuple[OffsetCommitValue, int]:
    offset, epoch = _QI.unpack_from(data, 2)
    b = data[14]
    if b < 0x80:  # one-byte varint: the common case, inlined
        n, p = b - 1, 15
    else:
        n, p = read_uvarint(data, 14)
        n -= 1
    if n < 0 or n > 0x7FFF:
        raise CorruptData("metadata")
    q = p + n
    ts = _Q.unpack_from(data, q)[0]
    metadata = bytes(data[p:q]).decode("utf-8", "surrogateescape")
    pos = q + 8
    if pos < len(data) and data[pos] == 0:  # no tagged fields
        return _offset_commit(4, offset, epoch, metadata, ts), pos + 1
    count, pos = read_uvarint(data, pos)
    topic_id: uuid.UUID | None = None
    unknown: list[tuple[int, bytes]] = []
    for _ in range(count):
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        end = pos + size
        if end > len(data):
            raise CorruptData("tagged field")
        if tag == 0 and size == 16 and known_tags:
            # Kafka 4.1's TopicId (KAFKA-19141); a tag 0 of another size is some other version's field
            # (Kafka 3.9's GroupMetadataManagerTest writes a string there) and is skipped (KIP-915).
            topic_id = uuid.UUID(bytes=bytes(data[pos:end]))
        else:
            unknown.append((tag, bytes(data[pos:end])))
        pos = end
    if topic_id == ZERO_UUID:
        topic_id = None
    return _offset_commit(4, offset, epoch, metadata, ts, -1, topic_id, tuple(unknown)), pos


def decode_offset_commit_value(data: Buf, *, known_tags: bool = True) -> OffsetCommitValue:
    """Decode an OffsetCommitValue (any version, prefix included). Raises :class:`SchemaError`.

    ``known_tags=False`` reads it as Kafka 3.x does, whose schema has no tagged field: every tag is
    skipped by length and kept in ``unknown_tagged_fields``.
    """
    return _decode_offset_commit(data, known_tags)[0]


def _offset_commit_fields(v: OffsetCommitValue) -> dict[str, Any]:
    d: dict[str, Any] = {
        "offset": v.offset,
        "leaderEpoch": v.leader_epoch,
        "metadata": v.metadata,
        "commitTimestamp": v.commit_timestamp,
        "expireTimestamp": v.expire_timestamp,
        "topicId": v.topic_id if v.topic_id is not None else ZERO_UUID,
    }
    if v.unknown_tagged_fields:
        d[UNKNOWN_TAGS] = v.unknown_tagged_fields
    return d


def offset_commit_from_fields(version: int, d: dict[str, Any]) -> OffsetCommitValue:
    """Build the dataclass from the table codec's dict."""
    topic_id = d.get("topicId")
    return OffsetCommitValue(
        version,
        d["offset"],
        d.get("leaderEpoch", -1),
        d["metadata"],
        d["commitTimestamp"],
        d.get("expireTimestamp", -1),
        None if topic_id is None or topic_id == ZERO_UUID else topic_id,
        tuple(d.get(UNKNOWN_TAGS, ())),
    )


# --- GroupMetadataValue --------------------------------------------------------------------------


class _Cursor:
    """A tiny big-endian reader for the non-flexible GroupMetadataValue fast path."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: Buf, pos: int):
        self.buf = buf
        self.pos = pos

    def i32(self) -> int:
        v = _I.unpack_from(self.buf, self.pos)[0]
        self.pos += 4
        return v

    def i64(self) -> int:
        v = _Q.unpack_from(self.buf, self.pos)[0]
        self.pos += 8
        return v

    def string(self, nullable: bool = False) -> str | None:
        n = _H.unpack_from(self.buf, self.pos)[0]
        p = self.pos + 2
        if n < 0:
            if not nullable:
                raise CorruptData("null string")
            self.pos = p
            return None
        end = p + n
        if end > len(self.buf):
            raise CorruptData("string")
        self.pos = end
        return bytes(self.buf[p:end]).decode("utf-8", "surrogateescape")

    def bytes_(self) -> bytes:
        n = self.i32()
        p = self.pos
        end = p + n
        if n < 0 or end > len(self.buf):
            raise CorruptData("bytes")
        self.pos = end
        return bytes(self.buf[p:end])


def _decode_group_metadata(data: Buf) -> tuple[GroupMetadataValue, int]:
    try:
        version = _H.unpack_from(data, 0)[0]
    except struct.error:
        raise SchemaError("corrupt_value", f"{len(data)} bytes cannot hold the 2-byte version") from None
    if version < 0 or version > 4:
        raise SchemaError("unknown_value_version", f"GroupMetadataValue has no version {version}")
    if version == 4:
        try:
            d, end = codec.decode_body(GROUP_METADATA_VALUE, 4, data, 2)
        except CorruptData as e:
            raise SchemaError("corrupt_value", f"GroupMetadataValue v4: {e}") from None
        return group_metadata_from_fields(4, d), end
    try:
        c = _Cursor(data, 2)
        protocol_type = c.string()
        generation = c.i32()
        protocol = c.string(True)
        leader = c.string(True)
        current_state_timestamp = c.i64() if version >= 2 else -1
        count = c.i32()
        if count < 0 or count > len(data) - c.pos:
            raise CorruptData("members")
        members = []
        for _ in range(count):
            member_id = c.string()
            instance_id = c.string(True) if version >= 3 else None
            client_id = c.string()
            client_host = c.string()
            rebalance_timeout = c.i32() if version >= 1 else -1
            session_timeout = c.i32()
            members.append(
                MemberMetadata(
                    member_id,  # type: ignore[arg-type]
                    instance_id,
                    client_id,  # type: ignore[arg-type]
                    client_host,  # type: ignore[arg-type]
                    rebalance_timeout,
                    session_timeout,
                    c.bytes_(),
                    c.bytes_(),
                )
            )
        return GroupMetadataValue(
            version,
            protocol_type,  # type: ignore[arg-type]
            generation,
            protocol,
            leader,
            current_state_timestamp,
            tuple(members),
        ), c.pos
    except (struct.error, CorruptData):
        pass
    raise SchemaError(
        "corrupt_value",
        f"GroupMetadataValue v{version}: {_corrupt_reason(GROUP_METADATA_VALUE, data, version)}",
    )


def decode_group_metadata_value(data: Buf) -> GroupMetadataValue:
    """Decode a GroupMetadataValue (any version, prefix included). Raises :class:`SchemaError`."""
    return _decode_group_metadata(data)[0]


def group_metadata_from_fields(version: int, d: dict[str, Any]) -> GroupMetadataValue:
    members = tuple(
        MemberMetadata(
            m["memberId"],
            m.get("groupInstanceId"),
            m["clientId"],
            m["clientHost"],
            m.get("rebalanceTimeout", -1),
            m["sessionTimeout"],
            m["subscription"],
            m["assignment"],
            tuple(m.get(UNKNOWN_TAGS, ())),
        )
        for m in d["members"]
    )
    return GroupMetadataValue(
        version,
        d["protocolType"],
        d["generation"],
        d["protocol"],
        d["leader"],
        d.get("currentStateTimestamp", -1),
        members,
        tuple(d.get(UNKNOWN_TAGS, ())),
    )


def _member_fields(m: MemberMetadata) -> dict[str, Any]:
    d: dict[str, Any] = {
        "memberId": m.member_id,
        "groupInstanceId": m.group_instance_id,
        "clientId": m.client_id,
        "clientHost": m.client_host,
        "rebalanceTimeout": m.rebalance_timeout,
        "sessionTimeout": m.session_timeout,
        "subscription": m.subscription,
        "assignment": m.assignment,
    }
    if m.unknown_tagged_fields:
        d[UNKNOWN_TAGS] = m.unknown_tagged_fields
    return d


def _group_metadata_fields(v: GroupMetadataValue) -> dict[str, Any]:
    d: dict[str, Any] = {
        "protocolType": v.protocol_type,
        "generation": v.generation,
        "protocol": v.protocol,
        "leader": v.leader,
        "currentStateTimestamp": v.current_state_timestamp,
        "members": [_member_fields(m) for m in v.members],
    }
    if v.unknown_tagged_fields:
        d[UNKNOWN_TAGS] = v.unknown_tagged_fields
    return d


def value_fields(value: CoordinatorValue) -> dict[str, Any]:
    """The table codec's dict for a value (camelCase, every field of the table)."""
    if isinstance(value, OffsetCommitValue):
        return _offset_commit_fields(value)
    if isinstance(value, GroupMetadataValue):
        return _group_metadata_fields(value)
    return value.fields


# --- generic entry points ------------------------------------------------------------------------


def decode_value(record_type: int, data: Buf, *, strict: bool = False) -> CoordinatorValue:
    """Decode the value of a record whose key has ``record_type``. ``data`` includes the int16 version.

    Raises :class:`SchemaError` (``unknown_value_version`` or ``corrupt_value``). A type without a value
    table (streams groups, unknown types) gives a :class:`GenericValue` with ``raw`` bytes.
    """
    value: CoordinatorValue
    if record_type == 1 or record_type == 0:
        value, end = _decode_offset_commit(data)
    elif record_type == 2:
        value, end = _decode_group_metadata(data)
    else:
        if len(data) < 2:
            raise SchemaError("corrupt_value", f"{len(data)} bytes cannot hold the 2-byte version")
        version = _H.unpack_from(data, 0)[0]
        schema = VALUE_SCHEMAS.get(record_type)
        early = _early_access(record_type, version, data, schema)
        if early is not None:
            return early
        if schema is None:
            return GenericValue(record_type, version, {}, bytes(data))
        try:
            fields, end = codec.decode_body(schema, version, data, 2)
        except UnsupportedVersion as e:
            if schema.provisional:
                return GenericValue(record_type, version, {}, bytes(data))
            raise SchemaError("unknown_value_version", str(e)) from None
        except CorruptData as e:
            if schema.provisional:
                return GenericValue(record_type, version, {}, bytes(data))
            raise SchemaError("corrupt_value", f"{schema.name} v{version}: {e}") from None
        value = GenericValue(record_type, version, fields)
    if strict and end != len(data):
        raise SchemaError("corrupt_value", f"{len(data) - end} trailing bytes after the value struct")
    return value


def _fits(schema: MessageSchema, version: int, data: Buf) -> dict[str, Any] | None:
    """The fields of ``data`` if it is exactly one ``schema`` struct, else None."""
    try:
        fields, end = codec.decode_body(schema, version, data, 2)
    except (UnsupportedVersion, CorruptData):
        return None
    return fields if end == len(data) else None


def _early_access(
    record_type: int, version: int, data: Buf, schema: MessageSchema | None
) -> GenericValue | None:
    """The value in an early-access layout, when the released one does not fit exactly and that one does."""
    layouts = EARLY_ACCESS_VALUE_SCHEMAS.get(record_type)
    if not layouts or (schema is not None and _fits(schema, version, data) is not None):
        return None
    for layout in layouts:
        fields = _fits(layout, version, data)
        if fields is not None:
            return GenericValue(record_type, version, fields, early_access=layout.name)
    return None


def encode_value(value: CoordinatorValue) -> bytes:
    """Serialize a value at its own ``version`` (``MessageUtil.toVersionPrefixedBytes``).

    Raises ``ValueError`` for a field the version cannot carry (e.g. a leader epoch in v2), as Kafka's
    writers do.
    """
    if isinstance(value, OffsetCommitValue):
        return codec.encode_versioned(OFFSET_COMMIT_VALUE, value.version, _offset_commit_fields(value))
    if isinstance(value, GroupMetadataValue):
        return codec.encode_versioned(GROUP_METADATA_VALUE, value.version, _group_metadata_fields(value))
    if value.raw is not None:
        return value.raw
    schema = VALUE_SCHEMAS.get(value.record_type)
    if value.early_access is not None:
        schema = next(
            s for s in EARLY_ACCESS_VALUE_SCHEMAS[value.record_type] if s.name == value.early_access
        )
    if schema is None:
        raise ValueError(f"no value schema for record type {value.record_type}")
    return codec.encode_versioned(schema, value.version, value.fields)
