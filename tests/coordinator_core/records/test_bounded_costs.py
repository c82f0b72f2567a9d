"""Costs bounded by the input: error storms aggregate, tombstones against open transactions and the resync
scan are linear, and the native fold pins the mapped segment while a view of it lives.

Work is counted (errors kept, ``_created`` calls, CRC bytes), never timed; the figures are in
``benchmarks/hostile_costs.py``.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from offsetops.coordinator_core.errors import (
    EXAMPLES_PER_BATCH,
    DecodeError,
    ErrorLog,
    count_errors,
    error_total,
)
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.records import build_control_batch, build_record_batch, fold, reader
from offsetops.coordinator_core.records import native as twin

from offsetops.cli import main
from tests.support.hostile import T0, keyless_zstd_batch, resync_bait, txn_tombstone_segment

REPO = Path(__file__).resolve().parents[3]
KEYLESS = 100_000


def _fold(
    data: bytes, native: bool, monkeypatch: pytest.MonkeyPatch, semantics: str = "java"
) -> PartitionFold:
    monkeypatch.setattr(twin, "NATIVE", native)
    f = PartitionFold(partition=3, semantics=semantics)
    f.add_buffer(data, file="seg.log", start_position=100)
    return f


@pytest.mark.parametrize("native", [True, False])
def test_an_error_storm_is_a_count_and_a_few_examples(monkeypatch, native: bool) -> None:
    if native and not fold.native_available():
        pytest.skip("native fold not built")
    data = keyless_zstd_batch(KEYLESS * 7)
    assert len(data) < 4096
    f = _fold(data, native, monkeypatch)
    errors = f.stats.errors
    assert len(errors) == EXAMPLES_PER_BATCH + 1  # not one object per record
    assert count_errors(errors) == error_total(errors) == KEYLESS  # the count stays exact
    for e in errors:
        assert (e.kind, e.file, e.partition, e.position, e.offset) == ("missing_key", "seg.log", 3, 100, 0)
    *examples, summary = errors
    assert all(e.count == 1 for e in examples)
    assert summary.count == KEYLESS - EXAMPLES_PER_BATCH
    assert f"({KEYLESS - EXAMPLES_PER_BATCH:,} errors)" in str(summary)
    assert f.stats.to_json()["error_count"] == KEYLESS


def test_strict_still_fails_and_json_counts_every_error(tmp_path: Path, capsys) -> None:
    pdir = tmp_path / "__consumer_offsets-0"
    pdir.mkdir()
    (pdir / "00000000000000000000.log").write_bytes(keyless_zstd_batch(KEYLESS * 7))
    assert main(["reload", str(tmp_path), "--json", "--strict"]) == 1
    (part,) = json.loads(capsys.readouterr().out)["partitions"]
    assert part["stats"]["error_count"] == KEYLESS
    assert sum(e["count"] for e in part["stats"]["errors"]) == KEYLESS
    assert len(part["stats"]["errors"]) == EXAMPLES_PER_BATCH + 1


def test_the_error_log_merges_and_pickles_with_exact_counts() -> None:
    def err(kind: str, position: int, offset: int) -> DecodeError:
        return DecodeError(kind, "bad", "f.log", 0, position, offset)

    a = ErrorLog(err("corrupt_value", 10, o) for o in range(12))
    a.append(err("corrupt_key", 10, 99))  # another kind in the same batch: its own examples
    a.append(err("corrupt_value", 20, 0))  # another batch
    assert [e.count for e in a] == [1] * 5 + [7, 1, 1]
    b = ErrorLog(err("corrupt_value", 10, o) for o in range(100, 104))
    a.extend(b)  # a later stretch of the same batch (segment-parallel merge)
    assert count_errors(a) == 12 + 1 + 1 + 4 and len(a) == 8
    a += [err("corrupt_value", 10, 200)]
    restored = pickle.loads(pickle.dumps(a))
    assert isinstance(restored, ErrorLog) and list(restored) == list(a)
    restored.append(err("corrupt_value", 10, 300))
    assert count_errors(restored) == count_errors(a) + 1 and len(restored) == len(a)
    summary = restored[5]
    assert summary.offset == 5 and summary.count == 7 + 4 + 1 + 1  # the first repeat, every repeat counted


def _created_calls(monkeypatch: pytest.MonkeyPatch, data: bytes, native: bool) -> tuple[int, PartitionFold]:
    calls = 0
    original = PartitionFold._created

    def counting(self: PartitionFold, key: bytes, entry: object) -> None:
        nonlocal calls
        calls += 1
        original(self, key, entry)  # type: ignore[arg-type]

    monkeypatch.setattr(PartitionFold, "_created", counting)
    f = _fold(data, native, monkeypatch)
    return calls, f


@pytest.mark.parametrize("native", [True, False])
def test_a_tombstone_visits_only_the_transactions_that_stage_its_key(monkeypatch, native: bool) -> None:
    if native and not fold.native_available():
        pytest.skip("native fold not built")
    producers, tombstones = 300, 400
    calls, f = _created_calls(monkeypatch, txn_tombstone_segment(producers, tombstones), native)
    assert len(f.open_txns) == producers and f.stats.tombstones == tombstones
    # One _created per tombstone (for the key's committed entry): none for the unrelated open transactions.
    assert calls == tombstones  # was tombstones * (1 + producers)


@pytest.mark.parametrize("semantics", ["java", "scala"])
def test_tombstones_against_open_transactions_fold_identically(monkeypatch, semantics: str) -> None:
    """A tombstone drops its key from the open transactions that stage it (Java), markers resolve the rest;
    the C twin and the pure-Python path agree, and the key index ends empty once all are resolved."""
    if not fold.native_available():
        pytest.skip("native fold not built")
    from tests.support.hostile import _commit

    batches, offset = [], 0
    for pid in range(6):
        records = [(*_commit(f"g{pid % 2}", p, 10 + pid), T0) for p in range(3)]
        batches.append(build_record_batch(records, base_offset=offset, producer_id=pid, producer_epoch=0,
                                          is_transactional=True))  # fmt: skip
        offset += 3
    batches.append(build_record_batch([(_commit("g0", 1, 0)[0], None, T0)], base_offset=offset))
    offset += 1
    for pid in range(6):
        commit = pid % 3 != 0
        batches.append(build_control_batch(commit, base_offset=offset, producer_id=pid, producer_epoch=0,
                                           coordinator_epoch=0, timestamp=T0))  # fmt: skip
        offset += 1
    data = b"".join(batches)
    states = []
    for native in (True, False):
        f = _fold(data, native, monkeypatch, semantics)
        assert f.open_txns == {} and f.txn_keys == {}
        states.append((f.latest, f.created, f.tomb_max, f.stats.to_json()["error_count"]))
    assert states[0] == states[1]


def test_the_resync_scan_is_linear_on_crafted_input(monkeypatch) -> None:
    crc_bytes = 0
    original = reader.crc32c

    def counting(data, *args):  # type: ignore[no-untyped-def]
        nonlocal crc_bytes
        crc_bytes += len(data)
        return original(data, *args)

    monkeypatch.setattr(reader, "crc32c", counting)
    size = 256 << 10
    bait = resync_bait(size)
    assert reader.resync(bait, 0, size, reader.DEFAULT_MAX_BATCH_BYTES) is None
    # At most one batch's worth plus RESYNC_CRC_PER_BYTE per byte scanned (it was ~size^2 / 128).
    assert crc_bytes <= reader.DEFAULT_MAX_BATCH_BYTES + reader.RESYNC_CRC_PER_BYTE * size
    # A real batch right after the bait is still found.
    good = build_record_batch([(b"\x00\x01k", b"v", T0)], base_offset=7)
    data = bait + good
    assert reader.resync(data, 0, len(data), reader.DEFAULT_MAX_BATCH_BYTES) == size


def test_a_real_batch_right_after_corruption_is_found_again() -> None:
    good = [build_record_batch([(b"\x00\x01k", b"v%d" % i, T0)], base_offset=i) for i in range(50)]
    junk = bytes(range(256)) * 64  # 16 KiB of every byte value, magic 2 included
    data = good[0] + junk + b"".join(good[1:])
    assert reader.resync(data, 0, len(data), reader.DEFAULT_MAX_BATCH_BYTES) == len(good[0]) + len(junk)


_PIN_SCRIPT = """
import mmap, sys
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.records import native as twin
from offsetops.coordinator_core.records.compression import decompress
kept = []
def keep_view(codec, payload, limit):
    kept.append(payload)  # a codec (or anything it calls) may hold on to the view
    return decompress(codec, payload, limit=limit)
