"""The simulator: its log dirs reload to exactly its ground truth, and that comparison can fail."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path

import pytest
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.schema.values import decode_value
from offsetops.coordinator_core.simulator import (
    SimulationConfig,
    broker_profile,
    diff_truth,
    load_truth,
    simulate,
)
from offsetops.coordinator_core.simulator.log import PartitionLog
from offsetops.coordinator_core.sources.logdir import open_log_dir

from offsetops.cli import main

SMALL = {"groups": 20, "partitions": 8, "days": 0.06, "segment_bytes": 8 * 1024}


def _sim(path: Path, **kw) -> dict:
    simulate(SimulationConfig(path, **{**SMALL, **kw}))
    return load_truth(path)


def _reload(path: Path, truth: dict) -> list[dict]:
    caches = load_log_dir(path, num_partitions=truth["num_partitions"], semantics=truth["semantics"])
    errors = [e for c in caches for e in c.stats.errors]
    assert errors == []
    return [c.to_json() for c in caches]


def _all_groups(truth: dict) -> list[dict]:
    return [g for p in truth["partitions"] for g in p["groups"]]


@pytest.mark.parametrize("compression", ["none", "mixed"])
@pytest.mark.parametrize("seed", [1, 7])
@pytest.mark.parametrize("version", ["2.0", "2.3", "3.9", "4.1", "4.2"])
def test_reload_equals_truth(tmp_path: Path, version: str, seed: int, compression: str) -> None:
    truth = _sim(tmp_path, kafka_version=version, seed=seed, compression=compression)
    assert _all_groups(truth), "the simulation produced no groups"
    assert diff_truth(truth, _reload(tmp_path, truth)) == []


def test_corrupted_truth_is_detected(tmp_path: Path) -> None:
    truth = _sim(tmp_path, kafka_version="3.9", seed=3)
    reloaded = _reload(tmp_path, truth)
    assert diff_truth(truth, reloaded) == []
    group = next(g for g in _all_groups(truth) if g["offsets"])
    bad = copy.deepcopy(truth)
    for p in bad["partitions"]:
        for g in p["groups"]:
            if g["group_id"] == group["group_id"]:
                g["offsets"][0]["offset"] += 1
    diffs = diff_truth(bad, reloaded)
    assert len(diffs) == 1 and repr(group["group_id"]) in diffs[0] and "offsets" in diffs[0]
    # A group the truth forgot, and a member order change (which must not count).
    worse = copy.deepcopy(truth)
    dropped = worse["partitions"][group_partition(truth, group["group_id"])]["groups"].pop(0)
    assert any("unexpected group" in d and dropped["group_id"] in d for d in diff_truth(worse, reloaded))
    shuffled = copy.deepcopy(truth)
    for g in _all_groups(shuffled):
        g["members"].reverse()
        g["offsets"].reverse()
    assert diff_truth(shuffled, reloaded) == []


def group_partition(truth: dict, group_id: str) -> int:
    return next(
        i for i, p in enumerate(truth["partitions"]) if any(g["group_id"] == group_id for g in p["groups"])
    )


def test_truncated_log_is_detected(tmp_path: Path) -> None:
    truth = _sim(tmp_path, kafka_version="4.1", seed=2)
    busiest = max(open_log_dir(tmp_path).partitions, key=lambda p: p.size_bytes)
    last = busiest.segments[-1].path
    data = last.read_bytes()
    last.write_bytes(data[: len(data) // 2])  # lose the newest half of the active segment
    caches = load_log_dir(tmp_path, num_partitions=truth["num_partitions"], semantics=truth["semantics"])
    assert diff_truth(truth, [c.to_json() for c in caches]) != []


def test_a_cleaner_that_drops_markers_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the simulated cleaner were wrong, reload and truth would part ways: the test has teeth."""
    real = PartitionLog._filter

    def drop_markers(self, b, *args):  # type: ignore[no-untyped-def]
        return b"" if b.is_control else real(self, b, *args)

    monkeypatch.setattr(PartitionLog._filter, "__code__", real.__code__)  # keep the original intact
    monkeypatch.setattr(PartitionLog, "_filter", drop_markers)
    truth = _sim(tmp_path, kafka_version="3.9", seed=5, groups=40, compacted_fraction=1.0)
    assert truth["stats"]["txn_committed"] > 0
    assert diff_truth(truth, _reload(tmp_path, truth)) != []


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for d, seed in ((a, 11), (b, 11), (c, 12)):
        _sim(d, kafka_version="4.1", seed=seed, compression="mixed")

    def files(root: Path) -> dict[str, bytes]:
        return {str(f.relative_to(root)): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()}

    assert files(a) == files(b)
    assert files(a) != files(c)


