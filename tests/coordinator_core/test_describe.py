"""Per-group describe: lag, log start/end, owner and out-of-range flags, against independent truth."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from offsetops.coordinator_core.data_offsets import SOURCE_CHECKPOINT, SOURCE_PARTITION_DIR, offline_offsets
from offsetops.coordinator_core.describe import (
    ABOVE_LOG_END,
    BELOW_LOG_START,
    LOG_UNKNOWN,
    OK,
    GroupFilter,
    describe_groups,
    wanted_partitions,
)
from offsetops.coordinator_core.loader import load_log_dir

from tests.support.shared import real_kafka_logdirs
from tests.support.simdirs import sim_kip848 as sim_kip848
from tests.support.simdirs import sim_with_data as sim_with_data
from tests.support.simdirs import truth_data, truth_offsets


def _expected_status(committed: int, start: int | None, end: int | None) -> str:
    if end is None:
        return LOG_UNKNOWN
    if start is not None and committed < start:
        return BELOW_LOG_START
    return ABOVE_LOG_END if committed > end else OK


def test_offline_offsets_match_the_simulated_truth(sim_with_data):
    logdir, truth = sim_with_data
    data = truth_data(truth)
    found = offline_offsets([logdir], data)
    sources = {d["source"] for d in data.values()}
    assert {SOURCE_PARTITION_DIR, SOURCE_CHECKPOINT, None} <= sources  # every placement is exercised
    for tp, d in data.items():
        got = found.get(tp)
        if d["source"] is None:
            assert got is None, tp
            continue
        assert got is not None, tp
        assert (got.log_start_offset, got.log_end_offset, got.source) == (
            d["log_start_offset"],
            d["log_end_offset"],
            d["source"],
        ), tp


def test_describe_rows_match_truth(sim_with_data):
    logdir, truth = sim_with_data
    caches = load_log_dir(logdir, num_partitions=truth["num_partitions"])
    views = describe_groups(caches, offline_offsets([logdir], wanted_partitions(caches, GroupFilter())))
    commits = truth_offsets(truth)
    data = truth_data(truth)
    seen = set()
    statuses = set()
    for v in views:
        for r in v.rows:
            if r.committed_offset is None:
                continue
            key = (v.group_id, r.topic, r.partition)
            seen.add(key)
            want = commits[key]
            d = data[(r.topic, r.partition)]
            assert r.committed_offset == want["offset"]
            assert r.log_end_offset == d["log_end_offset"]
            assert r.log_start_offset == d["log_start_offset"]
            lag = None if d["log_end_offset"] is None else d["log_end_offset"] - want["offset"]
            assert r.lag == lag
            assert r.status == _expected_status(want["offset"], d["log_start_offset"], d["log_end_offset"])
            statuses.add(r.status)
    assert seen == set(commits)
    assert {OK, BELOW_LOG_START, ABOVE_LOG_END, LOG_UNKNOWN} <= statuses
    # The out-of-range count of each group is the truth's count.
    for v in views:
        expect = sum(
            _expected_status(o["offset"], data[(t, p)]["log_start_offset"], data[(t, p)]["log_end_offset"])
            in (BELOW_LOG_START, ABOVE_LOG_END)
            for (g, t, p), o in commits.items()
            if g == v.group_id
        )
        assert v.out_of_range == expect, v.group_id


@pytest.mark.parametrize("sim", ["sim_with_data", "sim_kip848"])
def test_owner_is_the_member_assigned_in_truth(sim, request):
    logdir, truth = request.getfixturevalue(sim)
    caches = load_log_dir(logdir, num_partitions=truth["num_partitions"])
    views = {v.group_id: v for v in describe_groups(caches, {})}
    checked = 0
    for part in truth["partitions"]:
        for g in part["groups"]:
            for m in g["members"]:
                for topic, parts in (m.get("assignment") or {}).items():
                    for p in parts:
                        rows = views[g["group_id"]].rows
                        row = next(r for r in rows if (r.topic, r.partition) == (topic, p))
                        assert (row.member_id, row.client_id, row.host) == (
                            m["member_id"],
                            m["client_id"],
                            m["client_host"],
                        )
                        checked += 1
    assert checked > 20


def test_filters(sim_with_data):
    logdir, truth = sim_with_data
    caches = load_log_dir(logdir, num_partitions=truth["num_partitions"])
    all_views = describe_groups(caches, {})
    target = all_views[0].group_id
    only = describe_groups(caches, {}, GroupFilter(groups=frozenset({target})))
    assert [v.group_id for v in only] == [target]
    rx = describe_groups(caches, {}, GroupFilter(group_regex=re.compile(r".*-app-.*")))
    assert rx and all("-app-" in v.group_id for v in rx)
    assert len(rx) == sum("-app-" in v.group_id for v in all_views)
    empty = describe_groups(caches, {}, GroupFilter(states=frozenset({"empty"})))
    assert empty and all(v.state == "Empty" for v in empty)
    topic = describe_groups(caches, {}, GroupFilter(topics=frozenset({"billing"})))
    assert all(r.topic == "billing" for v in topic for r in v.rows)


def _checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """The checkpoint file parsed here, independently: version line, count line, 'topic partition offset'."""
    if not path.is_file() or path.stat().st_size == 0:
        return {}
    lines = path.read_text().splitlines()
    out = {}
    for line in lines[2:]:
        topic, part, off = line.rsplit(" ", 2)
        out[(topic, int(part))] = int(off)
    return out


@pytest.mark.parametrize("logdir", real_kafka_logdirs(), ids=lambda p: p.name)
def test_real_fixtures_lag_from_the_high_watermark_checkpoint(logdir):
    caches = load_log_dir(logdir)
    views = describe_groups(caches, offline_offsets([logdir], wanted_partitions(caches, GroupFilter())))
    hw = _checkpoint(logdir / "replication-offset-checkpoint")
    start = _checkpoint(logdir / "log-start-offset-checkpoint")
    for c in caches:
        for g in c.groups.values():
            view = next(v for v in views if v.group_id == g.group_id)
            for (t, p), om in g.offsets.items():
                row = next(r for r in view.rows if (r.topic, r.partition) == (t, p))
                assert row.committed_offset == om.offset
                assert row.log_end_offset == hw.get((t, p))
                assert row.log_start_offset == (start.get((t, p)) if (t, p) in hw else None)
                assert row.lag == (hw[(t, p)] - om.offset if (t, p) in hw else None)


def test_real_fixture_known_lag():
    dirs = {p.name: p for p in real_kafka_logdirs()}
    if "iechenyb__data" not in dirs:
        pytest.skip("real Kafka fixtures not found")
    caches = load_log_dir(dirs["iechenyb__data"])
    offsets = offline_offsets([dirs["iechenyb__data"]], wanted_partitions(caches, GroupFilter()))
    views = describe_groups(caches, offsets)
    row = next(r for v in views if v.group_id == "flink-group" for r in v.rows)
    # replication-offset-checkpoint lists test-0921 0 at 1521; the group committed 100.
    assert (row.topic, row.partition, row.committed_offset, row.log_end_offset, row.lag) == (
        "test-0921",
        0,
        100,
        1521,
        1421,
    )


def test_log_end_from_the_index_tail_equals_the_header_walk(tmp_path):
    """A real broker's trimmed offset index (254 entries) gives the same last offset as walking every
    header; a stale index that points mid-batch falls back to the walk."""
    from offsetops.coordinator_core.data_offsets import _index_tail_position, _last_offset
    from offsetops.coordinator_core.records.reader import iter_segment_batches

    from tests.support.shared import REAL_KAFKA_DIR

    pdir_path = REAL_KAFKA_DIR / "William0423__kafka" / "__consumer_offsets-28"
    if not pdir_path.is_dir():
        pytest.skip("real Kafka fixtures not found")
    from offsetops.coordinator_core.sources.logdir import open_log_dir

    pdir = open_log_dir(pdir_path).partitions[0]
    seg = next(s for s in pdir.segments if s.path.with_suffix(".index").stat().st_size >= 8 * 200)
    assert _index_tail_position(seg) > 0
    walked = [b.last_offset for b in iter_segment_batches(seg.path, errors=[])][-1]
    errors: list = []
    assert _last_offset(seg, 28, errors) == walked and errors == []
    copy = tmp_path / "__consumer_offsets-28"
    copy.mkdir()
    (copy / seg.path.name).write_bytes(seg.path.read_bytes())
    idx = bytearray(seg.path.with_suffix(".index").read_bytes())
    idx[-4:] = (int.from_bytes(idx[-4:], "big") + 3).to_bytes(4, "big")  # now points inside a batch
    (copy / seg.path.with_suffix(".index").name).write_bytes(bytes(idx))
    stale = open_log_dir(copy).partitions[0].segments[0]
    assert _last_offset(stale, 28, errors) == walked
