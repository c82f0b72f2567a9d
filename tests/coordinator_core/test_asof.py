"""As-of reload: the cache as it stood at a log offset or a time."""

from __future__ import annotations

import shutil

import pytest
from offsetops.coordinator_core.asof import Cut, load_as_of
from offsetops.coordinator_core.loader import load_partition_dir
from offsetops.coordinator_core.records.builder import build_record_batch
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.logdir import open_log_dir

from tests.support.forensics_log import GROUP, PARTITION, T0, _commit, write_forensics_log
from tests.support.shared import real_kafka_logdirs

MIN = 60_000


def _asof(root, partition, cut):
    pdir = open_log_dir(root, partitions=[partition]).partitions[0]
    return load_as_of(pdir.iter_batches, partition=partition, cut=cut)


def _t0(cache):
    g = cache.groups.get(GROUP)
    return None if g is None else {tp: o.offset for tp, o in g.offsets.items()}


@pytest.mark.parametrize(
    ("cut", "offsets", "pending"),
    [
        (Cut(until_offset=1), {}, {}),  # only the group record
        (Cut(until_offset=4), {("t", 0): 150}, {}),
        (Cut(until_offset=7), {("t", 0): 20, ("t", 1): 7}, {}),  # after the reset
        (Cut(until_offset=8), {("t", 0): 20, ("t", 1): 7}, {9: 500}),  # the txn is open then
        (Cut(until_offset=9), {("t", 0): 20, ("t", 1): 7}, {}),  # ...and aborted
        (Cut(until_offset=11), {("t", 0): 5000, ("t", 1): 7}, {}),
        (Cut(until_ms=T0 + 5 * MIN), {("t", 0): 20, ("t", 1): 7}, {}),  # inclusive of that instant
        (Cut(until_ms=T0 + 5 * MIN - 1), {("t", 0): 150, ("t", 1): 7}, {}),
        (Cut(until_offset=11, until_ms=T0 + 2 * MIN), {("t", 0): 150}, {}),  # the earlier cut wins
    ],
)
def test_cut_by_construction(tmp_path, cut, offsets, pending):
    root = write_forensics_log(tmp_path)
    cache = _asof(root, PARTITION, cut)
    assert (_t0(cache) or {}) == offsets
    g = cache.groups.get(GROUP)
    got_pending = {pid: o[("t", 0)].offset for pid, o in (g.pending_offsets if g else {}).items()}
    assert got_pending == pending


def test_cut_inside_a_multi_record_batch(tmp_path):
    pdir = tmp_path / f"__consumer_offsets-{PARTITION}"
    pdir.mkdir()
    records = [_commit(GROUP, "t", 0, off, T0 + i * MIN) for i, off in enumerate((10, 20, 30))]
    (pdir / "00000000000000000000.log").write_bytes(build_record_batch(records, base_offset=0))
    assert _t0(_asof(tmp_path, PARTITION, Cut(until_offset=2))) == {("t", 0): 20}
    assert _t0(_asof(tmp_path, PARTITION, Cut(until_ms=T0))) == {("t", 0): 10}
    assert _t0(_asof(tmp_path, PARTITION, Cut(until_offset=0))) is None


@pytest.mark.parametrize("logdir", real_kafka_logdirs(), ids=lambda p: p.name)
def test_real_fixtures_cut_equals_a_truncated_copy(tmp_path, logdir):
    """Cutting at a batch boundary gives the cache of a copy of the log truncated at that batch."""
    checked = 0
    for pdir in open_log_dir(logdir).partitions:
        batches = [(seg, b) for seg in pdir.segments for b in iter_segment_batches(seg.path, errors=[])]
        if len(batches) < 3:
            continue
        seg, mid = batches[len(batches) // 2]
        copy = tmp_path / f"{logdir.name}-{pdir.partition}" / pdir.path.name
        copy.mkdir(parents=True)
        for s in pdir.segments:
            if s.base_offset < seg.base_offset:
                shutil.copy(s.path, copy / s.path.name)
        (copy / seg.path.name).write_bytes(seg.path.read_bytes()[: mid.position])
        truncated = load_partition_dir(open_log_dir(copy).partitions[0])
        cut = load_as_of(pdir.iter_batches, partition=pdir.partition, cut=Cut(until_offset=mid.base_offset))
        assert {g: v.to_json() for g, v in cut.groups.items()} == {
            g: v.to_json() for g, v in truncated.groups.items()
        }
        assert cut.stats.records == truncated.stats.records
        checked += 1
    if not checked:
        pytest.skip(f"{logdir.name}: no partition with 3+ batches")