def test_share_and_streams_groups_reload_to_their_ground_truth(tmp_path: Path) -> None:
    """Kafka 4.2 brokers hold share and streams groups: members, assignments, topology and tasks reload
    exactly as the simulated coordinator held them, and a wrong task in the truth is caught."""
    truth = _sim(tmp_path, kafka_version="4.2", seed=11, groups=40, days=0.6)
    groups = _all_groups(truth)
    share = [g for g in groups if g["group_type"] == "share" and g["members"]]
    streams = [g for g in groups if g["group_type"] == "streams" and g["members"]]
    assert share and streams
    assert all(g["offsets"] == [] for g in share)  # their offsets live in __share_group_state
    assert any(m["assigned_tasks"]["active"] for g in streams for m in g["streams"]["members"])
    reloaded = _reload(tmp_path, truth)
    assert diff_truth(truth, reloaded) == []

    bad = copy.deepcopy(truth)

    def has_tasks(g: dict) -> bool:
        return g["group_type"] == "streams" and any(
            m["assigned_tasks"]["active"] for m in g["streams"]["members"]
        )

    victim = next(g for p in bad["partitions"] for g in p["groups"] if has_tasks(g))
    member = next(m for m in victim["streams"]["members"] if m["assigned_tasks"]["active"])
    sid = next(iter(member["assigned_tasks"]["active"]))
    member["assigned_tasks"]["active"][sid] = member["assigned_tasks"]["active"][sid] + [999]
    assert any("field streams" in d and victim["group_id"] in d for d in diff_truth(bad, reloaded))


def test_what_the_log_dir_holds(tmp_path: Path) -> None:
    truth = _sim(tmp_path, kafka_version="4.1", seed=4, groups=40, days=0.3)
    groups = _all_groups(truth)
    for p in truth["partitions"]:
        for g in p["groups"]:
            assert partition_for(g["group_id"], truth["num_partitions"]) == p["partition"]
    kinds = {(g["group_type"], g["protocol_type"], g["state"]) for g in groups}
    assert ("consumer", "consumer", "Stable") in kinds  # KIP-848 groups on 4.x
    assert ("classic", None, "Empty") in kinds  # standalone consumers
    assert ("classic", "consumer", "Stable") in kinds
    assert any(g["pending_offsets"] for g in groups) or truth["open_transactions"] == []
    assert any(m["group_instance_id"] for g in groups for m in g["members"])  # static members
    stats = truth["stats"]
    assert stats["txn_committed"] and stats["txn_aborted"] and stats["rebalances"]
    assert stats["kip848_records"] and stats["tombstones"]

    logdir = open_log_dir(tmp_path)
    compacted = {p["partition"] for p in truth["partitions"] if p["compacted"]}
    assert set(logdir.log_start_checkpoint) == {("__consumer_offsets", p) for p in compacted}
    assert logdir.cleaner_checkpoint, "no compacted partition was cleaned"
    skipped = 0
    versions: list[int] = []
    for pdir in logdir.partitions:
        for seg in pdir.segments:
            batches = list(iter_segment_batches(seg.path, errors=[]))
            if batches and batches[0].base_offset > seg.base_offset:
                skipped += 1
            for b in batches:
                if not b.is_control:
                    for _o, _t, key, value in b.records():
                        if key[:2] == b"\x00\x01" and value is not None:
                            versions.append(decode_value(1, value).version)
    assert skipped > 0
    # 4.1 writes v4, and v1 only when an old client sent an explicit retention time.
    assert set(versions) <= {1, 4} and versions.count(4) > 0.9 * len(versions)
    assert (tmp_path / "meta.properties").read_text().count("node.id=1") == 1


