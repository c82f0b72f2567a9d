"""The native fold (``records/_cfold.c``) against the pure-Python fold, which is the reference.

Both paths run on the same bytes in one process (``records.native.NATIVE`` switched, as
``OFFSETOPS_NATIVE=0`` does at import) and must give identical caches, stats and errors: on every real
fixture, on simulated log dirs whose transactions span segments (every codec), on a seeded sweep of
mutated real segments, and on magic-2 batches whose records were damaged and re-signed (valid CRC), which
is where the C record parser, not the framing, has to agree.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from pathlib import Path

import pytest
from offsetops.coordinator_core.loader import PartitionFold, load_log_dir
from offsetops.coordinator_core.records import batch as batch_mod
from offsetops.coordinator_core.records import build_control_batch, build_record_batch, fold
from offsetops.coordinator_core.records import native as twin
from offsetops.coordinator_core.records.batch import V2_HEADER_SIZE
from offsetops.coordinator_core.records.builder import encode_varint
from offsetops.coordinator_core.simulator import SimulationConfig, simulate

from tests.offsetops.test_sweep import MUTATIONS
from tests.support.mutation import fix_crc
from tests.support.shared import REAL_KAFKA_DIR, real_kafka_logdirs

needs_native = pytest.mark.skipif(not fold.native_available(), reason="native fold not built")


def test_native_fold_is_built_in_ci() -> None:
    """CI installs the compiler and headers (scripts/ensure_system_deps.sh): the extension must be there."""
    if os.environ.get("CI", "").lower() != "true":
        pytest.skip("only enforced in CI (CI=true)")
    assert fold.native_available(), "offsetops.coordinator_core.records._cfold did not build"
    assert twin.NATIVE, "the native fold is built but not selected"


def _doc(caches) -> list:
    out = []
    for c in caches:
        d = c.to_json()
        d["stats"].pop("elapsed_ms")
        d["open_transactions"] = {pid: sorted(g) for pid, g in sorted(c.open_transactions.items())}
        out.append(d)
    return out


def _both(monkeypatch, path: Path, semantics: str) -> tuple[list, list]:
    monkeypatch.setattr(twin, "NATIVE", True)
    native = _doc(load_log_dir(path, semantics=semantics))
    monkeypatch.setattr(twin, "NATIVE", False)
    python = _doc(load_log_dir(path, semantics=semantics))
    return native, python


@needs_native
@pytest.mark.parametrize("semantics", ["java", "scala"])
def test_every_real_fixture_gives_the_same_cache(monkeypatch, semantics: str) -> None:
    logdirs = real_kafka_logdirs()
    if not logdirs:
        pytest.skip("real Kafka fixtures not found")
    offsets = 0
    for logdir in logdirs:
        native, python = _both(monkeypatch, logdir, semantics)
        assert native == python, logdir.name
        offsets += sum(len(g["offsets"]) for p in native for g in p["groups"])
    assert offsets >= 18  # the fixtures did load (18 committed offsets survive in them)


@pytest.fixture(scope="module")
def sim_dirs(tmp_path_factory) -> list[Path]:
    """Small segments, so transactions (and their markers) land in different segments; every codec."""
    out = []
    for seed, compression, version in ((3, "mixed", "3.9"), (4, "none", "4.1"), (5, "mixed", "2.8")):
        path = tmp_path_factory.mktemp("sim") / f"{compression}-{version}"
        simulate(
            SimulationConfig(
                out_dir=path, groups=16, partitions=2, days=0.08, seed=seed, segment_bytes=24 << 10,
                compression=compression, kafka_version=version,
            )
        )  # fmt: skip
        out.append(path)
    return out


@needs_native
@pytest.mark.parametrize("semantics", ["java", "scala"])
def test_simulated_transactions_spanning_segments(monkeypatch, sim_dirs: list[Path], semantics: str) -> None:
    for path in sim_dirs:
        native, python = _both(monkeypatch, path, semantics)
        assert native == python, path.name
        stats = [p["stats"] for p in native]
        assert sum(s["segments"] for s in stats) > 2 * len(stats)  # several segments per partition
        if semantics == "java" and "4.1" not in path.name:
            assert sum(s["transactional_batches"] for s in stats) > 0


@needs_native
@pytest.mark.slow
def test_mutated_real_segments_give_the_same_cache_and_errors(monkeypatch, tmp_path: Path) -> None:
    """The corrupt-input sweep's mutations (zip bombs and zero tails included), through both paths."""
    if not REAL_KAFKA_DIR.is_dir():
        pytest.skip("real Kafka fixtures not found")
    sources = sorted(p for p in REAL_KAFKA_DIR.glob("*/__consumer_offsets-*") if any(p.glob("*.log")))
    rng = random.Random(20261123)
    with_errors = 0
    for i in range(160):
        src = rng.choice(sources)
        root = tmp_path / f"in{i}"
        shutil.copytree(src, root / src.name, symlinks=True)
        label = rng.choice(MUTATIONS)(rng, root / src.name)
        native, python = _both(monkeypatch, root, "java")
        assert native == python, (i, label, src)
        with_errors += any(p["stats"]["errors"] for p in native)
        shutil.rmtree(root)
    assert with_errors > 40  # the sweep did reach the error paths


