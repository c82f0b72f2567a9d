"""The Spark reload reports the same errors, in the same order per partition, as the single-process
reload on corrupted copies of real log dirs, and survives a zero tail."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.records.compression import ZSTD
from offsetops.pipelines.reload import read_decode_errors, read_tables, run_reload

from tests.pipelines.test_reload import assert_tables_equal
from tests.support.mutation import add_sparse_zero_tail, bomb_batch, patch, records, segments
from tests.support.shared import REAL_KAFKA_DIR

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def corrupted(tmp_path: Path) -> Path:
    if not REAL_KAFKA_DIR.is_dir():
        pytest.skip("real Kafka fixtures not found")
    root = tmp_path / "logs"
    for src in ("DanielMorales9__kafkafun/__consumer_offsets-39", "William0423__kafka/__consumer_offsets-28"):
        shutil.copytree(REAL_KAFKA_DIR / src, root / Path(src).name)
    # partition 39: a superseded value with an unknown version, a lost batch length, fs anomalies
    p39 = root / "__consumer_offsets-39"
    seg = segments(p39)[0]
    located = records(seg)
    patch(seg, located[10].value_at, b"\x00\x09", crc_of=located[10].batch_position)
    data = bytearray(seg.read_bytes())
    struct.pack_into(">i", data, located[500].batch_position + 8, 3)
    seg.write_bytes(bytes(data))
    shutil.copy(seg, p39 / (seg.name + ".swap"))
    os.symlink("gone", p39 / "00000000000000999999.log")
    shutil.copy(seg, p39 / "00000000000000100000.log")  # a stale copy named after the log: overlap
    # partition 28: a zip bomb batch, then a sparse zero tail
    p28 = root / "__consumer_offsets-28"
    seg28 = segments(p28)[0]
    with open(seg28, "ab") as f:
        f.write(bomb_batch(ZSTD, 256 << 20, base_offset=10_000))
    add_sparse_zero_tail(seg28, 64 << 20)
    # partition 3: a partition dir that is a symlink loop
    os.symlink("__consumer_offsets-3", root / "__consumer_offsets-3")
    return root


def _key(e) -> tuple:
    return (e.partition, e.file, e.position, e.offset, e.kind, e.reason)


def test_spark_reports_the_same_errors_as_the_single_process_reload(spark, corrupted: Path, tmp_path) -> None:
    caches = load_log_dir(corrupted)
    want = [_key(e) for c in caches for e in c.stats.errors]
    kinds = {k[4] for k in want}
    assert {"unknown_value_version", "bad_length", "leftover_file", "dangling_segment", "unreadable"} <= kinds
    assert {"overlapping_segments", "decompression", "zero_tail"} <= kinds

    out = str(tmp_path / "out")
    run_reload(spark, str(corrupted), out)
    got = [_key(e) for e in read_decode_errors(spark, out)]
    assert got == want  # same errors, same order within each partition
    assert_tables_equal(read_tables(spark, out), corrupted)  # and the same cache
