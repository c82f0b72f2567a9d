"""Codecs as Kafka writes them: xerial snappy, LZ4 frames (incl. KAFKA-3160), zstd without content size."""

from __future__ import annotations

import struct

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.records.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    CompressionError,
    compress,
    decompress,
    xxh32,
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0x02CC5D05),
        (b"a", 0x550D7456),
        (b"abc", 0x32D153FF),
        (b"Nobody inspects the spammish repetition", 0xE2293B2F),
    ],
)
def test_xxh32_known_vectors(data: bytes, expected: int) -> None:
    assert xxh32(data) == expected


def test_xxh32_matches_lz4_frame_header_checksum() -> None:
    # The LZ4 frame's HC byte is (xxh32(FLG BD) >> 8) & 0xff; lz4 computes it in C.
    frame = lz4.frame.compress(b"x" * 100, block_size=lz4.frame.BLOCKSIZE_MAX64KB, store_size=False)
    assert frame[6] == (xxh32(frame[4:6]) >> 8) & 0xFF


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=200_000), codec=st.sampled_from([NONE, GZIP, SNAPPY, LZ4, ZSTD]))
def test_compress_decompress_round_trip(data: bytes, codec: int) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_snappy_writes_xerial_framing_in_32k_blocks() -> None:
    data = bytes(range(256)) * 400  # 102,400 bytes: four xerial blocks
    out = compress(SNAPPY, data)
    assert out[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", out[8:16]) == (1, 1)
    pos, blocks = 16, 0
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        pos += 4 + n
        blocks += 1
    assert pos == len(out)
    assert blocks == 4


def test_snappy_reads_raw_blocks_too() -> None:
    data = b"group-coordinator " * 1000
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(SNAPPY, raw) == data


def test_lz4_magic0_has_kafka_3160_broken_checksum_and_still_reads() -> None:
    data = b"offset commit " * 500
    frame = compress(LZ4, data, magic=0)
    # The broken checksum hashes the frame magic too (KAFKA-3160).
    assert frame[6] == (xxh32(frame[:6]) >> 8) & 0xFF
    assert frame[6] != (xxh32(frame[4:6]) >> 8) & 0xFF
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(frame)  # a strict reader rejects it
    assert decompress(LZ4, frame) == data  # we are lenient


def test_lz4_magic1_and_2_have_a_correct_checksum() -> None:
    for magic in (1, 2):
        frame = compress(LZ4, b"abc" * 100, magic=magic)
        assert lz4.frame.decompress(frame) == b"abc" * 100


def test_lz4_lenient_reader_handles_uncompressed_blocks_and_many_blocks() -> None:
    import os

    data = os.urandom(200_000)  # incompressible: stored blocks, several 64 KiB blocks
    frame = bytearray(compress(LZ4, data, magic=2))
    frame[6] ^= 0xFF  # force the lenient path
    assert decompress(LZ4, bytes(frame)) == data


def test_zstd_frame_without_content_size() -> None:
    data = b"zstd-jni streams without a content size " * 1000
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(frame)  # the naive call fails
    assert decompress(ZSTD, frame) == data


def test_zstd_is_refused_for_legacy_magic() -> None:
    with pytest.raises(CompressionError):
        compress(ZSTD, b"x", magic=1)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_garbage_raises_compression_error(codec: int) -> None:
    with pytest.raises(CompressionError):
        decompress(codec, b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x09garbage!!")


def test_truncated_zstd_is_an_error() -> None:
    frame = compress(ZSTD, b"x" * 10_000 + bytes(range(256)) * 10)
    with pytest.raises(CompressionError):
        decompress(ZSTD, frame[:-5])


def test_unknown_codec() -> None:
    with pytest.raises(CompressionError):
        decompress(7, b"")
    with pytest.raises(CompressionError):
        compress(5, b"")
