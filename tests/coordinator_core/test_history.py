"""Commit forensics: every commit of a group in order, with owner then, rewinds and outside commits."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.data_offsets import offline_offsets
from offsetops.coordinator_core.history import (
    NOT_ASSIGNED,
    PAST_LOG_END,
    REWIND,
    TOMBSTONE,
    replay_history,
)
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.sources.logdir import open_log_dir

from tests.support.forensics_log import DATA_LOG_END, GROUP, PARTITION, T0, write_forensics_log
from tests.support.shared import real_kafka_logdirs
from tests.support.simdirs import sim_kip848 as sim_kip848
from tests.support.simdirs import sim_with_data as sim_with_data
from tests.support.simdirs import truth_data, truth_offsets


def _history(root, group, partition):
    pdir = open_log_dir(root, partitions=[partition]).partitions[0]
    errors: list = []
    hist = replay_history(
        pdir.iter_batches(errors),
        group,
        offsets_partition=partition,
        errors=errors,
        log_offsets=lambda tp: offline_offsets([root], [tp]).get(tp),
    )
    return hist


def test_forensics_log_by_construction(tmp_path):
    root = write_forensics_log(tmp_path)
    hist = _history(root, GROUP, PARTITION)
    got = [(c.record_offset, c.topic, c.partition, c.offset, c.outcome, tuple(c.flags)) for c in hist.commits]
    assert got == [
        (1, "t", 0, 100, "committed", ()),
        (3, "t", 0, 150, "committed", ()),
        (4, "t", 1, 7, "committed", (NOT_ASSIGNED,)),
        (6, "t", 0, 20, "committed", (REWIND,)),
        (7, "t", 0, 500, "aborted", ()),
        (9, "t", 0, 30, "committed", ()),  # judged against 20: the aborted 500 never took effect
        (10, "t", 0, 5000, "committed", (PAST_LOG_END,)),
        (11, "t", 0, 6000, "committed", ()),  # already above the log end: only the crossing is flagged
        (12, "t", 0, None, "committed", (TOMBSTONE,)),
    ]
    by_off = {c.record_offset: c for c in hist.commits}
    assert by_off[1].owner.member_id == "c1-aaa" and by_off[1].owner.host == "/10.0.0.1"
    assert by_off[1].generation == 1 and by_off[1].members == 1
    assert by_off[4].owner is None and by_off[4].members == 1
    assert by_off[6].owner is None and by_off[6].members == 0 and by_off[6].group_state == "Empty"
    assert by_off[6].previous_offset == 150 and by_off[9].previous_offset == 20
    assert by_off[7].transactional and by_off[7].producer_id == 9
    assert by_off[10].timestamp == T0 + 9 * 60_000
    assert [(g.record_offset, g.generation, len(g.members)) for g in hist.changes] == [(0, 1, 1), (5, 2, 0)]
    assert DATA_LOG_END == 1000


@pytest.mark.parametrize("sim", ["sim_with_data", "sim_kip848"])
def test_history_ends_at_the_truth_offsets(sim, request):
    """The last commit that took effect per partition is the truth's committed offset, and the crossing
    of the log end is flagged exactly for the partitions whose truth offset lies above it."""
    logdir, truth = request.getfixturevalue(sim)
    n = truth["num_partitions"]
    commits = truth_offsets(truth)
    data = truth_data(truth)
    groups = sorted({g for g, _t, _p in commits})[:6]
    checked = 0
    for group in groups:
        hist = _history(logdir, group, partition_for(group, n))
        last: dict[tuple[str, int], int | None] = {}
        crossed: set[tuple[str, int]] = set()
        for c in hist.commits:
            if c.outcome == "committed":
                last[(c.topic, c.partition)] = c.offset
            if PAST_LOG_END in c.flags:
                crossed.add((c.topic, c.partition))
        for (g, t, p), o in commits.items():
            if g != group:
                continue
            assert last[(t, p)] == o["offset"], (group, t, p)
            end = data[(t, p)]["log_end_offset"]
            if end is not None and o["offset"] > end:
                assert (t, p) in crossed, (group, t, p)
            checked += 1
    assert checked > 20


@pytest.mark.parametrize("logdir", real_kafka_logdirs()[:6], ids=lambda p: p.name)
def test_real_fixtures_last_commit_is_the_reloaded_offset(logdir):
    for cache in load_log_dir(logdir):
        for gid, g in list(cache.groups.items())[:3]:
            hist = _history(logdir, gid, cache.partition)
            last = {}
            for c in hist.commits:
                if c.outcome == "committed":
                    last[(c.topic, c.partition)] = c.offset
            for tp, om in g.offsets.items():
                assert last[tp] == om.offset, (gid, tp)


def test_kip848_owner_at_commit_time_is_the_current_assignment_owner(sim_kip848):
    """For KIP-848 groups the last commit of each partition was made while the truth's owner held it
    (the simulated members commit only what they own)."""
    logdir, truth = sim_kip848
    n = truth["num_partitions"]
    checked = 0
    for part in truth["partitions"]:
        for g in part["groups"]:
            if g["group_type"] != "consumer" or not g["members"]:
                continue
            owner = {
                (t, p): m["member_id"]
                for m in g["members"]
                for t, ps in (m["assignment"] or {}).items()
                for p in ps
            }
            hist = _history(logdir, g["group_id"], partition_for(g["group_id"], n))
            last = {}
            for c in hist.commits:
                if c.outcome == "committed" and c.owner is not None:
                    last[(c.topic, c.partition)] = c.owner.member_id
            for tp, mid in owner.items():
                if tp in last:
                    assert last[tp] == mid, (g["group_id"], tp)
                    checked += 1
    assert checked > 5


def test_memory_bound_keeps_the_newest_and_counts_the_rest(tmp_path):
    root = write_forensics_log(tmp_path)
    pdir = open_log_dir(root, partitions=[PARTITION]).partitions[0]
    hist = replay_history(
        pdir.iter_batches([]),
        GROUP,
        offsets_partition=PARTITION,
        max_commits=3,
        keep=lambda c: c.partition == 0,
    )
    assert [c.offset for c in hist.commits] == [5000, 6000, None]
    assert hist.total_commits == 9 and hist.dropped_commits == 5  # 8 on t-0, 3 kept
