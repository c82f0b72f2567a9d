"""Hypothesis strategies generated from the schema tables themselves, so every table is covered."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from offsetops.coordinator_core.schema import UNKNOWN_TAGS
from offsetops.coordinator_core.schema.keys import GroupKey, GroupMetadataKey, OffsetCommitKey
from offsetops.coordinator_core.schema.messages import KEY_SCHEMAS, Field
from offsetops.coordinator_core.schema.values import GroupMetadataValue, MemberMetadata, OffsetCommitValue

INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}

texts = st.text(max_size=12)
blobs = st.binary(max_size=16)
uuids = st.uuids()
nonzero_uuids = st.uuids().filter(lambda u: u.int != 0)


def _primitive(type_: str) -> st.SearchStrategy[Any]:
    if type_ in INT_RANGES:
        bits = INT_RANGES[type_]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return {
        "uint16": st.integers(0, 0xFFFF),
        "string": texts,
        "bytes": blobs,
        "uuid": uuids,
        "bool": st.booleans(),
        "float64": st.floats(allow_nan=False),
    }[type_]


def unknown_tags(min_tag: int = 100) -> st.SearchStrategy[tuple[tuple[int, bytes], ...]]:
    return st.lists(
        st.tuples(st.integers(min_tag, min_tag + 50), st.binary(max_size=6)),
        max_size=2,
        unique_by=lambda kv: kv[0],
    ).map(lambda items: tuple(sorted(items)))


def field_value(f: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    if f.type.startswith("[]"):
        elem = f.type[2:]
        inner = struct_value(f.fields, version, flexible) if elem == "struct" else _primitive(elem)
        base: st.SearchStrategy[Any] = st.lists(inner, max_size=3)
    elif f.type == "struct":
        base = struct_value(f.fields, version, flexible)
    else:
        base = _primitive(f.type)
    if f.is_nullable(version):
        return st.one_of(st.none(), base)
    return base


def struct_value(fields: tuple[Field, ...], version: int, flexible: bool) -> st.SearchStrategy[dict]:
    parts = {
        f.name: field_value(f, version, flexible)
        for f in fields
        if f.present(version) and (f.tag is None or flexible)
    }
    base = st.fixed_dictionaries(parts)
    if not flexible:
        return base
    return st.tuples(base, unknown_tags()).map(lambda bt: {**bt[0], UNKNOWN_TAGS: bt[1]} if bt[1] else bt[0])


def keys_for(record_type: int) -> st.SearchStrategy[Any]:
    schema = KEY_SCHEMAS[record_type]
    fields = struct_value(schema.fields, 0, False)
    if record_type in (0, 1):
        return fields.map(lambda d: OffsetCommitKey(d["group"], d["topic"], d["partition"], record_type))
    if record_type == 2:
        return fields.map(lambda d: GroupMetadataKey(d["group"]))
    return fields.map(lambda d: GroupKey(record_type, d["groupId"], d))


i32 = _primitive("int32")
i64 = _primitive("int64")


@st.composite
def offset_commit_values(draw: st.DrawFn, version: int) -> OffsetCommitValue:
    return OffsetCommitValue(
        version=version,
        offset=draw(i64),
        leader_epoch=draw(i32) if version >= 3 else -1,
        metadata=draw(texts),
        commit_timestamp=draw(i64),
        expire_timestamp=draw(i64) if version == 1 else -1,
        topic_id=draw(st.one_of(st.none(), nonzero_uuids)) if version >= 4 else None,
        unknown_tagged_fields=draw(unknown_tags(1)) if version >= 4 else (),
    )


@st.composite
def members(draw: st.DrawFn, version: int) -> MemberMetadata:
    return MemberMetadata(
        member_id=draw(texts),
        group_instance_id=draw(st.one_of(st.none(), texts)) if version >= 3 else None,
        client_id=draw(texts),
        client_host=draw(texts),
        rebalance_timeout=draw(i32) if version >= 1 else -1,
        session_timeout=draw(i32),
        subscription=draw(blobs),
        assignment=draw(blobs),
        unknown_tagged_fields=draw(unknown_tags()) if version >= 4 else (),
    )


@st.composite
def group_metadata_values(draw: st.DrawFn, version: int) -> GroupMetadataValue:
    return GroupMetadataValue(
        version=version,
        protocol_type=draw(st.sampled_from(["", "consumer", "connect"])),
        generation=draw(i32),
        protocol=draw(st.one_of(st.none(), texts)),
        leader=draw(st.one_of(st.none(), texts)),
        current_state_timestamp=draw(i64) if version >= 2 else -1,
        members=tuple(draw(st.lists(members(version), max_size=3))),
        unknown_tagged_fields=draw(unknown_tags()) if version >= 4 else (),
    )
