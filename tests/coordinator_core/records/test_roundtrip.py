"""Builder -> reader round trips for every codec and magic, plus the batch attributes."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    build_control_batch,
    build_legacy_message_set,
    build_record_batch,
    read_batches,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]

record_st = st.tuples(
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.binary(max_size=3000)),  # None: a tombstone
    st.integers(min_value=0, max_value=2**41),
)


def _read_all(data: bytes) -> tuple[list, list[DecodeError]]:
    errors: list[DecodeError] = []
    batches = list(read_batches(data, errors=errors))
    return batches, errors


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(record_st, min_size=1, max_size=40),
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(min_value=0, max_value=2**40),
)
def test_v2_round_trip(records: list, codec: int, base_offset: int) -> None:
    data = build_record_batch(records, base_offset=base_offset, compression=codec)
    batches, errors = _read_all(data)
    assert errors == []
    assert len(batches) == 1
    b = batches[0]
    assert (b.magic, b.compression, b.base_offset) == (2, codec, base_offset)
    assert b.last_offset == base_offset + len(records) - 1
    assert b.record_count == len(records)
    assert b.size == len(data) and b.position == 0
    assert b.max_timestamp == max(r[2] for r in records)
    expected = [(base_offset + i, ts, k, v) for i, (k, v, ts) in enumerate(records)]
    assert list(b.iter_records()) == expected


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(record_st, min_size=1, max_size=30),
    codec=st.sampled_from([NONE, GZIP, SNAPPY, LZ4]),
    magic=st.sampled_from([0, 1]),
    base_offset=st.integers(min_value=0, max_value=2**40),
)
def test_legacy_round_trip(records: list, codec: int, magic: int, base_offset: int) -> None:
    data = build_legacy_message_set(records, magic=magic, base_offset=base_offset, compression=codec)
    batches, errors = _read_all(data)
    assert errors == []
    # A plain message set is one batch per message; a compressed one is a single wrapper.
    assert len(batches) == (len(records) if codec == NONE else 1)
    got = [r for b in batches for r in b.iter_records()]
    expected = [(base_offset + i, ts if magic == 1 else -1, k, v) for i, (k, v, ts) in enumerate(records)]
    assert got == expected
    for b in batches:
        assert b.magic == magic and b.compression == codec
        assert b.producer_id == -1 and not b.is_transactional and not b.is_control
        assert b.delete_horizon_ms is None
    assert batches[0].base_offset == base_offset
    assert batches[-1].last_offset == base_offset + len(records) - 1
    assert sum(b.record_count for b in batches) == len(records)


@settings(max_examples=25, deadline=None)
@given(
    groups=st.lists(
        st.tuples(
            st.lists(record_st, min_size=1, max_size=8), st.sampled_from(CODECS), st.sampled_from([0, 1, 2])
        ),
        min_size=1,
        max_size=8,
    )
)
def test_mixed_magic_segment(groups: list) -> None:
    """A segment written across a message-format upgrade holds several magics; positions add up."""
    chunks, expected, offset = [], [], 0
    for records, codec, magic in groups:
        if magic == 2:
            chunks.append(build_record_batch(records, base_offset=offset, compression=codec))
        else:
            codec = NONE if codec == ZSTD else codec
            chunks.append(
                build_legacy_message_set(records, magic=magic, base_offset=offset, compression=codec)
            )
        expected += [(offset + i, -1 if magic == 0 else ts, k, v) for i, (k, v, ts) in enumerate(records)]
        offset += len(records)
    data = b"".join(chunks)
    batches, errors = _read_all(data)
    assert errors == []
    assert [r for b in batches for r in b.iter_records()] == expected
    assert batches[0].position == 0
    for prev, nxt in itertools.pairwise(batches):
        assert nxt.position == prev.position + prev.size
    assert batches[-1].position + batches[-1].size == len(data)


def test_v2_attributes_and_producer_fields() -> None:
    data = build_record_batch(
        [(b"k", b"v", 1000), (b"k2", None, 1005)],
        base_offset=42,
        compression=GZIP,
        producer_id=7001,
        producer_epoch=3,
        base_sequence=17,
        is_transactional=True,
        partition_leader_epoch=9,
    )
    (b,), errors = _read_all(data)
    assert errors == []
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.partition_leader_epoch) == (7001, 3, 17, 9)
    assert b.is_transactional and not b.is_control
    assert (b.base_timestamp, b.max_timestamp, b.timestamp_type) == (1000, 1005, 0)
    assert b.attributes == GZIP | 0x10
    assert b.delete_horizon_ms is None
    assert b.raw() == data


def test_delete_horizon_is_stored_in_base_timestamp() -> None:
    data = build_record_batch(
        [(b"k", None, 5_000), (b"j", b"v", 6_000)], base_offset=0, delete_horizon_ms=90_000
    )
    (b,), _ = _read_all(data)
    assert b.attributes & 0x40
    assert b.delete_horizon_ms == 90_000 == b.base_timestamp
    # Record timestamps survive: their deltas are taken against the horizon (negative deltas).
    assert [r[1] for r in b.iter_records()] == [5_000, 6_000]


def test_log_append_time_uses_max_timestamp() -> None:
    data = build_record_batch(
        [(b"k", b"v", 1), (b"j", b"w", 2)], base_offset=0, max_timestamp=777, log_append_time=True
    )
    (b,), _ = _read_all(data)
    assert b.timestamp_type == 1
    assert [r[1] for r in b.iter_records()] == [777, 777]
    legacy = build_legacy_message_set(
        [(b"k", b"v", 1), (b"j", b"w", 9)], magic=1, base_offset=0, compression=GZIP, log_append_time=True
    )
    (w,), _ = _read_all(legacy)
    assert [r[1] for r in w.iter_records()] == [9, 9]


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch(commit: bool) -> None:
    data = build_control_batch(
        commit, base_offset=100, producer_id=55, producer_epoch=2, coordinator_epoch=11, timestamp=123
    )
    (b,), errors = _read_all(data)
    assert errors == []
    assert b.is_control and b.is_transactional
    assert (b.producer_id, b.producer_epoch, b.record_count) == (55, 2, 1)
    ((offset, ts, key, value),) = list(b.iter_records())
    assert (offset, ts) == (100, 123)
    assert struct.unpack(">hh", key) == (0, 1 if commit else 0)
    assert struct.unpack(">hi", value) == (0, 11)


def test_headers_are_skipped_by_length() -> None:
    data = build_record_batch(
        [(b"k", b"v", 1, [("h1", b"x" * 200), ("h2", None)]), (b"k2", b"v2", 2, [])], base_offset=3
    )
    (b,), errors = _read_all(data)
    assert errors == []
    assert list(b.iter_records()) == [(3, 1, b"k", b"v"), (4, 2, b"k2", b"v2")]


def test_empty_batch_kept_by_the_cleaner() -> None:
    data = build_record_batch([], base_offset=10, last_offset_delta=4, producer_id=9, base_timestamp=0)
    (b,), errors = _read_all(data)
    assert errors == []
    assert (b.record_count, b.base_offset, b.last_offset) == (0, 10, 14)
    assert list(b.iter_records()) == []


def test_magic1_wrapper_offsets_are_relative_and_magic0_absolute() -> None:
    recs = [(b"a", b"1", 10), (b"b", b"2", 11), (b"c", b"3", 12)]
    w1 = build_legacy_message_set(recs, magic=1, base_offset=500, compression=GZIP)
    w0 = build_legacy_message_set(recs, magic=0, base_offset=500, compression=GZIP)
    # The wrapper sits at the last inner offset.
    assert struct.unpack_from(">q", w1)[0] == 502 == struct.unpack_from(">q", w0)[0]
    for data in (w1, w0):
        (b,), errors = _read_all(data)
        assert errors == []
        assert [r[0] for r in b.iter_records()] == [500, 501, 502]
        assert (b.base_offset, b.last_offset, b.record_count) == (500, 502, 3)


def test_bytearray_and_memoryview_input() -> None:
    data = build_record_batch([(b"k", b"v", 1)], base_offset=0)
    for buf in (bytearray(data), memoryview(data)):
        (b,), errors = _read_all(buf)  # type: ignore[arg-type]
        assert errors == [] and list(b.iter_records()) == [(0, 1, b"k", b"v")]


def test_errors_callback() -> None:
    seen: list[DecodeError] = []
    data = build_record_batch([(b"k", b"v", 1)], base_offset=0)
    assert list(read_batches(data[:-3], errors=seen.append)) == []
    assert [e.kind for e in seen] == ["truncated"]


def test_start_position_offsets_positions() -> None:
    data = build_record_batch([(b"k", b"v", 1)], base_offset=0) * 2
    errors: list[DecodeError] = []
    batches = list(read_batches(data, start_position=1000, errors=errors, file="x.log", partition=3))
    assert [b.position for b in batches] == [1000, 1000 + len(data) // 2]
    assert all(b.file == "x.log" and b.partition == 3 for b in batches)
