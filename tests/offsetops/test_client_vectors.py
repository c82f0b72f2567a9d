"""reload, dump and describe on segment files holding the consumer-protocol bytes each client writes
(tests/fixtures/client_vectors.json): no error, the right topics and partitions, a notice where a client
writes a layout other than its version's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.metrics_snapshot import _reload_metrics

from offsetops.cli import main
from tests.support.client_vectors import (
    COMMITTED,
    NUM_PARTITIONS,
    by_group,
    member_id,
    write_client_vectors_log,
)

GROUPS = by_group()
NONSTANDARD = {g for g, pair in GROUPS.items() if not pair["subscription"]["expect"]["standard"]}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_client_vectors_log(tmp_path_factory.mktemp("clients"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_reload_reads_every_client_without_error(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "reload", str(logdir), "--json", "--strict")
    assert code == 0, err
    parts = json.loads(out)["partitions"]
    groups = {g["group_id"]: g for p in parts for g in p["groups"]}
    assert set(groups) == set(GROUPS)
    for gid, pair in GROUPS.items():
        [m] = groups[gid]["members"]
        assert m["subscribed_topics"] == sorted(pair["subscription"]["expect"]["topics"]), gid
        assert m["assignment"] == pair["assignment"]["expect"]["partitions"], gid
    found = [e for p in parts for e in p["stats"]["errors"]]
    assert {e["kind"] for e in found} <= {"embedded_layout"}
    noticed = {g for g in GROUPS for e in found if f"group {g!r} " in e["reason"]}
    assert noticed == NONSTANDARD and NONSTANDARD  # KafkaJS <= 2.2.1 and kafka-go's Reader, by name


def test_dump_decodes_every_client_without_error(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "dump", str(logdir), "--json", "--strict")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    members = {
        rec["key"]["data"]["group"]: rec["payload"]["data"]["members"][0]
        for rec in lines
        if rec.get("type") == "record" and rec["key"]["type"] == "2"
    }
    assert set(members) == set(GROUPS)
    for gid, pair in GROUPS.items():
        m = members[gid]
        assert m["subscription"]["topics"] == pair["subscription"]["expect"]["topics"], gid
        asg = pair["assignment"]
        if asg["hex"]:
            got = {tp["topic"]: tp["partitions"] for tp in m["assignment"]["assignedPartitions"]}
            assert got == asg["expect"]["partitions"], gid
    notices = [rec for rec in lines if rec.get("kind") == "embedded_layout" or rec.get("type") == "error"]
    assert all(rec.get("kind") == "embedded_layout" for rec in notices)
    assert len(notices) == len(NONSTANDARD)


def test_describe_names_each_clients_member_as_owner(
    logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "describe", str(logdir), "--json", "--num-partitions", str(NUM_PARTITIONS))
    assert code == 0 and "decode error" not in err, err
    groups = {g["group_id"]: g for g in json.loads(out)["groups"]}
    for gid, pair in GROUPS.items():
        want = {(t, p) for t, ps in pair["assignment"]["expect"]["partitions"].items() for p in ps}
        rows = groups[gid]["rows"] if want else []
        assert {(r["topic"], r["partition"]) for r in rows} == want, gid
        assert all(r["member_id"] == member_id(gid) and r["committed_offset"] == COMMITTED for r in rows)


def test_exporter_counts_no_decode_error_for_a_notice(logdir: Path) -> None:
    caches = load_log_dir(logdir, num_partitions=NUM_PARTITIONS)
    assert any(e.is_notice for c in caches for e in c.stats.errors)
    [errors] = [m for m in _reload_metrics(caches) if m.name.endswith("reload_decode_errors")]
    assert sum(s.value for s in errors.samples) == 0
