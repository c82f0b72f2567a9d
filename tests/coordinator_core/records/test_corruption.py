"""Bad input: every problem is one typed DecodeError naming file, partition, position and offset."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from crc32c import crc32c
from offsetops.coordinator_core.errors import DecodeError, OffsetsDecodeException
from offsetops.coordinator_core.records import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    build_legacy_message_set,
    build_record_batch,
    iter_segment_batches,
    read_batches,
)


def _batches(n: int = 3, start: int = 0) -> list[bytes]:
    return [
        build_record_batch([(b"key%d" % i, b"value%d" % i, 1_000 + i)] * 2, base_offset=start + 2 * i)
        for i in range(n)
    ]


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return path


def _read_file(path: Path, chunk_size: int = 8 << 20) -> tuple[list, list[DecodeError]]:
    errors: list[DecodeError] = []
    batches = list(iter_segment_batches(path, partition=7, errors=errors, chunk_size=chunk_size))
    return batches, errors


def _refresh_v2_crc(batch: bytearray) -> None:
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))


CHUNKS = [8 << 20, 64]  # whole file at once, and chunks smaller than a batch


@pytest.mark.parametrize("chunk_size", CHUNKS)
def test_crc_mismatch_skips_one_batch_and_goes_on(tmp_path: Path, chunk_size: int) -> None:
    parts = _batches(3)
    bad = bytearray(parts[1])
    bad[-1] ^= 0x01  # flip a payload bit: the stored CRC-32C no longer matches
    path = _write(tmp_path, parts[0] + bytes(bad) + parts[2])
    batches, errors = _read_file(path, chunk_size)
    assert [b.base_offset for b in batches] == [0, 4]  # the batch after the bad one is still read
    assert len(errors) == 1
    e = errors[0]
    assert (e.kind, e.file, e.partition, e.position, e.offset) == (
        "crc_mismatch",
        str(path),
        7,
        len(parts[0]),
        2,
    )


@pytest.mark.parametrize("chunk_size", CHUNKS)
def test_flipped_crc_byte(tmp_path: Path, chunk_size: int) -> None:
    parts = _batches(3)
    bad = bytearray(parts[0])
    bad[17] ^= 0xFF  # the CRC field itself
    path = _write(tmp_path, bytes(bad) + parts[1] + parts[2])
    batches, errors = _read_file(path, chunk_size)
    assert [b.base_offset for b in batches] == [2, 4]
    assert [(e.kind, e.position, e.offset) for e in errors] == [("crc_mismatch", 0, 0)]


def test_verify_crc_false_keeps_the_batch() -> None:
    bad = bytearray(_batches(1)[0])
    bad[17] ^= 0xFF
    errors: list[DecodeError] = []
    batches = list(read_batches(bytes(bad), errors=errors, verify_crc=False))
    assert errors == [] and len(batches) == 1


def test_legacy_crc_mismatch(tmp_path: Path) -> None:
    msgs = [build_legacy_message_set([(b"k", b"v%d" % i, i)], magic=1, base_offset=i) for i in range(3)]
    bad = bytearray(msgs[1])
    bad[-1] ^= 0x40
    path = _write(tmp_path, msgs[0] + bytes(bad) + msgs[2])
    batches, errors = _read_file(path)
    assert [b.base_offset for b in batches] == [0, 2]
    assert [(e.kind, e.file, e.partition, e.position, e.offset) for e in errors] == [
        ("crc_mismatch", str(path), 7, len(msgs[0]), 1)
    ]


@pytest.mark.parametrize("chunk_size", CHUNKS)
@pytest.mark.parametrize("cut", [1, 20, 60])
def test_truncated_tail_stops_with_one_error(tmp_path: Path, chunk_size: int, cut: int) -> None:
    parts = _batches(3)
    data = b"".join(parts)
    path = _write(tmp_path, data[:-cut])  # a crash mid-append leaves a partial last batch
    batches, errors = _read_file(path, chunk_size)
    assert [b.base_offset for b in batches] == [0, 2]
    assert [(e.kind, e.position, e.offset) for e in errors] == [
        ("truncated", len(parts[0]) + len(parts[1]), 4)
    ]
    assert errors[0].file == str(path)


@pytest.mark.parametrize("keep", [8, 10, 16])
def test_truncated_inside_the_header(keep: int) -> None:
    # keep >= 8 so the tail holds the non-zero byte of offset 2: an all-zero tail is padding (below).
    first, second = _batches(2)
    errors: list[DecodeError] = []
    batches = list(read_batches(first + second[:keep], errors=errors, file="f.log", partition=1))
    assert len(batches) == 1
    assert [(e.kind, e.position, e.file, e.partition) for e in errors] == [
        ("truncated", len(first), "f.log", 1)
    ]
    assert errors[0].offset == (2 if keep >= 12 else None)


@pytest.mark.parametrize("size", [-1, -1000, 0, 5, 13])
def test_bad_length_resyncs_at_the_next_valid_batch(tmp_path: Path, size: int) -> None:
    parts = _batches(3)
    bad = bytearray(parts[1])
    struct.pack_into(">i", bad, 8, size)
    path = _write(tmp_path, parts[0] + bytes(bad) + parts[2])
    batches, errors = _read_file(path)
    # framing is lost at batch 2; the next batch with a valid CRC-32C is found and read
    assert [b.base_offset for b in batches] == [0, 4]
    assert [(e.kind, e.position, e.offset, e.partition, e.skipped_bytes) for e in errors] == [
        ("bad_length", len(parts[0]), 2, 7, len(bad))
    ]
    resumed = len(parts[0]) + len(bad)
    assert f"skipped {len(bad)} bytes, resumed at byte {resumed}" in errors[0].reason


def test_bad_length_with_nothing_valid_after_it_skips_the_rest_and_says_so() -> None:
    parts = _batches(2)
    bad = bytearray(parts[1])
    struct.pack_into(">i", bad, 8, 5)
    errors: list[DecodeError] = []
    batches = list(read_batches(parts[0] + bytes(bad) + b"\x02" * 100, errors=errors))
    assert [b.base_offset for b in batches] == [0]
    assert [(e.kind, e.skipped_bytes) for e in errors] == [("bad_length", len(bad) + 100)]
    assert f"skipped the remaining {len(bad) + 100} bytes" in errors[0].reason


def test_batch_above_the_size_limit_is_bad_length_and_resyncs() -> None:
    parts = _batches(3)
    errors: list[DecodeError] = []
    limit = len(parts[1]) - 12  # the middle batch is bigger than this "message.max.bytes"
    big = bytearray(parts[1])
    big += b"x" * 40
    struct.pack_into(">i", big, 8, len(big) - 12)
    batches = list(read_batches(parts[0] + bytes(big) + parts[2], errors=errors, max_batch_bytes=limit))
    assert [b.base_offset for b in batches] == [0, 4]
    assert [(e.kind, e.position) for e in errors] == [("bad_length", len(parts[0]))]
    assert "above the batch limit" in errors[0].reason


def test_v2_size_below_header_is_bad_length() -> None:
    bad = bytearray(_batches(1)[0])
    struct.pack_into(">i", bad, 8, 30)  # fine for a legacy message, too small for a v2 header
    errors: list[DecodeError] = []
    assert list(read_batches(bytes(bad), errors=errors)) == []
    assert [(e.kind, e.position) for e in errors] == [("bad_length", 0)]
    assert "49" in errors[0].reason


def test_length_beyond_the_file_is_reported_as_truncated() -> None:
    parts = _batches(2)
    bad = bytearray(parts[1])
    struct.pack_into(">i", bad, 8, 10_000_000)
    errors: list[DecodeError] = []
    assert len(list(read_batches(parts[0] + bytes(bad), errors=errors))) == 1
    assert [(e.kind, e.position, e.offset) for e in errors] == [("truncated", len(parts[0]), 2)]


@pytest.mark.parametrize("chunk_size", CHUNKS)
def test_unknown_magic_resyncs(tmp_path: Path, chunk_size: int) -> None:
    parts = _batches(3)
    bad = bytearray(parts[1])
    bad[16] = 3
    path = _write(tmp_path, parts[0] + bytes(bad) + parts[2])
    batches, errors = _read_file(path, chunk_size)
    assert [b.base_offset for b in batches] == [0, 4]
    assert [(e.kind, e.file, e.position, e.offset, e.skipped_bytes) for e in errors] == [
        ("unknown_magic", str(path), len(parts[0]), 2, len(bad))
    ]


def test_negative_record_count_is_corrupt_batch_and_skipped() -> None:
    parts = _batches(2)
    bad = bytearray(parts[0])
    struct.pack_into(">i", bad, 57, -5)
    _refresh_v2_crc(bad)
    errors: list[DecodeError] = []
    batches = list(read_batches(bytes(bad) + parts[1], errors=errors))
    assert [b.base_offset for b in batches] == [2]
    assert [(e.kind, e.position, e.offset) for e in errors] == [("corrupt_batch", 0, 0)]


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_garbage_compressed_payload_raises_from_iter_records(tmp_path: Path, codec: int) -> None:
    good = build_record_batch([(b"k", b"v", 1)], base_offset=0)
    bad = bytearray(build_record_batch([(b"k", b"v" * 100, 1)] * 5, base_offset=1, compression=codec))
    bad[61:] = b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" * 2 + b"\x00\x00\x00\x10" + b"\xaa" * (len(bad) - 81)
    _refresh_v2_crc(bad)  # the CRC is right: only the payload is garbage
    path = _write(tmp_path, good + bytes(bad))
    batches, errors = _read_file(path)
    assert errors == [] and len(batches) == 2
    with pytest.raises(OffsetsDecodeException) as info:
        list(batches[1].iter_records())
    e = info.value.error
    assert (e.kind, e.file, e.partition, e.position, e.offset) == (
        "decompression",
        str(path),
        7,
        len(good),
        1,
    )


def test_garbage_legacy_wrapper_raises_from_iter_records() -> None:
    inner = b"\x00" * 3 + b"not gzip at all"
    body = (
        bytes((1, GZIP)) + struct.pack(">q", 5) + b"\xff\xff\xff\xff" + struct.pack(">i", len(inner)) + inner
    )
    msg = struct.pack(">qiI", 40, 4 + len(body), zlib.crc32(body)) + body
    errors: list[DecodeError] = []
    (b,) = list(read_batches(msg, errors=errors, file="w.log", partition=2))
    assert errors == []
    with pytest.raises(OffsetsDecodeException) as info:
        list(b.iter_records())
    e = info.value.error
    assert (e.kind, e.file, e.partition, e.position, e.offset) == ("decompression", "w.log", 2, 0, 40)


def test_record_count_too_high_is_corrupt_record() -> None:
    bad = bytearray(build_record_batch([(b"k", b"v", 1)] * 2, base_offset=9))
    struct.pack_into(">i", bad, 57, 3)
    _refresh_v2_crc(bad)
    (b,) = list(read_batches(bytes(bad), errors=[], file="c.log"))
    with pytest.raises(OffsetsDecodeException) as info:
        list(b.iter_records())
    assert (info.value.error.kind, info.value.error.offset, info.value.error.file) == (
        "corrupt_record",
        9,
        "c.log",
    )


def test_record_count_too_low_is_corrupt_record() -> None:
    bad = bytearray(build_record_batch([(b"k", b"v", 1)] * 2, base_offset=9))
    struct.pack_into(">i", bad, 57, 1)
    _refresh_v2_crc(bad)
    (b,) = list(read_batches(bytes(bad), errors=[]))
    with pytest.raises(OffsetsDecodeException) as info:
        list(b.iter_records())
    assert info.value.error.kind == "corrupt_record"
    assert "left after" in info.value.error.reason


def test_record_length_overrun_is_corrupt_record() -> None:
    bad = bytearray(build_record_batch([(b"k", b"v", 1)], base_offset=0))
    bad[61] = 0x02  # record length varint: 1, far shorter than the record
    _refresh_v2_crc(bad)
    (b,) = list(read_batches(bytes(bad), errors=[]))
    with pytest.raises(OffsetsDecodeException) as info:
        list(b.iter_records())
    assert info.value.error.kind == "corrupt_record"


@pytest.mark.parametrize("chunk_size", [*CHUNKS, 5])
@pytest.mark.parametrize("padding", [1, 11, 12, 5000])
def test_trailing_zero_padding_is_the_end_of_the_log(tmp_path: Path, chunk_size: int, padding: int) -> None:
    """log.preallocate leaves zeros after the last batch: the end of the data, reported as a notice."""
    parts = _batches(2)
    path = _write(tmp_path, b"".join(parts) + bytes(padding))
    batches, errors = _read_file(path, chunk_size)
    # Fewer than 12 zero bytes could be a batch at offset 0 cut before its size field: an error.
    kind, notice = ("zero_tail", True) if padding >= 12 else ("truncated", False)
    assert [(e.kind, e.position, e.skipped_bytes, e.is_notice) for e in errors] == [
        (kind, len(parts[0]) + len(parts[1]), padding, notice)
    ]
    assert [b.base_offset for b in batches] == [0, 2]


@pytest.mark.parametrize("chunk_size", [*CHUNKS, 5])
def test_zeros_then_data_is_reported_once(tmp_path: Path, chunk_size: int) -> None:
    parts = _batches(2)
    path = _write(tmp_path, parts[0] + bytes(40) + parts[1])
    batches, errors = _read_file(path, chunk_size)
    assert [b.base_offset for b in batches] == [0, 2]  # resynced after the zero run
    assert [(e.kind, e.position, e.skipped_bytes) for e in errors] == [("bad_length", len(parts[0]), 40)]


def test_missing_file_is_an_io_error(tmp_path: Path) -> None:
    batches, errors = _read_file(tmp_path / "nope.log")
    assert batches == []
    assert [(e.kind, e.partition) for e in errors] == [("io", 7)]
