"""Hypothesis round-trips for every record type and version in the tables."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.schema import (
    GenericValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_value,
    encode_key,
    encode_value,
)
from offsetops.coordinator_core.schema.codec import decode_body, encode_versioned
from offsetops.coordinator_core.schema.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from offsetops.coordinator_core.schema.messages import (
    GROUP_METADATA_VALUE,
    KEY_SCHEMAS,
    OFFSET_COMMIT_VALUE,
    VALUE_SCHEMAS,
)
from offsetops.coordinator_core.schema.share_streams import EARLY_ACCESS_VALUE_SCHEMAS
from offsetops.coordinator_core.schema.types import CorruptData
from offsetops.coordinator_core.schema.values import group_metadata_from_fields, offset_commit_from_fields

from .strategies import (
    group_metadata_values,
    i32,
    keys_for,
    offset_commit_values,
    struct_value,
    texts,
)

EXAMPLES = settings(max_examples=60, deadline=None)

GENERIC_CASES = [(rt, v) for rt, schema in sorted(VALUE_SCHEMAS.items()) if rt > 2 for v in schema.versions()]


@pytest.mark.parametrize("record_type", sorted(KEY_SCHEMAS))
@EXAMPLES
@given(data=st.data())
def test_key_round_trip(record_type: int, data: st.DataObject) -> None:
    key = data.draw(keys_for(record_type))
    raw = encode_key(key)
    assert raw[:2] == record_type.to_bytes(2, "big")
    assert decode_key(raw) == key
    assert encode_key(decode_key(raw)) == raw


@pytest.mark.parametrize("version", OFFSET_COMMIT_VALUE.versions())
@EXAMPLES
@given(data=st.data())
def test_offset_commit_value_round_trip(version: int, data: st.DataObject) -> None:
    value = data.draw(offset_commit_values(version))
    raw = encode_value(value)
    assert decode_offset_commit_value(raw) == value
    for record_type in (0, 1):
        assert decode_value(record_type, raw, strict=True) == value
    assert encode_value(decode_offset_commit_value(raw)) == raw
    # The hand-unrolled fast path agrees with the table-driven reader.
    fields, end = decode_body(OFFSET_COMMIT_VALUE, version, raw, 2)
    assert end == len(raw)
    assert offset_commit_from_fields(version, fields) == value


@pytest.mark.parametrize("version", GROUP_METADATA_VALUE.versions())
@EXAMPLES
@given(data=st.data())
def test_group_metadata_value_round_trip(version: int, data: st.DataObject) -> None:
    value = data.draw(group_metadata_values(version))
    raw = encode_value(value)
    assert decode_group_metadata_value(raw) == value
    assert decode_value(2, raw, strict=True) == value
    assert encode_value(decode_group_metadata_value(raw)) == raw
    fields, end = decode_body(GROUP_METADATA_VALUE, version, raw, 2)
    assert end == len(raw)
    assert group_metadata_from_fields(version, fields) == value


@pytest.mark.parametrize("version", OFFSET_COMMIT_VALUE.versions())
@EXAMPLES
@given(data=st.data())
def test_offset_commit_table_dicts_round_trip(version: int, data: st.DataObject) -> None:
    """Drive the table codec directly with dicts drawn from the table (incl. unknown tagged fields)."""
    flexible = OFFSET_COMMIT_VALUE.is_flexible(version)
    fields = data.draw(struct_value(OFFSET_COMMIT_VALUE.fields, version, flexible))
    raw = encode_versioned(OFFSET_COMMIT_VALUE, version, fields)
    decoded = decode_offset_commit_value(raw)
    assert encode_value(decoded) == raw


@pytest.mark.parametrize("version", GROUP_METADATA_VALUE.versions())
@EXAMPLES
@given(data=st.data())
def test_group_metadata_table_dicts_round_trip(version: int, data: st.DataObject) -> None:
    flexible = GROUP_METADATA_VALUE.is_flexible(version)
    fields = data.draw(struct_value(GROUP_METADATA_VALUE.fields, version, flexible))
    raw = encode_versioned(GROUP_METADATA_VALUE, version, fields)
    assert decode_body(GROUP_METADATA_VALUE, version, raw, 2)[0] == fields
    assert encode_value(decode_group_metadata_value(raw)) == raw


@pytest.mark.parametrize(("record_type", "version"), GENERIC_CASES)
@EXAMPLES
@given(data=st.data())
def test_generic_value_round_trip(record_type: int, version: int, data: st.DataObject) -> None:
    schema = VALUE_SCHEMAS[record_type]
    fields = data.draw(struct_value(schema.fields, version, schema.is_flexible(version)))
    value = GenericValue(record_type, version, fields)
    raw = encode_value(value)
    decoded = decode_value(record_type, raw, strict=True)
    assert decoded == value
    assert decoded.decoded
    assert encode_value(decoded) == raw


@pytest.mark.parametrize("version", range(4))
@EXAMPLES
@given(data=st.data())
def test_subscription_round_trip(version: int, data: st.DataObject) -> None:
    topics = data.draw(st.lists(texts, max_size=3))
    owned = data.draw(st.dictionaries(texts, st.lists(i32, max_size=3), max_size=2)) if version >= 1 else {}
    sub = Subscription(
        version=version,
        topics=tuple(topics),
        user_data=data.draw(st.one_of(st.none(), st.binary(max_size=8))),
        owned_partitions=owned,
        generation_id=data.draw(i32) if version >= 2 else -1,
        rack_id=data.draw(st.one_of(st.none(), texts)) if version >= 3 else None,
    )
    raw = encode_subscription(sub)
    assert decode_subscription(raw) == sub
    assert encode_subscription(decode_subscription(raw)) == raw  # type: ignore[arg-type]


@pytest.mark.parametrize("version", range(4))
@EXAMPLES
@given(data=st.data())
def test_assignment_round_trip(version: int, data: st.DataObject) -> None:
    asg = Assignment(
        version=version,
        partitions=data.draw(st.dictionaries(texts, st.lists(i32, max_size=3), max_size=3)),
        user_data=data.draw(st.one_of(st.none(), st.binary(max_size=8))),
    )
    raw = encode_assignment(asg)
    assert decode_assignment(raw) == asg
    assert encode_assignment(decode_assignment(raw)) == raw  # type: ignore[arg-type]


@EXAMPLES
@given(data=st.binary(max_size=64), record_type=st.integers(0, 30))
def test_decoding_is_total(data: bytes, record_type: int) -> None:
    """Arbitrary bytes give a value or a SchemaError, never another exception."""
    from offsetops.coordinator_core.schema import SchemaError

    for decode in (lambda: decode_key(data), lambda: decode_value(record_type, data)):
        try:
            decode()
        except SchemaError as e:
            assert e.kind in ("corrupt_key", "corrupt_value", "unknown_value_version")
    decode_subscription(data)
    decode_assignment(data)


EARLY_CASES = [
    (rt, i) for rt, layouts in sorted(EARLY_ACCESS_VALUE_SCHEMAS.items()) for i in range(len(layouts))
]


@pytest.mark.parametrize(("record_type", "index"), EARLY_CASES)
@EXAMPLES
@given(data=st.data())
def test_early_access_value_round_trip(record_type: int, index: int, data: st.DataObject) -> None:
    """Every early-access layout (Kafka 4.0 share groups, the 4.0/4.1 streams records) decodes as itself
    unless its bytes are also exactly a released value, and re-encodes to the same bytes either way."""
    layout = EARLY_ACCESS_VALUE_SCHEMAS[record_type][index]
    fields = data.draw(struct_value(layout.fields, 0, True))
    raw = encode_versioned(layout, 0, fields)
    decoded = decode_value(record_type, raw, strict=True)
    assert isinstance(decoded, GenericValue)
    released = VALUE_SCHEMAS.get(record_type)
    fits_released = False
    if released is not None:
        try:
            fits_released = decode_body(released, 0, raw, 2)[1] == len(raw)
        except CorruptData:
            fits_released = False
    if not fits_released:
        assert decoded.early_access is not None
        assert (
            decoded.fields
            == decode_body(
                next(s for s in EARLY_ACCESS_VALUE_SCHEMAS[record_type] if s.name == decoded.early_access),
                0,
                raw,
                2,
            )[0]
        )
        assert encode_value(decoded) == raw
    else:
        # The bytes also read as the released layout, maybe with tagged fields out of tag order (which a
        # reader accepts): the writer puts them in order, and writing what it reads back changes nothing.
        again = encode_value(decoded)
        assert encode_value(decode_value(record_type, again, strict=True)) == again