def test_old_brokers_write_old_versions(tmp_path: Path) -> None:
    truth = _sim(tmp_path, kafka_version="2.0", seed=1)
    groups = _all_groups(truth)
    assert {g["group_type"] for g in groups} == {"classic"}
    offsets = [o for g in groups for o in g["offsets"]]
    # v1 values: no leader epoch, and 2.0 stores commit time + retention as the expire timestamp.
    assert offsets and all(o["leader_epoch"] is None for o in offsets)
    assert all(o["expire_timestamp"] == o["commit_timestamp"] + 7 * 86_400_000 for o in offsets)
    assert all(g["current_state_timestamp"] is None for g in groups)


def test_profiles() -> None:
    assert (broker_profile("2.0").offset_value_version, broker_profile("2.0").group_value_version) == (1, 1)
    assert (broker_profile("2.3").offset_value_version, broker_profile("2.3").group_value_version) == (3, 3)
    assert broker_profile("3.9.1").semantics == "scala" and not broker_profile("3.9").kip848
    p41 = broker_profile("4.1")
    assert (p41.offset_value_version, p41.group_value_version, p41.semantics, p41.kip848) == (
        4,
        3,
        "java",
        True,
    )
    with pytest.raises(ValueError):
        broker_profile("1.1")


def test_target_bytes_stops_near_the_target(tmp_path: Path) -> None:
    result = simulate(
        SimulationConfig(
            tmp_path,
            groups=10,
            partitions=4,
            target_bytes=400_000,
            segment_bytes=64 * 1024,
            compacted_fraction=0.0,
        )
    )
    assert 400_000 <= result.bytes_written < 600_000


def _run_cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, out.getvalue()


def test_cli_simulate_then_dump_and_reload(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    rc, out = _run_cli(
        [
            "simulate",
            str(d),
            "--groups",
            "15",
            "--partitions",
            "6",
            "--days",
            "0.05",
            "--seed",
            "9",
            "--kafka-version",
            "4.1",
            "--compression",
            "mixed",
            "--segment-bytes",
            "16KB",
            "--json",
        ]
    )
    assert rc == 0
    assert json.loads(out)["bytes"] > 0
    rc, dump = _run_cli(["dump", str(d), "--strict"])
    assert rc == 0
    assert "baseOffset:" in dump and "Error" not in dump and "Unknown record type" not in dump
    rc, out = _run_cli(["reload", str(d), "--json", "--strict"])
    assert rc == 0
    truth = load_truth(d)
    assert diff_truth(truth, json.loads(out)["partitions"]) == []
    rc, _ = _run_cli(["simulate", str(d)])
    assert rc == 2  # refuses to overwrite


def test_data_topics_leave_the_offsets_log_dir_unchanged(tmp_path):
    """Data-topic dirs use a random stream of their own: the __consumer_offsets bytes are the same."""
    import json as _json

    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    plain = simulate(SimulationConfig(out_dir=tmp_path / "a", groups=6, partitions=2, days=0.05, seed=5))
    withd = simulate(
        SimulationConfig(out_dir=tmp_path / "b", groups=6, partitions=2, days=0.05, seed=5, data_topics=True)
    )
    for seg in sorted((tmp_path / "a").glob("__consumer_offsets-*/*.log")):
        twin = tmp_path / "b" / seg.parent.name / seg.name
        assert twin.read_bytes() == seg.read_bytes(), seg
    truth = _json.loads(withd.truth_path.read_text())
    assert "data_partitions" not in _json.loads(plain.truth_path.read_text())
    committed = {
        (o["topic"], o["partition"]) for p in truth["partitions"] for g in p["groups"] for o in g["offsets"]
    }
    assert {(d["topic"], d["partition"]) for d in truth["data_partitions"]} == committed
    for d in truth["data_partitions"]:
        folder = tmp_path / "b" / f"{d['topic']}-{d['partition']}"
        assert folder.is_dir() == (d["source"] == "partition_dir")
