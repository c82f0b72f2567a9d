"""Interop with an independent implementation: kafka-python's MemoryRecords / MemoryRecordsBuilder.

kafka-python ships without python-snappy and xxhash here; the snappy shim gives it raw snappy blocks
(its own code does the xerial framing), and the xxhash shim its xxh32 for the magic-0 LZ4 header.
"""

from __future__ import annotations

import types

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kcodec
from kafka.record import MemoryRecords, MemoryRecordsBuilder
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
from offsetops.coordinator_core.records.compression import xxh32

COMBOS = [(c, m) for c in (NONE, GZIP, SNAPPY, LZ4, ZSTD) for m in (0, 1, 2) if not (c == ZSTD and m < 2)]

records_st = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=100)),
        st.one_of(st.none(), st.binary(max_size=2000)),
        st.integers(min_value=0, max_value=2**41),
    ),
    min_size=1,
    max_size=25,
)


class _Xxh32:
    def __init__(self, data: bytes) -> None:
        self._h = xxh32(bytes(data))

    def digest(self) -> bytes:
        return self._h.to_bytes(4, "big")


@pytest.fixture(autouse=True)
def _kafka_python_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    snappy = types.SimpleNamespace(
        compress=lambda b: bytes(cramjam.snappy.compress_raw(bytes(b))),
        decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b))),
    )
    monkeypatch.setattr(kcodec, "snappy", snappy)
    monkeypatch.setattr(kcodec, "xxhash", types.SimpleNamespace(xxh32=_Xxh32))


def _kafka_python_read(data: bytes) -> tuple[list, list]:
    mr = MemoryRecords(data)
    batches, records = [], []
    while mr.has_next():
        b = mr.next_batch()
        if b.magic == 2:
            assert b.validate_crc()  # must come before iteration
        batches.append(b)
        records += [(r.offset, r.timestamp, r.key, r.value) for r in b]
    return batches, records


def _ours_read(data: bytes) -> tuple[list, list]:
    errors: list[DecodeError] = []
    batches = list(read_batches(data, errors=errors))
    assert errors == []
    return batches, [r for b in batches for r in b.iter_records()]


@pytest.mark.parametrize(("codec", "magic"), COMBOS)
@settings(max_examples=15, deadline=None)
@given(records=records_st)
def test_kafka_python_reads_what_we_build(codec: int, magic: int, records: list) -> None:
    if magic == 2:
        data = build_record_batch(records, base_offset=1000, compression=codec)
    else:
        data = build_legacy_message_set(records, magic=magic, base_offset=1000, compression=codec)
    kbatches, krecords = _kafka_python_read(data)
    expected = [(1000 + i, ts if magic else None, k, v) for i, (k, v, ts) in enumerate(records)]
    assert krecords == expected
    if magic == 2:
        (kb,) = kbatches
        assert (kb.compression_type, kb.base_offset, kb.last_offset_delta) == (codec, 1000, len(records) - 1)


@pytest.mark.parametrize(("codec", "magic"), COMBOS)
@settings(max_examples=15, deadline=None)
@given(records=records_st)
def test_we_read_what_kafka_python_builds(codec: int, magic: int, records: list) -> None:
    builder = MemoryRecordsBuilder(magic, codec, batch_size=1 << 30, offset=500)
    for k, v, ts in records:
        assert builder.append(ts, k, v) is not None
    builder.close()
    data = bytes(builder.buffer())
    batches, ours = _ours_read(data)
    kbatches, theirs = _kafka_python_read(data)
    assert ours == [(o, -1 if t is None else t, k, v) for o, t, k, v in theirs]
    assert [r[0] for r in ours] == list(range(500, 500 + len(records)))
    assert [r[2:] for r in ours] == [(k, v) for k, v, _ts in records]
    assert all(b.magic == magic for b in batches)
    # kafka-python falls back to no compression when compressing would not shrink the batch.
    assert [b.compression for b in batches] == [kb.compression_type for kb in kbatches]
    assert {b.compression for b in batches} <= {codec, NONE}


def test_kafka_python_transactional_batch_fields() -> None:
    builder = MemoryRecordsBuilder(
        2,
        GZIP,
        batch_size=1 << 20,
        offset=77,
        transactional=True,
        producer_id=4242,
        producer_epoch=5,
        base_sequence=12,
    )
    builder.append(1_600_000_000_000, b"key", b"value")
    builder.close()
    (b,), records = _ours_read(bytes(builder.buffer()))
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional) == (4242, 5, 12, True)
    assert records == [(77, 1_600_000_000_000, b"key", b"value")]


def test_kafka_python_sees_our_control_batch() -> None:
    data = build_control_batch(
        True, base_offset=9, producer_id=3, producer_epoch=1, coordinator_epoch=4, timestamp=5
    )
    (kb,), _ = _kafka_python_read(data)
    assert kb.is_control_batch and kb.is_transactional
    assert (kb.producer_id, kb.producer_epoch) == (3, 1)


@pytest.mark.parametrize(("codec", "magic"), [c for c in COMBOS if c[0] != NONE])
def test_compressible_kafka_python_batches_stay_compressed(codec: int, magic: int) -> None:
    builder = MemoryRecordsBuilder(magic, codec, batch_size=1 << 30, offset=0)
    records = [(b"group-%d" % (i % 3), b"offset-commit-value " * 20, 1_000 + i) for i in range(30)]
    for k, v, ts in records:
        builder.append(ts, k, v)
    builder.close()
    batches, ours = _ours_read(bytes(builder.buffer()))
    assert [b.compression for b in batches] == [codec]
    assert ours == [(i, ts if magic else -1, k, v) for i, (k, v, ts) in enumerate(records)]
