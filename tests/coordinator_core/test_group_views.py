"""The group views' core entry points: groups_view, describe_view, history_view and the log-offsets lookup."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.describe import GroupFilter
from offsetops.coordinator_core.findings import finding_key
from offsetops.coordinator_core.group_views import (
    GroupsRequest,
    HistoryRequest,
    ViewInputError,
    describe_view,
    groups_view,
    history_view,
    load_caches,
    source_log_offsets,
)
from offsetops.coordinator_core.history import NOT_ASSIGNED, PAST_LOG_END, REWIND
from offsetops.coordinator_core.run import resolve_run
from offsetops.coordinator_core.sources.source import Source

from tests.support.forensics_log import DATA_LOG_END, GROUP, PARTITION, T0, write_forensics_log
from tests.support.simdirs import sim_with_data as sim_with_data
from tests.support.simdirs import truth_offsets


def _settings(log_dir, **flags):
    return resolve_run(
        flags={k: (v, f"flag {k}") for k, v in flags.items()}, environ={}, log_dir=str(log_dir)
    )


def test_groups_view_lists_every_group_worst_first(sim_with_data):
    logdir, truth = sim_with_data
    settings = _settings(logdir, retention_minutes=60)  # short: some groups are at risk
    result = groups_view(GroupsRequest(settings, Source(log_dir=str(logdir))))
    groups = {gid for gid, _t, _p in truth_offsets(truth)}
    assert groups <= {v.group_id for v in result.views}
    assert result.now_ms == settings.now_ms and result.decode_errors == 0 and not result.missing
    # at-risk groups come first, in the findings model's order; then out-of-range, then lag
    at_risk = [v.group_id for v in result.views if result.risk(v.group_id) is not None]
    assert at_risk and at_risk == [v.group_id for v in result.views[: len(at_risk)]]
    assert at_risk == sorted(at_risk, key=lambda g: finding_key(result.risks[g].finding()))
    rest = result.views[len(at_risk) :]
    keys = [(-v.out_of_range, -(v.total_lag or 0), v.group_id) for v in rest]
    assert keys == sorted(keys)
    doc = result.to_json()
    assert doc["log_offsets_from"].startswith("data-topic partition dirs and checkpoints in ")
    assert all("rows" not in g and "expiry" in g for g in doc["groups"])


def test_describe_view_keeps_the_rows_and_names_missing_groups(sim_with_data):
    logdir, truth = sim_with_data
    gid = next(iter(truth_offsets(truth)))[0]
    flt = GroupFilter(groups=frozenset({gid, "no-such-group"}))
    result = describe_view(GroupsRequest(_settings(logdir), Source(log_dir=str(logdir)), flt))
    assert [v.group_id for v in result.views] == [gid]
    assert result.missing == ("no-such-group",)
    (doc,) = result.to_json()["groups"]
    wanted = {(t, p) for g, t, p in truth_offsets(truth) if g == gid}
    assert {(r["topic"], r["partition"]) for r in doc["rows"]} >= wanted
    assert all({"commit_time", "expire_time"} <= set(r) for r in doc["rows"])


def test_a_view_loads_through_the_loader_it_is_given(sim_with_data):
    logdir, _truth = sim_with_data
    seen = []

    def load(source, settings):
        seen.append((source, settings["num_partitions"]))
        return load_caches(source, settings)

    source = Source(log_dir=str(logdir), partitions=(0,))
    result = groups_view(GroupsRequest(_settings(logdir, num_partitions=4), source), load=load)
    assert seen == [(source, 4)]
    assert {v.coordinator_partition for v in result.views} == {0}


def test_a_missing_data_log_dir_is_refused_before_loading(tmp_path):
    root = write_forensics_log(tmp_path / "logdir")
    source = Source(log_dir=str(root), data_log_dirs=(str(tmp_path / "nope"),))

    def load(_source, _settings):
        raise AssertionError("loaded despite a missing --log-dir")

    with pytest.raises(ViewInputError, match="nope: not a directory"):
        groups_view(GroupsRequest(_settings(root), source), load=load)
    with pytest.raises(ViewInputError, match="nope: not a directory"):
        history_view(HistoryRequest(_settings(root), source, GROUP))


def test_log_offsets_of_one_partition_dir_come_from_its_log_dir(tmp_path):
    root = write_forensics_log(tmp_path / "logdir")
    source = Source(log_dir=str(root / f"__consumer_offsets-{PARTITION}"))
    offsets, where = source_log_offsets(source, {("t", 0)})
    assert offsets[("t", 0)].log_end_offset == DATA_LOG_END
    assert where.endswith(str(root))


def test_history_view_flags_and_selects(tmp_path):
    root = write_forensics_log(tmp_path / "logdir")
    settings = _settings(root)
    result = history_view(HistoryRequest(settings, Source(log_dir=str(root)), GROUP))
    assert result.history.offsets_partition == PARTITION
    assert result.summary == {"commits": 9, "rewinds": 1, "past_log_end": 1, "not_assigned": 1, "aborted": 1}
    flagged = history_view(HistoryRequest(settings, Source(log_dir=str(root)), GROUP, flagged=True))
    assert flagged.commits and all(c.flags for c in flagged.commits)
    assert {REWIND, PAST_LOG_END, NOT_ASSIGNED} <= {f for c in flagged.commits for f in c.flags}
    late = history_view(HistoryRequest(settings, Source(log_dir=str(root)), GROUP, since_ms=T0 + 300_000))
    assert late.commits and all(c.timestamp >= T0 + 300_000 for c in late.commits)
    assert late.to_json()["summary"]["commits"] == len(late.commits) < 9


def test_history_view_counts_segments_and_reports_listing_anomalies(tmp_path):
    root = write_forensics_log(tmp_path / "logdir")
    stray = root / f"__consumer_offsets-{PARTITION}" / "not-an-offset.log"
    stray.write_bytes(b"")
    counted, sizes = [], []
    result = history_view(
        HistoryRequest(_settings(root), Source(log_dir=str(root)), GROUP),
        on_count=counted.append,
        on_segment=sizes.append,
    )
    assert counted == [1] and len(sizes) == 1 and sizes[0] > 0
    assert any(e.kind == "bad_segment_name" for e in result.history.errors)


def test_history_view_refuses_a_non_positive_max_commits(tmp_path):
    root = write_forensics_log(tmp_path / "logdir")
    with pytest.raises(ViewInputError, match="--max-commits"):
        history_view(HistoryRequest(_settings(root), Source(log_dir=str(root)), GROUP, max_commits=0))