# -- re-signed damage inside the records section -------------------------------------------------------


def _key(group: str, topic: str, partition: int, rtype: int = 1) -> bytes:
    g, t = group.encode(), topic.encode()
    return (
        struct.pack(">hh", rtype, len(g)) + g + struct.pack(">h", len(t)) + t + struct.pack(">i", partition)
    )


def _value(offset: int, metadata: str = "", version: int = 3) -> bytes:
    """An OffsetCommitValue: v3 (leader epoch), v1 (expire timestamp), v0 and v2 (neither)."""
    m = metadata.encode()
    if version == 3:
        return struct.pack(">hqih", 3, offset, 5, len(m)) + m + struct.pack(">q", 1_700_000_000_000)
    tail = (
        struct.pack(">qq", 1_700_000_000_000, 1_700_086_400_000)
        if version == 1
        else struct.pack(">q", 1_700_000_000_000)
    )
    return struct.pack(">hqh", version, offset, len(m)) + m + tail


def _markers(rng: random.Random, base: int) -> bytes:
    """A control batch of one to three records of mixed types (ABORT, COMMIT, LEADER_CHANGE, unknown):
    the Scala loader stops at the first marker, the Java one reads them all."""
    records = [
        (struct.pack(">hh", 0, rng.choice([0, 1, 1, 2, 7])), struct.pack(">hi", 0, 0), 0)
        for _ in range(rng.randint(1, 3))
    ]
    return build_record_batch(
        records, base_offset=base, is_transactional=True, is_control=True, producer_id=7, producer_epoch=0
    )


def _segment(rng: random.Random) -> bytes:
    out = bytearray()
    base = 0
    for _ in range(rng.randint(2, 6)):
        records = []
        for _ in range(rng.randint(1, 5)):
            key = _key(f"g{rng.randrange(3)}", "t", rng.randrange(3), rtype=rng.choice([1, 1, 1, 0, 2]))
            value = (
                None
                if rng.random() < 0.15
                else _value(rng.randrange(1 << 40), "m" * rng.randrange(3), rng.choice([3, 3, 3, 0, 1, 2]))
            )
            records.append((key, value, 1_700_000_000_000 + base))
        txn = rng.random() < 0.3
        out += build_record_batch(
            records, base_offset=base, compression=rng.choice([0, 0, 0, 1, 4]), is_transactional=txn,
            producer_id=7 if txn else -1, producer_epoch=0 if txn else -1,
        )  # fmt: skip
        base += len(records)
    if rng.random() < 0.4:
        out += build_control_batch(rng.random() < 0.7, base_offset=base, producer_id=7, producer_epoch=0,
                                   coordinator_epoch=0, timestamp=0)  # fmt: skip
    elif rng.random() < 0.3:
        out += _markers(rng, base)
    return bytes(out)