with open(sys.argv[1], "rb") as fh:
    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
target = PartitionFold(partition=0)
twin.cfold.fold_run(mm, 0, len(mm), 0, None, True, 1 << 20, -1, target.fold_state(), keep_view)
expected = bytes(kept[0])
try:
    mm.close()
    print("closed while a view lived")
except BufferError:
    print("pinned")
print(bytes(kept[0]) == expected)  # reading the view after close() would crash if it were not pinned
"""


def test_the_native_fold_pins_the_mapped_segment_while_a_view_lives(tmp_path: Path) -> None:
    if not fold.native_available():
        pytest.skip("native fold not built")
    from offsetops.coordinator_core.records.compression import ZSTD

    seg = tmp_path / "seg.log"
    seg.write_bytes(build_record_batch([(b"\x00\x01k", b"v" * 1000, T0)], base_offset=0, compression=ZSTD))
    out = subprocess.run([sys.executable, "-c", _PIN_SCRIPT, str(seg)], capture_output=True, text=True,
                         cwd=REPO, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr  # before: the process died reading an unmapped view
    assert out.stdout.split() == ["pinned", "True"]


def _big_batch(n: int, *, corrupt: bool = False) -> bytes:
    """A zstd batch of ``n`` records: offset commits (the hot case), tombstones and keyless records."""
    from offsetops.coordinator_core.records.compression import ZSTD

    from tests.support.hostile import _commit

    records = []
    for i in range(n):
        key, value = _commit(f"g{i % 50}", i % 7, i)
        records.append((key, None if i % 11 == 0 else value, T0) if i % 13 else (None, None, T0))
    data = bytearray(build_record_batch(records, base_offset=1000, compression=ZSTD if not corrupt else 0))
    if corrupt:  # a byte left after the last record: nothing of the batch may be folded
        from tests.support.mutation import fix_crc

        data += b"\x00"
        data[8:12] = (len(data) - 12).to_bytes(4, "big")
        fix_crc(data, 0)
    return bytes(data)


@pytest.mark.parametrize("corrupt", [False, True])
def test_batches_bigger_than_a_chunk_fold_as_one(monkeypatch, corrupt: bool) -> None:
    """More than RECORD_CHUNK records: the C twin (STAGE_CHUNK), the chunked Python path and an unchunked
    Python fold give the same state; a corrupt one folds nothing on every path."""
    from offsetops.coordinator_core.records import batch as batch_mod

    n = batch_mod.RECORD_CHUNK + 4321
    data = _big_batch(n, corrupt=corrupt)
    states = []
    for native, chunk in [(True, batch_mod.RECORD_CHUNK), (False, batch_mod.RECORD_CHUNK), (False, 1 << 30)]:
        if native and not fold.native_available():
            continue
        monkeypatch.setattr(batch_mod, "RECORD_CHUNK", chunk)
        f = _fold(data, native, monkeypatch)
        stats = f.stats.to_json()
        stats.pop("elapsed_ms")
        states.append((f.latest, f.tomb_max, f.created, stats))
    assert all(s == states[0] for s in states[1:])
    latest, _tombs, _created, stats = states[0]
    if corrupt:
        assert latest == {} and [e["kind"] for e in stats["errors"]] == ["corrupt_record"]
    else:
        assert len(latest) == 50 * 7 and stats["records"] == n
