"""The native twin's reading of offset-commit keys and values (``_cfold.offset_commit_key`` and
``offset_commit_value``, the survivors' hot case) against the pure-Python readers, on every version and
on damaged bytes: the same fields where the twin answers, and the same value or error through the
public decoder with the twin on and off."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.records import native as twin
from offsetops.coordinator_core.schema import (
    OffsetCommitKey,
    SchemaError,
    decode_key,
    decode_offset_commit_value,
    encode_key,
    encode_value,
)

from tests.coordinator_core.schema.mutations import damaged
from tests.coordinator_core.schema.strategies import keys_for, offset_commit_values

needs_native = pytest.mark.skipif(twin.cfold is None, reason="the native twin is not built here")


@contextlib.contextmanager
def _native(on: bool) -> Iterator[None]:
    saved = twin.NATIVE
    twin.NATIVE = on
    try:
        yield
    finally:
        twin.NATIVE = saved


def _outcome(data: bytes, known_tags: bool) -> tuple:
    try:
        return ("ok", decode_offset_commit_value(data, known_tags=known_tags))
    except SchemaError as exc:
        return ("error", exc.kind, str(exc))


@st.composite
def value_bytes(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(a valid encoding of some version, that encoding as damaged)."""
    valid = encode_value(draw(offset_commit_values(draw(st.integers(0, 4)))))
    return valid, draw(damaged(valid))


@needs_native
@settings(max_examples=600, deadline=None)
@given(value_bytes(), st.booleans())
def test_values_read_the_same_natively_and_in_python(encoded: tuple[bytes, bytes], known_tags: bool) -> None:
    valid, data = encoded
    assert twin.cfold is not None
    fast = twin.cfold.offset_commit_value(data)
    with _native(False):
        reference = _outcome(data, known_tags)
    if fast is not None:
        assert reference[0] == "ok"
        v = reference[1]
        assert (
            v.version,
            v.offset,
            v.leader_epoch,
            v.metadata,
            v.commit_timestamp,
            v.expire_timestamp,
        ) == fast[:6]
        assert v.topic_id is None and v.unknown_tagged_fields == ()
    with _native(True):
        assert _outcome(data, known_tags) == reference
    if data == valid and valid[1] <= 3:
        assert fast is not None  # every v0-v3 value is the twin's to read


@needs_native
@settings(max_examples=100, deadline=None)
@given(st.integers(0, 4).flatmap(offset_commit_values))
def test_v4_without_tagged_fields_is_read_natively_and_with_them_in_python(value) -> None:
    data = encode_value(value)
    assert twin.cfold is not None
    fast = twin.cfold.offset_commit_value(data)
    tagged = value.version == 4 and (value.topic_id is not None or value.unknown_tagged_fields)
    assert (fast is None) == bool(tagged)
    if fast is not None:
        assert fast[6] == len(data)  # the end of the struct: nothing after it


@st.composite
def key_bytes(draw: st.DrawFn) -> tuple[bytes, bytes]:
    valid = encode_key(draw(keys_for(draw(st.sampled_from([0, 1, 2])))))
    return valid, draw(damaged(valid))


@needs_native
@settings(max_examples=600, deadline=None)
@given(key_bytes())
def test_keys_read_the_same_natively_and_in_python(encoded: tuple[bytes, bytes]) -> None:
    valid, data = encoded
    assert twin.cfold is not None
    fast = twin.cfold.offset_commit_key(data)
    try:
        key = decode_key(data)
    except SchemaError:
        key = None
    if fast is not None:
        assert isinstance(key, OffsetCommitKey)
        assert (key.group, key.topic, key.partition) == fast
    if data == valid and valid[1] <= 1:
        assert fast is not None and isinstance(key, OffsetCommitKey)


@needs_native
def test_invalid_utf8_is_escaped_as_python_escapes_it() -> None:
    key = b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x07"
    value = b"\x00\x03" + (5).to_bytes(8, "big") + (1).to_bytes(4, "big") + b"\x00\x01\xc3" + bytes(8)
    assert twin.cfold is not None
    assert twin.cfold.offset_commit_key(key) == ("\udcff\udcfe", "t", 7)
    assert twin.cfold.offset_commit_value(value)[3] == "\udcc3"  # type: ignore[index]
    with _native(False):
        assert decode_offset_commit_value(value).metadata == "\udcc3"