def _odd_batch(rng: random.Random, base: int) -> bytes:
    """One uncompressed batch whose records the C parser must treat exactly as Python does: 10-byte
    varints, offset deltas past int64, records without a header count, lengths that lie."""
    body = bytearray()
    count = rng.randint(1, 3)
    for _ in range(count):
        rec = bytearray(b"\x00")
        encode_varint(rec, 0)
        case = rng.randrange(6)
        if case == 5:
            # Null key and value, no header count, and a length one short: the value-length varint
            # lies past the record's end, which Python rejects.
            rec += b"\x00\x01\x01"
            encode_varint(body, len(rec) - 1)
            body += rec
            continue
        if case == 0:
            rec += b"\xff" * 9 + b"\x01"  # a 10-byte varint (offset delta)
        elif case == 1:
            encode_varint(rec, (1 << 62) if rng.random() < 0.5 else -(1 << 62))
        else:
            encode_varint(rec, rng.randrange(3))
        key, value = _key("g", "t", 0), _value(1)
        encode_varint(rec, len(key))
        rec += key
        encode_varint(rec, len(value))
        rec += value
        if case != 3:
            rec += b"\x00"  # header count (absent in case 3: the record still fits its length)
        length = len(rec) + (rng.choice([-2, -1, 1, 2]) if case == 4 else 0)
        encode_varint(body, length)
        body += rec
    header = struct.pack(
        ">qiibIhiqqqhii", base, 49 + len(body), 0, 2, 0, 0, count - 1, 0, 0, -1, -1, -1, count
    )
    batch = bytearray(header + body)
    fix_crc(batch, 0)
    return bytes(batch)


def _fold_state(data: bytes, native: bool, monkeypatch, semantics: str = "java") -> tuple:
    monkeypatch.setattr(twin, "NATIVE", native)
    f = PartitionFold(partition=0, semantics=semantics)
    f.add_buffer(data, file="seg.log")
    f._flush_types()
    s = f.stats.to_json()
    s.pop("elapsed_ms")
    return (
        f.latest,
        dict(sorted(f.type_counts.items())),
        s,
        f.open_txns,
        f.first_marker,
        f.tomb_max,
        f.created,
        f.invalid_values,
    )


@needs_native
def test_resigned_record_damage_folds_identically(monkeypatch) -> None:
    rng = random.Random(7)
    folded = corrupt = 0
    for _ in range(1500):
        data = bytearray(_segment(rng))
        if rng.random() < 0.3:
            data += _odd_batch(rng, 1000)
        else:
            pos = 0  # damage a few bytes of one batch's records section, then re-sign it
            starts = []
            while pos < len(data):
                starts.append(pos)
                pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
            at = rng.choice(starts)
            size = 12 + struct.unpack_from(">i", data, at + 8)[0]
            for _ in range(rng.randint(1, 3)):
                if size > V2_HEADER_SIZE:
                    data[at + V2_HEADER_SIZE + rng.randrange(size - V2_HEADER_SIZE)] = rng.randrange(256)
            if rng.random() < 0.2:
                struct.pack_into(">i", data, at + 57, rng.choice([0, 2, 1000, 2**31 - 1]))  # record count
            fix_crc(data, at)
        semantics = rng.choice(["java", "java", "scala"])
        native = _fold_state(bytes(data), True, monkeypatch, semantics)
        python = _fold_state(bytes(data), False, monkeypatch, semantics)
        assert native == python, semantics
        folded += bool(native[0])
        corrupt += bool(native[2]["errors"])
    assert folded > 1000 and corrupt > 200  # both the fold and the error paths were exercised


