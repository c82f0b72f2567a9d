"""Segments crafted to make a reader's cost grow faster than its input (shared by tests and benchmarks).

- :func:`keyless_zstd_batch`: a few KB of zstd that inflate to millions of keyless records, one
  ``missing_key`` error each unless errors are aggregated;
- :func:`txn_tombstone_segment`: thousands of open transactional producers, then tens of thousands of
  offset tombstones, each of which visits every open transaction unless pending offsets are indexed by key;
- :func:`resync_bait`: framing lost at the start, then fake batch headers that each claim to run to the end
  of the data, so that a resync checking every candidate's CRC is quadratic.
"""

from __future__ import annotations

import struct

import zstandard
from offsetops.coordinator_core.records.batch import V2_HEADER, V2_HEADER_SIZE
from offsetops.coordinator_core.records.builder import build_record_batch
from offsetops.coordinator_core.records.compression import ZSTD
from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value

from tests.support.mutation import fix_crc

#: A DefaultRecord of 7 bytes: length 6, attributes 0, timestamp delta 0, offset delta 0, null key,
#: null value, no headers.
KEYLESS_RECORD = b"\x0c\x00\x00\x00\x01\x01\x00"
T0 = 1_700_000_000_000


def keyless_zstd_batch(inflated: int, *, base_offset: int = 0) -> bytes:
    """A plain magic-2 zstd batch of ``inflated // 7`` keyless records (valid CRC)."""
    n = inflated // len(KEYLESS_RECORD)
    payload = zstandard.ZstdCompressor(level=19).compress(KEYLESS_RECORD * n)
    head = bytearray(V2_HEADER_SIZE)
    V2_HEADER.pack_into(head, 0, base_offset, V2_HEADER_SIZE - 12 + len(payload), 0, 2, 0, ZSTD, 0, T0, T0,
                        -1, -1, -1, n)  # fmt: skip
    batch = bytearray(head + payload)
    fix_crc(batch, 0)
    return bytes(batch)


def _commit(group: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    key = encode_key(OffsetCommitKey(group=group, topic="orders", partition=partition))
    return key, encode_value(OffsetCommitValue(3, offset, 0, "", T0))


def txn_tombstone_segment(producers: int, tombstones: int, *, per_batch: int = 500) -> bytes:
    """``producers`` transactional batches (one offset commit each, never resolved), then
    ``tombstones`` offset tombstones of other keys in plain batches of ``per_batch``."""
    out = []
    offset = 0
    for pid in range(producers):
        key, value = _commit(f"txn-{pid}", 0, pid)
        out.append(build_record_batch([(key, value, T0)], base_offset=offset, producer_id=1000 + pid,
                                      producer_epoch=0, base_sequence=0, is_transactional=True))  # fmt: skip
        offset += 1
    for start in range(0, tombstones, per_batch):
        n = min(per_batch, tombstones - start)
        records = [(_commit("gone", start + i, 0)[0], None, T0) for i in range(n)]
        out.append(build_record_batch(records, base_offset=offset))
        offset += n
    return b"".join(out)


def resync_bait(size: int, *, step: int = 64) -> bytes:
    """``size`` bytes: a bad magic byte at 0, then every ``step`` bytes a fake magic-2 header whose size
    field runs to the end of the data (count and last offset delta 0, CRC wrong)."""
    data = bytearray(size)
    data[16] = 9  # unknown magic: the framing is lost at byte 0
    for start in range(step, size - V2_HEADER_SIZE, step):
        struct.pack_into(">qi", data, start, 0, size - start - 12)
        data[start + 16] = 2
        struct.pack_into(">I", data, start + 17, 0xDEADBEEF)
    return bytes(data)
