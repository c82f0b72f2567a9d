"""Mutating copies of real segments in a temp dir: patch bytes, fix CRCs, build bombs and zero tails."""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import zstandard
from crc32c import crc32c
from offsetops.coordinator_core.records import build_record_batch, iter_segment_batches
from offsetops.coordinator_core.records.batch import V2_HEADER_SIZE
from offsetops.coordinator_core.records.compression import GZIP, ZSTD

from tests.support.shared import REAL_KAFKA_DIR


def real_partition(name: str) -> Path:
    """``<repo>/__consumer_offsets-N`` under the real fixtures (the caller skips when absent)."""
    return REAL_KAFKA_DIR / name


def copy_partition(src: Path, root: Path) -> Path:
    """Copy one partition dir into ``root`` (a fresh log dir) and return the copy."""
    dst = root / src.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dst, symlinks=True)
    return dst


def segments(pdir: Path) -> list[Path]:
    return sorted(pdir.glob("*.log"))


@dataclass(frozen=True)
class Located:
    """One record of a segment: its batch's position and size, and where its key/value bytes sit."""

    batch_position: int
    batch_size: int
    offset: int
    key: bytes | None
    value: bytes | None
    key_at: int | None
    value_at: int | None


def records(path: Path) -> list[Located]:
    """Every record of an uncompressed magic-2 segment with the file positions of its key and value."""
    data = path.read_bytes()
    out = []
    for b in iter_segment_batches(path, errors=[]):
        if b.magic != 2 or b.compression:
            continue
        raw_start = b.position + V2_HEADER_SIZE
        cursor = raw_start
        for off, _ts, key, value in b.iter_records():
            key_at = data.find(key, cursor, b.position + b.size) if key else None
            if key_at is not None:
                cursor = key_at + len(key)
            value_at = data.find(value, cursor, b.position + b.size) if value else None
            if value_at is not None:
                cursor = value_at + len(value)
            out.append(Located(b.position, b.size, off, key, value, key_at, value_at))
    return out


def fix_crc(data: bytearray, batch_position: int) -> None:
    """Recompute the CRC-32C of the magic-2 batch at ``batch_position`` (so a crafted change is 'valid')."""
    size = struct.unpack_from(">i", data, batch_position + 8)[0]
    end = batch_position + 12 + size
    struct.pack_into(">I", data, batch_position + 17, crc32c(bytes(data[batch_position + 21 : end])))


def patch(path: Path, at: int, new: bytes, *, crc_of: int | None = None) -> None:
    """Overwrite bytes at ``at``; refresh the CRC of the batch at ``crc_of`` when given."""
    data = bytearray(path.read_bytes())
    data[at : at + len(new)] = new
    if crc_of is not None:
        fix_crc(data, crc_of)
    path.write_bytes(bytes(data))


def add_sparse_zero_tail(path: Path, nbytes: int) -> None:
    """Extend a file by ``nbytes`` of zeros without writing them (a sparse hole, like preallocation)."""
    with open(path, "r+b") as f:
        f.truncate(os.fstat(f.fileno()).st_size + nbytes)


_BOMB_CACHE: dict[tuple[int, int], bytes] = {}


def bomb_payload(codec: int, inflated: int) -> bytes:
    """A compressed payload of ``inflated`` zero bytes (built once per process)."""
    key = (codec, inflated)
    if key not in _BOMB_CACHE:
        chunk = bytes(16 << 20)
        if codec == ZSTD:
            c = zstandard.ZstdCompressor(level=3).compressobj(size=inflated)
            parts = [
                c.compress(chunk[: min(len(chunk), inflated - i)]) for i in range(0, inflated, len(chunk))
            ]
            parts.append(c.flush())
        elif codec == GZIP:
            c = zlib.compressobj(9, zlib.DEFLATED, 31)
            parts = [
                c.compress(chunk[: min(len(chunk), inflated - i)]) for i in range(0, inflated, len(chunk))
            ]
            parts.append(c.flush())
        else:
            raise ValueError(codec)
        _BOMB_CACHE[key] = b"".join(parts)
    return _BOMB_CACHE[key]


def bomb_batch(codec: int, inflated: int, *, base_offset: int, record_count: int = 1) -> bytes:
    """A magic-2 batch with a valid CRC whose payload inflates to ``inflated`` bytes."""
    template = bytearray(build_record_batch([(b"\x00\x01k", b"v", 0)], base_offset=base_offset))
    payload = bomb_payload(codec, inflated)
    head = template[:V2_HEADER_SIZE]
    struct.pack_into(">h", head, 21, codec)  # attributes: the codec
    struct.pack_into(">i", head, 57, record_count)
    batch = bytearray(head + payload)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    fix_crc(batch, 0)
    return bytes(batch)