@needs_native
def test_sources_from_a_py_files_zip_still_use_the_installed_build(tmp_path: Path) -> None:
    """Spark executors import our sources from the ``--py-files`` zip; the compiled twin comes from the
    offsetops installed in their image or venv (here: a site dir holding the built extension, on
    sys.path after the zip)."""
    import subprocess
    import sys

    from offsetops.pipelines.session import package_zip

    zipped = package_zip(tmp_path / "offsetops.zip")
    site = tmp_path / "site" / "offsetops" / "coordinator_core" / "records"
    site.mkdir(parents=True)
    assert twin.cfold is not None
    built = Path(twin.cfold.__file__)
    shutil.copy(built, site / built.name)
    code = (
        f"import sys; sys.path[:0] = [{str(zipped)!r}]; sys.path.append({str(tmp_path / 'site')!r})\n"
        "from offsetops.coordinator_core.records import native\n"
        "print(native.__file__.startswith(sys.path[0]), native.NATIVE,"
        " native.cfold.__file__.startswith(sys.path[-1]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert out.stdout.split() == ["True", "True", "True"], out.stderr


@needs_native
@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_offset_commit_values_at_every_length_fold_identically(monkeypatch, version: int) -> None:
    """The hot case's structural check (version, metadata length, size) against the Python rules, at the
    boundary: each value cut short or padded byte by byte, and with a negative metadata length."""
    full = _value(42, "meta", version)
    at = 14 if version == 3 else 10  # the metadata length field
    negative = bytearray(full)
    negative[at] = 0xFF
    values = [full[:n] for n in range(len(full) + 1)] + [full + b"\x00", bytes(negative)]
    records = [(_key("g", "t", i), v, 0) for i, v in enumerate(values)]
    data = build_record_batch(records, base_offset=0)
    native = _fold_state(data, True, monkeypatch)
    python = _fold_state(data, False, monkeypatch)
    assert native == python
    kept = {k for k, e in native[0].items() if e[3] is not None}
    assert len(kept) == len(values)  # every value is kept, and the bad ones reported
    assert native[2]["error_count"] == len(values) - 2  # only the full value and the padded one decode


@needs_native
def test_record_sections_parse_identically_or_fall_back() -> None:
    """``decode_records`` (C) against ``decode_v2_records_py`` on damaged records sections: the same list,
    or None where Python raises (or where C cannot be sure, and Python then decides)."""
    rng = random.Random(11)
    same = fell_back = 0
    for _ in range(3000):
        raw = bytearray(_odd_batch(rng, 5) if rng.random() < 0.3 else _segment(rng))
        size = 12 + struct.unpack_from(">i", raw, 8)[0]
        count = struct.unpack_from(">i", raw, 57)[0]
        if raw[21 + 1] & 0x07:  # compressed: its section is not the raw bytes
            continue
        for _ in range(rng.randint(0, 3)):
            raw[V2_HEADER_SIZE + rng.randrange(max(size - V2_HEADER_SIZE, 1))] = rng.randrange(256)
        count = rng.choice([count, count, count, count - 1, count + 1, 0])
        data = bytes(raw)
        args = (data, V2_HEADER_SIZE, size, count, 1_000, 1_700_000_000_000)
        native_out = twin.cfold.decode_records(*args)  # type: ignore[union-attr]
        try:
            python_out = batch_mod.decode_v2_records_py(*args)
        except (batch_mod.CorruptRecord, IndexError, ValueError):
            python_out = None
        if native_out is None:
            fell_back += 1
        else:
            assert native_out == python_out
            same += 1
    assert same > 400 and fell_back > 200, (same, fell_back)


def _interleaved(rng: random.Random, producers: int) -> bytes:
    """Plain commits, tombstones and the transactions of many producers, interleaved in one segment:
    transactions open and resolve in the same run, or stay open at its end."""
    out = bytearray()
    base = 0
    open_pids: set[int] = set()
    for _ in range(rng.randint(20, 400)):
        pid = rng.randrange(1, producers + 1)
        roll = rng.random()
        if pid in open_pids and roll < 0.25:
            commit = rng.random() < 0.7
            out += build_control_batch(
                commit, base_offset=base, producer_id=pid, producer_epoch=0, coordinator_epoch=0, timestamp=0
            )
            open_pids.discard(pid)
            base += 1
            continue
        txn = roll < 0.6
        records = [
            (
                _key(f"g{rng.randrange(12)}", "t", rng.randrange(4), rtype=rng.choice([1, 1, 1, 1, 0])),
                None if rng.random() < 0.08 else _value(rng.randrange(1 << 30)),
                1_700_000_000_000 + base,
            )
            for _ in range(rng.randint(1, 4))
        ]
        out += build_record_batch(
            records, base_offset=base, compression=rng.choice([0, 0, 0, 0, 1]), is_transactional=txn,
            producer_id=pid if txn else -1, producer_epoch=0 if txn else -1,
        )  # fmt: skip
        if txn:
            open_pids.add(pid)
        base += len(records)
    return bytes(out)


def _fold_in_order(data: bytes, native: bool, monkeypatch, semantics: str) -> tuple:
    """The fold's containers as item lists: their order is part of what both paths must agree on."""
    monkeypatch.setattr(twin, "NATIVE", native)
    f = PartitionFold(partition=0, semantics=semantics)
    f.add_buffer(data, file="seg.log")
    return (
        list(f.latest.items()),
        [(pid, list(pending.items())) for pid, pending in f.open_txns.items()],
        {key: sorted(pids) for key, pids in f.txn_keys.items()},
        list(f.created.items()),
        list(f.first_marker.items()),
        list(f.tomb_max.items()),
    )


@needs_native
@pytest.mark.parametrize("producers", [3, 100])  # 100: more transactions open at once than the C fold defers
def test_interleaved_transactions_fold_identically_in_order(monkeypatch, producers: int) -> None:
    """The C fold keeps hot writes to latest and the txn_keys entries of the transactions it opens until
    Python could see them: the result, insertion order included, is the per-record fold's."""
    rng = random.Random(producers)
    still_open = 0
    for _ in range(60):
        data = _interleaved(rng, producers)
        for semantics in ("java", "scala"):
            native = _fold_in_order(data, True, monkeypatch, semantics)
            assert native == _fold_in_order(data, False, monkeypatch, semantics), semantics
            still_open += bool(native[1])
    assert still_open > 20  # runs that end with open transactions (and their txn_keys) were compared


def _colliding_keys(count: int) -> list[bytes]:
    """Offset-commit keys of 32 bytes with one CRC-32C: the partition's four bytes are solved for it.
    The C fold hashes keys with the CRC-32C instruction when the CPU has it, so these share one hash."""
    from offsetops.coordinator_core.records.crc import crc32c

    poly, mask = 0x82F63B78, 0xFFFFFFFF

    def unshift(reg: int) -> int:  # the inverse of 32 register steps of the reflected CRC
        for _ in range(32):
            reg = (((reg ^ poly) << 1) | 1) & mask if reg & 0x80000000 else (reg << 1) & mask
        return reg

    topic = b"topic-collisions1"
    keys = []
    for i in range(count):
        group = f"g{i:04d}".encode()
        prefix = struct.pack(">hh", 1, len(group)) + group + struct.pack(">h", len(topic)) + topic
        word = unshift(0x12345678 ^ mask) ^ crc32c(prefix) ^ mask
        keys.append(prefix + word.to_bytes(4, "little"))
    return keys


@needs_native
def test_keys_with_one_hash_fold_identically(monkeypatch) -> None:
    """Past the key cache's probe limit, a key is written as it comes (after the writes kept back): a
    crafted set of keys with one hash folds as the Python fold does, order included."""
    from offsetops.coordinator_core.records.crc import crc32c

    keys = _colliding_keys(80)
    assert len(set(keys)) == 80 and {len(k) for k in keys} == {32}
    assert {crc32c(k) for k in keys} == {0x12345678}
    rng = random.Random(5)
    out = bytearray()
    base = 0
    for _ in range(120):
        txn = rng.random() < 0.3
        records = [(rng.choice(keys), _value(rng.randrange(1 << 30)), 0) for _ in range(rng.randint(1, 6))]
        out += build_record_batch(
            records, base_offset=base, is_transactional=txn, producer_id=9 if txn else -1,
            producer_epoch=0 if txn else -1,
        )  # fmt: skip
        base += len(records)
        if txn and rng.random() < 0.5:
            out += build_control_batch(
                True, base_offset=base, producer_id=9, producer_epoch=0, coordinator_epoch=0, timestamp=0
            )
            base += 1
    for semantics in ("java", "scala"):
        native = _fold_in_order(bytes(out), True, monkeypatch, semantics)
        assert native == _fold_in_order(bytes(out), False, monkeypatch, semantics), semantics
        assert len(native[0]) == 80
