"""Per-segment scans merged in log order give exactly the whole partition's scan (:mod:`...cleaner.scan`)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.cleaner.scan import (
    PartitionScan,
    ScanInputs,
    dirty_from,
    key_id,
    scan_partition,
    scan_segment,
)
from offsetops.coordinator_core.records.builder import (
    build_control_batch,
    build_legacy_message_set,
    build_record_batch,
)
from offsetops.coordinator_core.sources.logdir import PartitionDir, open_log_dir

from tests.coordinator_core.cleaner_audit.scenarios import DAY_MS, T0, key, partition_dir, write_segment
from tests.support.shared import real_kafka_logdirs, require_real_kafka

VALUE = b"\x00\x03" + b"\x00" * 12

# one batch of the generated log: (kind, magic or producer id, records or commit flag, horizon)
record = st.tuples(st.integers(0, 5), st.booleans(), st.booleans())  # key index, tombstone, keyless
data_batch = st.tuples(
    st.just("data"), st.sampled_from([0, 1, 2]), st.lists(record, min_size=1, max_size=3), st.booleans()
)
txn_batch = st.tuples(
    st.just("txn"), st.integers(1, 3), st.lists(record, min_size=1, max_size=3), st.booleans()
)
marker = st.tuples(st.just("marker"), st.integers(1, 3), st.booleans(), st.just(False))
corrupt = st.tuples(st.just("corrupt"), st.just(2), st.lists(record, min_size=1, max_size=2), st.just(False))
log_strategy = st.lists(
    st.one_of(data_batch, data_batch, txn_batch, txn_batch, marker, corrupt), min_size=1, max_size=30
)


def _records(spec: list[tuple[int, bool, bool]], ts: int) -> list[tuple[bytes | None, bytes | None, int]]:
    return [(None if keyless else key(f"g{k}"), None if tomb else VALUE, ts) for k, tomb, keyless in spec]


def build_log(batches: list[tuple]) -> tuple[list[bytes], int]:
    """The generated batches as bytes, at consecutive offsets; and the next offset."""
    out: list[bytes] = []
    offset = 0
    for i, (kind, arg, body, horizon) in enumerate(batches):
        ts = T0 - (len(batches) - i) * DAY_MS // 4
        if kind == "marker":
            out.append(
                build_control_batch(
                    body,
                    base_offset=offset,
                    producer_id=arg,
                    producer_epoch=0,
                    coordinator_epoch=0,
                    timestamp=ts,
                )
            )
            offset += 1
            continue
        recs = _records(body, ts)
        if kind == "data" and arg < 2:
            out.append(build_legacy_message_set(recs, magic=arg, base_offset=offset))
        else:
            txn = {"producer_id": arg, "producer_epoch": 0, "is_transactional": True} if kind == "txn" else {}
            raw = build_record_batch(
                recs, base_offset=offset, delete_horizon_ms=ts + DAY_MS if horizon else None, **txn
            )
            if kind == "corrupt":  # a flipped payload byte: a CRC mismatch the scan reports
                raw = raw[:-1] + bytes([raw[-1] ^ 0xFF])
            out.append(raw)
        offset += len(recs)
    return out, offset


def merged(scans: list[PartitionScan], inputs: ScanInputs) -> PartitionScan:
    running = scans[0]
    for later in scans[1:]:
        running = running.merge(later, inputs.dirty_from)
    return running


def state(scan: PartitionScan, now_ms: int = T0, retention: int = DAY_MS) -> dict:
    """Everything the audit reads from a scan; the float sums approximately (their order differs)."""
    return {
        "segments": scan.segments,
        "counters": (
            scan.batches,
            scan.records,
            scan.control_batches,
            scan.tombstones,
            scan.keyless_records,
            scan.aborted_records,
            scan.superseded_records,
        ),
        "reclaimable": pytest.approx(scan.reclaimable_bytes, rel=1e-12, abs=1e-6),
        "active_reclaimable": pytest.approx(scan.active_reclaimable_bytes, rel=1e-12, abs=1e-6),
        "open_txns": {pid: (t[0], t[1], t[2], sorted(t[3])) for pid, t in scan.open_txns.items()},
        "keys": {h: list(e) for h, e in scan.keys.items()},
        "errors": scan.errors,
        "key_stats": scan.key_stats(
            0, 1 << 62, whole_log=False, now_ms=now_ms, delete_retention_ms=retention
        ),
    }


def per_segment(pdir: PartitionDir, inputs: ScanInputs) -> PartitionScan:
    """Each segment scanned alone from its bytes, then merged in log order."""
    scans = [
        scan_segment(
            s.path.read_bytes(),
            inputs,
            file=str(s.path),
            base_offset=s.base_offset,
            size=s.size,
            mtime_ms=s.mtime_ms,
        )
        for s in pdir.segments
    ]
    return merged(scans, inputs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=log_strategy,
    cuts=st.sets(st.integers(1, 29), max_size=6),
    dirty=st.floats(0, 1),
    retention=st.sampled_from([0, DAY_MS, 7 * DAY_MS]),
)
def test_segment_scans_merged_equal_the_partition_scan(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[tuple],
    cuts: set[int],
    dirty: float,
    retention: int,
) -> None:
    raw, end = build_log(batches)
    bounds = [0, *sorted(c for c in cuts if c < len(raw)), len(raw)]
    pdir = partition_dir(tmp_path_factory.mktemp("log"), 3)
    offset = 0
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        write_segment(pdir, offset, raw[lo:hi], T0 - (len(bounds) - i) * DAY_MS)
        offset += sum(_batch_records(b) for b in batches[lo:hi])
    (part,) = open_log_dir(pdir.parent).partitions
    first_dirty = dirty_from(int(dirty * end), None, 0)
    inputs = ScanInputs(3, first_dirty, part.segments[-1].base_offset, True)
    whole = scan_partition(part, dirty_from=first_dirty, verify_crc=True)
    assert state(per_segment(part, inputs), T0, retention) == state(whole, T0, retention)


def _batch_records(spec: tuple) -> int:
    return 1 if spec[0] == "marker" else len(spec[2])


def test_a_transaction_across_segments_is_resolved_by_the_marker_in_a_later_one(tmp_path: Path) -> None:
    pdir = partition_dir(tmp_path, 0)
    txn = {"producer_id": 7, "producer_epoch": 0, "is_transactional": True}
    write_segment(pdir, 0, [build_record_batch([(key("a"), VALUE, T0)], base_offset=0, **txn)], T0)
    write_segment(
        pdir,
        1,
        [
            build_record_batch([(key("b"), VALUE, T0)], base_offset=1, **txn),
            build_control_batch(
                False, base_offset=2, producer_id=7, producer_epoch=0, coordinator_epoch=0, timestamp=T0
            ),
            build_record_batch([(key("c"), VALUE, T0)], base_offset=3, **txn),
        ],
        T0,
    )
    (part,) = open_log_dir(tmp_path).partitions
    inputs = ScanInputs(0, 0, 1, True)
    first, second = (
        scan_segment(s.path.read_bytes(), inputs, file=str(s.path), base_offset=s.base_offset, size=s.size,
                     mtime_ms=s.mtime_ms)
        for s in part.segments
    )  # fmt: skip
    assert first.open_txns[7][0] == 0 and second.first_markers == [(7, True)]
    out = first.merge(second, 0)
    # the abort drops both records before it (one per segment); the record after it opens a new one
    assert out.aborted_records == 2
    assert list(out.open_txns) == [7] and out.open_txns[7][0] == 3
    assert state(out) == state(scan_partition(part, dirty_from=0, verify_crc=True))


def test_key_identity_is_the_same_in_every_process() -> None:
    code = "from offsetops.coordinator_core.cleaner.scan import key_id; print(key_id(b'group-a').hex())"
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2", "random")
    }  # fmt: skip
    assert runs == {key_id(b"group-a").hex()}
    assert len(key_id(b"group-a")) == 8 and key_id(b"group-a") != key_id(b"group-b")


def test_real_log_dirs_scanned_by_segment_equal_the_partition_scan() -> None:
    require_real_kafka()
    checked = 0
    for root in real_kafka_logdirs():
        logdir = open_log_dir(root)
        for part in logdir.partitions:
            if not part.segments:
                continue
            tp = (part.topic, part.partition)
            first = dirty_from(
                logdir.cleaner_checkpoint.get(tp),
                logdir.log_start_checkpoint.get(tp),
                part.segments[0].base_offset,
            )
            inputs = ScanInputs(part.partition, first, part.segments[-1].base_offset, True)
            whole = scan_partition(part, dirty_from=first, verify_crc=True)
            assert state(per_segment(part, inputs)) == state(whole), (root, part.partition)
            checked += 1
    assert checked >= 10


#: a value, a tombstone whose delete horizon has passed, one without a horizon (KIP-534)
TOMBSTONE_FACTS = (None, (0, T0 - 1), (2,))
applies = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 60), st.sampled_from([0.5, 1.0, 7.25]), st.integers(0, 2)),
    min_size=1,
    max_size=25,
    unique_by=lambda a: a[1],  # one record per offset, as in a log
)


@settings(max_examples=200, deadline=None)
@given(
    records=applies, order=st.randoms(use_true_random=False), dirty=st.integers(0, 60), cut=st.integers(0, 25)
)
def test_the_key_table_rules_do_not_depend_on_the_order_records_arrive(records, order, dirty, cut) -> None:
    def table(recs: list[tuple[int, int, float, int]], into: PartitionScan | None = None) -> PartitionScan:
        scan = into or PartitionScan(active_base=40)
        for k, offset, share, kind in recs:
            scan.apply(key_id(bytes([k])), offset, share, TOMBSTONE_FACTS[kind], dirty)
        return scan

    in_log_order = table(sorted(records, key=lambda r: r[1]))
    shuffled = list(records)
    order.shuffle(shuffled)
    assert state(table(shuffled)) == state(in_log_order)
    # applied as two tables merged, whatever the split
    merged_halves = table(shuffled[:cut]).merge(table(shuffled[cut:]), dirty)
    assert state(merged_halves) == state(in_log_order)
