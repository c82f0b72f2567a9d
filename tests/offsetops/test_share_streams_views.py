"""Share and streams groups in the operator views (groups, describe, reload --json), on a Kafka 4.2 run
whose ground truth says what each group holds."""

from __future__ import annotations

import json

from offsetops.cli import main
from tests.support.simdirs import sim_share_streams as sim_share_streams
from tests.support.simdirs import truth_groups


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_groups_lists_share_and_streams_groups_with_their_state_and_epoch(sim_share_streams, capsys):
    logdir, truth = sim_share_streams
    code, out = run(capsys, "groups", str(logdir), "--format", "json", "--num-partitions", "4")
    assert code == 0
    got = {g["group_id"]: g for g in json.loads(out)["groups"]}
    for kind in ("share", "streams"):
        want = truth_groups(truth, kind)
        assert want, f"the simulation has no {kind} group with members"
        for g in want:
            row = got[g["group_id"]]
            assert (row["group_type"], row["state"], row["generation"]) == (kind, g["state"], g["generation"])
            assert row["members"] == len(g["members"])
            assert row[kind] == g[kind]  # epochs, members, assignment / topology and tasks
    code, text = run(capsys, "groups", str(logdir), "--num-partitions", "4")
    assert "share group(s): a share group's offsets" in text and "__share_group_state" in text


def test_describe_share_group_shows_members_assignment_and_where_offsets_are(sim_share_streams, capsys):
    logdir, truth = sim_share_streams
    group = truth_groups(truth, "share")[-1]
    code, out = run(capsys, "describe", str(logdir), group["group_id"], "--num-partitions", "4")
    assert code == 0
    first = out.splitlines()[0]
    share = group["share"]
    assert f"share group, {group['state']}, group epoch {share['group_epoch']}" in first
    assert "live in __share_group_state, not in __consumer_offsets" in out
    for m in share["members"]:
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(m["member_id"]))
        assert " ".join(m["subscribed_topics"]) in line
        assert all(f"{t}:" in line for t in m["assigned_partitions"])
    assert "NO-COMMIT" in out  # partitions owned, offsets elsewhere


def test_describe_streams_group_shows_topology_and_tasks_per_member(sim_share_streams, capsys):
    logdir, truth = sim_share_streams
    group = max(truth_groups(truth, "streams"), key=lambda g: len(g["members"]))
    code, out = run(capsys, "describe", str(logdir), group["group_id"], "--num-partitions", "4")
    assert code == 0
    streams = group["streams"]
    assert f"streams group, {group['state']}, group epoch {streams['group_epoch']}" in out.splitlines()[0]
    assert f"TOPOLOGY epoch {streams['topology']['epoch']}" in out
    for sub in streams["topology"]["subtopologies"]:
        assert any(
            ln.split()[:2] == [sub["subtopology_id"], *sub["source_topics"]] for ln in out.splitlines()
        )
    for m in streams["members"]:
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(m["member_id"]))
        assert m["process_id"] in line and m["member_state"] in line
        for sid in m["assigned_tasks"]["active"]:
            assert f"{sid}:" in line
    code, doc = run(
        capsys, "describe", str(logdir), group["group_id"], "--format", "json", "--num-partitions", "4"
    )
    assert json.loads(doc)["groups"][0]["streams"] == streams


def test_reload_json_carries_share_and_streams_detail(sim_share_streams, capsys):
    logdir, truth = sim_share_streams
    code, out = run(capsys, "reload", str(logdir), "--json", "--num-partitions", "4")
    assert code == 0
    doc = json.loads(out)
    groups = {g["group_id"]: g for p in doc["partitions"] for g in p["groups"]}
    for kind in ("share", "streams"):
        for g in truth_groups(truth, kind):
            assert groups[g["group_id"]][kind] == g[kind]


def test_exporter_counts_groups_per_type_and_streams_tasks(sim_share_streams, capsys):
    logdir, truth = sim_share_streams
    code, out = run(capsys, "exporter", str(logdir), "--num-partitions", "4", "--once")
    assert code == 0
    every = [g for p in truth["partitions"] for g in p["groups"]]
    for kind in ("share", "streams"):
        want = sum(g["group_type"] == kind for g in every)
        got = sum(
            float(line.rsplit(" ", 1)[1])
            for line in out.splitlines()
            if line.startswith(f'offsetops_groups{{group_type="{kind}"')
        )
        assert got == want
    g = max(truth_groups(truth, "streams"), key=lambda g: len(g["members"]))
    active = sum(len(p) for m in g["streams"]["members"] for p in m["assigned_tasks"]["active"].values())
    assert (
        f'offsetops_streams_group_tasks{{group_id="{g["group_id"]}",task_type="active"}} {float(active)}'
        in out
    )


def test_describe_says_an_early_access_group_is_not_upgradable():
    """A Kafka 4.0 share group (ShareGroupMetadataValue with the epoch alone) is named, not misread."""
    import io

    from offsetops.coordinator_core.describe import describe_groups
    from offsetops.coordinator_core.schema.codec import encode_versioned
    from offsetops.coordinator_core.schema.share_streams import EARLY_ACCESS_VALUE_SCHEMAS

    from offsetops.commands.describe import print_group
    from tests.support.modern_groups import group_record, load, share_member

    key, _ = group_record(11, "old-queue", None, {"epoch": 3, "metadataHash": 0})
    early = encode_versioned(EARLY_ACCESS_VALUE_SCHEMAS[11][0], 0, {"epoch": 3})
    (view,) = describe_groups([load(share_member("old-queue", "m1", ["foo"]), (key, early))], {})
    out = io.StringIO()
    print_group(view, 0, out)
    text = out.getvalue()
    assert "share group, EarlyAccess, group epoch 3" in text
    assert "EARLY ACCESS, NOT UPGRADABLE" in text and "ShareGroupMetadataValue (4.0)" in text


def test_reload_text_says_where_share_offsets_are(sim_share_streams, capsys):
    logdir, truth = sim_share_streams
    code, out = run(capsys, "reload", str(logdir), "--num-partitions", "4")
    assert code == 0
    group = truth_groups(truth, "share")[0]
    line = next(ln for ln in out.splitlines() if f"'{group['group_id']}'" in ln)
    assert "protocol_type='share'" in line and "0 offsets (its offsets live in __share_group_state)" in line
