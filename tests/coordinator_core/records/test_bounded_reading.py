"""Memory stays bounded whatever the bytes say: zip bombs, oversized batches, zero tails; lost framing
is quantified and resynced. Real segments are mutated in a temp dir."""

from __future__ import annotations

import struct
from pathlib import Path

import cramjam
import lz4.frame
import pytest
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.records import GZIP, LZ4, SNAPPY, ZSTD, read_batches
from offsetops.coordinator_core.records.compression import DecompressionLimitError, compress, decompress

from tests.support.memory import peak_rss_mb, start_peak_rss
from tests.support.mutation import (
    add_sparse_zero_tail,
    bomb_batch,
    bomb_payload,
    copy_partition,
    real_partition,
    records,
    segments,
)

GIB = 1 << 30
BIG = "William0423__kafka/__consumer_offsets-28"  # 8202 single-record batches, Kafka 2.1


def _real(tmp_path: Path, name: str = BIG) -> Path:
    src = real_partition(name)
    if not src.is_dir():
        pytest.skip("real Kafka fixtures not found")
    return copy_partition(src, tmp_path / "logs")


@pytest.mark.parametrize("codec", [GZIP, ZSTD])
def test_zip_bomb_stops_at_the_limit(codec: int) -> None:
    payload = bomb_payload(codec, 256 << 20)
    before = start_peak_rss()
    with pytest.raises(DecompressionLimitError, match="beyond"):
        decompress(codec, payload, limit=1 << 20)
    assert peak_rss_mb() - before < 64  # a few MiB over the limit at most, never the 256 MiB


def test_lz4_and_snappy_bombs_stop_at_the_limit() -> None:
    zeros = bytes(8 << 20)
    for codec, payload in (
        (LZ4, lz4.frame.compress(zeros)),
        (SNAPPY, bytes(cramjam.snappy.compress_raw(zeros))),
    ):
        with pytest.raises(DecompressionLimitError):
            decompress(codec, payload, limit=1 << 20)
        assert len(decompress(codec, payload, limit=8 << 20)) == len(zeros)


@pytest.mark.parametrize("codec", [GZIP, ZSTD])
def test_bounded_decompression_round_trips(codec: int) -> None:
    data = b"offsets " * 100_000
    assert decompress(codec, compress(codec, data), limit=len(data)) == data
    with pytest.raises(DecompressionLimitError):
        decompress(codec, compress(codec, data), limit=len(data) - 1)


def test_bomb_batch_in_a_real_segment_is_one_decompression_error(tmp_path: Path) -> None:
    pdir = _real(tmp_path)
    seg = segments(pdir)[0]
    clean = load_log_dir(pdir.parent)[0]
    with open(seg, "ab") as f:
        f.write(bomb_batch(ZSTD, GIB, base_offset=clean.stats.last_offset + 1))
    before = start_peak_rss()
    [cache] = load_log_dir(pdir.parent)
    assert peak_rss_mb() - before < 200
    assert [(e.kind, e.offset) for e in cache.stats.errors] == [
        ("decompression", clean.stats.last_offset + 1)
    ]
    assert "beyond" in cache.stats.errors[0].reason
    assert cache.groups.keys() == clean.groups.keys()


def test_sparse_gib_zero_tail_is_a_notice_and_not_read(tmp_path: Path) -> None:
    pdir = _real(tmp_path)
    seg = segments(pdir)[0]
    size = seg.stat().st_size
    clean = load_log_dir(pdir.parent)[0]
    add_sparse_zero_tail(seg, GIB)
    before = start_peak_rss()
    [cache] = load_log_dir(pdir.parent)
    assert peak_rss_mb() - before < 100
    assert [(e.kind, e.position, e.skipped_bytes, e.is_notice) for e in cache.stats.errors] == [
        ("zero_tail", size, GIB, True)
    ]
    assert {g: c.offsets for g, c in cache.groups.items()} == {g: c.offsets for g, c in clean.groups.items()}


def test_bad_length_in_a_real_segment_resyncs_and_says_what_it_skipped(tmp_path: Path) -> None:
    pdir = _real(tmp_path)
    seg = segments(pdir)[0]
    located = records(seg)
    victim = located[4000]
    data = bytearray(seg.read_bytes())
    struct.pack_into(">i", data, victim.batch_position + 8, 7)  # below any minimum: framing lost
    seg.write_bytes(bytes(data))
    [cache] = load_log_dir(pdir.parent)
    [err] = cache.stats.errors
    assert (err.kind, err.position, err.offset, err.skipped_bytes) == (
        "bad_length",
        victim.batch_position,
        victim.offset,
        victim.batch_size,
    )
    assert f"resumed at byte {victim.batch_position + victim.batch_size}" in err.reason
    assert cache.stats.records == len(located) - 1  # only the one batch is lost


def test_garbage_tail_after_real_data_is_skipped_to_the_end() -> None:
    errors: list[DecodeError] = []
    good = bytes(bomb_batch(GZIP, 1 << 10, base_offset=0))
    junk = b"\x00\x00\x00\x00\x00\x00\x00\x09\xff\xff\xff\xf0" + b"\x07" * 500
    assert len(list(read_batches(good + junk, errors=errors))) == 1
    assert [(e.kind, e.skipped_bytes) for e in errors] == [("unknown_magic", len(junk))]
