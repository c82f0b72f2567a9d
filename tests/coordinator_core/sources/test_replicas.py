"""Several brokers' log dirs: a 3-broker layout made of copies of a real broker's log dir, mutated the way
replicas really differ (a truncated follower, a bumped leader epoch, other bytes, no meta.properties)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from offsetops.coordinator_core.cleaner.audit import audit_log_dir, audit_log_dirs
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.logdir import LogDirError
from offsetops.coordinator_core.sources.replicas import (
    AHEAD_OF_CHOSEN,
    DIFFERENT_BATCHES,
    EPOCH_HISTORY,
    ReplicaCopy,
    choose_replica,
    open_log_dirs,
    split_broker_prefix,
)

from offsetops.cli import main
from tests.support.shared import require_real_kafka

NOW = 1_770_000_000_000
SOURCE = "DanielMorales9__kafkafun"  # Kafka 2.x, broker.id=0, leader epoch 0 everywhere
PARTITIONS = (13, 39)  # 223 and 1241 records
LOG = "00000000000000000000.log"


@pytest.fixture
def brokers(tmp_path: Path) -> dict[int, Path]:
    """Brokers 0, 1 and 2, each with an identical copy of two real partitions and the log dir files."""
    src = require_real_kafka() / SOURCE
    out = {}
    for broker in (0, 1, 2):
        root = tmp_path / f"broker-{broker}"
        root.mkdir()
        for name in (
            "cleaner-offset-checkpoint",
            "log-start-offset-checkpoint",
            "replication-offset-checkpoint",
        ):
            shutil.copyfile(src / name, root / name)
        meta = (src / "meta.properties").read_text().replace("broker.id=0", f"broker.id={broker}")
        (root / "meta.properties").write_text(meta)
        for part in PARTITIONS:
            dst = root / f"__consumer_offsets-{part}"
            shutil.copytree(src / dst.name, dst)
            for f in dst.iterdir():
                f.chmod(0o644)
        out[broker] = root
    return out


def truncate(pdir: Path, keep_batches: int) -> int:
    """Cut the segment after ``keep_batches`` batches (a follower that fetched that far); the new end."""
    seg = pdir / LOG
    batches = list(iter_segment_batches(seg, errors=[]))
    with open(seg, "r+b") as fh:
        fh.truncate(batches[keep_batches].position)
    return batches[keep_batches].base_offset


def bump_epoch(pdir: Path, epoch: int, start: int) -> None:
    (pdir / "leader-epoch-checkpoint").write_text(f"0\n2\n0 0\n{epoch} {start}\n")


def test_identical_copies_audit_and_reload_as_the_single_dir_does(brokers, capsys) -> None:
    single = audit_log_dir(brokers[0], now_ms=NOW, record_history=False).to_json()
    multi = audit_log_dirs(open_log_dirs(brokers), now_ms=NOW, record_history=False).to_json()
    assert multi["verdict"] == single["verdict"]
    assert multi["summary"]["brokers"] == 3 and multi["summary"]["partitions"] == 6
    assert multi["summary"]["divergent_partitions"] == 0
    for broker in (0, 1, 2):
        rows = [dict(p) for p in multi["partitions"] if p["broker_id"] == broker]
        for row in rows:
            del row["broker_id"]
        assert rows == single["partitions"]
    reasons = {r["partition"]: r["reason"] for r in multi["replicas"]}
    assert reasons[39] == (
        "broker 0: lowest broker id among brokers 0, 1, 2, whose copies have the same leader epoch 0, "
        "log end offset 1241 and log start offset 0"
    )
    assert all(not r["divergences"] for r in multi["replicas"])

    assert main(["reload", "--json", str(brokers[1])]) == 0
    one = json.loads(capsys.readouterr().out)
    args = ["reload", "--json"] + [f"--log-dir={p}" for p in brokers.values()]
    assert main(args) == 0
    several = json.loads(capsys.readouterr().out)
    strip = [{k: v for k, v in p.items() if k != "stats"} for p in one["partitions"]]
    assert [{k: v for k, v in p.items() if k != "stats"} for p in several["partitions"]] == strip
    assert [r["chosen_broker_id"] for r in several["replicas"]] == [0, 0]


def test_a_truncated_follower_is_behind_not_divergent(brokers, capsys) -> None:
    end = truncate(brokers[1] / "__consumer_offsets-39", 600)
    dirs = open_log_dirs(brokers, partitions=[39])
    choice = dirs.choice(39)
    assert choice is not None and choice.chosen.broker_id == 0
    assert choice.reason.endswith(f"; behind it: broker 1 (ends at {end})")
    assert choice.divergences == ()
    audit = audit_log_dirs(dirs, now_ms=NOW, record_history=False)
    ends = {p.broker_id: p.log_end_offset for p in audit.partitions}
    assert ends == {0: 1241, 1: end, 2: 1241}
    assert audit.verdict == "HEALTHY"
    # the reload reads the complete copy, and says so
    assert main(["reload", "--partition", "39"] + [f"--log-dir={p}" for p in brokers.values()]) == 0
    out = capsys.readouterr().out
    assert "partition 39: reads broker 0:" in out and "1241 records" in out


def test_a_bumped_leader_epoch_wins_over_a_longer_log(brokers, capsys) -> None:
    truncate(brokers[2] / "__consumer_offsets-13", 100)
    bump_epoch(brokers[2] / "__consumer_offsets-13", 7, 150)
    dirs = open_log_dirs(brokers, partitions=[13])
    choice = dirs.choice(13)
    assert choice is not None and choice.chosen.broker_id == 2
    assert choice.reason == "broker 2: leader epoch 7 > 0 on broker 0"
    # brokers 0 and 1 reach past the chosen copy: a follower ahead of the leader, reported per copy
    assert sorted((d.broker_id, d.kind) for d in choice.divergences) == [
        (0, AHEAD_OF_CHOSEN),
        (1, AHEAD_OF_CHOSEN),
    ]
    assert choice.divergences[0].offset == choice.chosen.log_end_offset
    audit = audit_log_dirs(dirs, now_ms=NOW, record_history=False)
    verdicts = {p.broker_id: p.verdict for p in audit.partitions}
    assert verdicts == {0: "DEGRADED", 1: "DEGRADED", 2: "HEALTHY"}
    assert main(["audit", "--json", "--no-record"] + [f"--log-dir={p}" for p in brokers.values()]) == 0
    doc = json.loads(capsys.readouterr().out)
    (r13,) = [r for r in doc["replicas"] if r["partition"] == 13]
    assert r13["chosen_broker_id"] == 2 and [c["leader_epoch"] for c in r13["copies"]] == [0, 0, 7]
    codes = {(p["partition"], p["broker_id"]): [r["code"] for r in p["reasons"]] for p in doc["partitions"]}
    assert "replica_divergence" in codes[(13, 0)] and "replica_divergence" not in codes[(13, 2)]


def test_other_bytes_at_the_same_offsets_are_critical_and_never_merged(brokers, capsys) -> None:
    seg = brokers[1] / "__consumer_offsets-13" / LOG
    batch = list(iter_segment_batches(seg, errors=[]))[50]
    data = bytearray(seg.read_bytes())
    data[batch.position + batch.size - 1] ^= 0xFF  # the stored CRC is left as it was
    seg.write_bytes(bytes(data))
    dirs = open_log_dirs(brokers, partitions=[13])
    choice = dirs.choice(13)
    assert choice is not None and choice.chosen.broker_id == 0
    (d,) = choice.divergences
    assert (d.broker_id, d.kind, d.offset) == (1, DIFFERENT_BATCHES, batch.base_offset)
    assert "other bytes" in d.message
    audit = audit_log_dirs(dirs, now_ms=NOW, record_history=False)
    assert audit.verdict == "CRITICAL"
    (row,) = [p for p in audit.partitions if p.broker_id == 1]
    assert row.reasons[0].code == "replica_divergence" and row.reasons[0].severity == "CRITICAL"
    assert main(["reload", "--partition", "13"] + [f"--log-dir={p}" for p in brokers.values()]) == 0
    captured = capsys.readouterr()
    assert f"at offset {batch.base_offset} broker 1 holds" in captured.err
    assert "0 errors" in captured.out  # broker 0's intact copy was read


def test_leader_epochs_that_started_elsewhere_are_a_divergent_history(brokers) -> None:
    (brokers[1] / "__consumer_offsets-39" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 500\n")
    (brokers[0] / "__consumer_offsets-39" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 600\n")
    choice = open_log_dirs(brokers, partitions=[39]).choice(39)
    assert choice is not None and choice.chosen.broker_id == 0
    assert [(d.broker_id, d.kind, d.offset) for d in choice.divergences] == [(1, EPOCH_HISTORY, 500)]


def test_a_missing_meta_properties_names_the_dir(brokers, capsys) -> None:
    (brokers[1] / "meta.properties").unlink()
    with pytest.raises(LogDirError, match=rf"{brokers[1]}: no meta.properties.*BROKER_ID=PATH"):
        open_log_dirs([brokers[0], brokers[1]])
    assert main(["audit", f"--log-dir={brokers[0]}", f"--log-dir={brokers[1]}"]) == 2
    assert f"{brokers[1]}: no meta.properties" in capsys.readouterr().err
    # an explicit id is enough, and a wrong one is refused where meta.properties says otherwise
    assert [b.broker_id for b in open_log_dirs([brokers[0], (1, str(brokers[1]))]).brokers] == [0, 1]
    with pytest.raises(LogDirError, match=r"given as broker 5, but its meta\.properties says 0"):
        open_log_dirs({5: brokers[0]})


def test_one_broker_cannot_hold_two_copies_and_per_broker_options_say_whose(brokers, capsys) -> None:
    with pytest.raises(LogDirError, match="given twice"):
        open_log_dirs([brokers[0], brokers[1], brokers[0]])
    (brokers[1] / "meta.properties").unlink()
    with pytest.raises(LogDirError, match="two log dirs of broker 0"):
        open_log_dirs([brokers[0], (0, str(brokers[1]))])
    log = brokers[0] / "log-cleaner.log"
    log.write_text("")
    assert (
        main(["audit", "--broker-log", str(log), f"--log-dir={brokers[0]}", f"--log-dir={brokers[2]}"]) == 2
    )
    assert "say whose it is as BROKER_ID=" in capsys.readouterr().err
    assert main(["audit", "--no-record", "--broker-log", f"2={log}", f"--log-dir={brokers[2]}"]) == 0


def _copy(broker: int, epoch: int | None, end: int, start: int) -> ReplicaCopy:
    epochs = () if epoch is None else ((epoch, 0),)
    return ReplicaCopy(broker, 39, f"/b{broker}/__consumer_offsets-39", 0, epochs, start, end, start)


def test_choose_replica_rules_in_order() -> None:
    assert choose_replica([_copy(1, 3, 10, 0), _copy(0, None, 99, 0)])[1] == (
        "broker 1: leader epoch 3 > none on broker 0"
    )
    assert choose_replica([_copy(0, 3, 10, 0), _copy(1, 3, 12, 0)])[1] == (
        "broker 1: log end offset 12 > 10 on broker 0 (same leader epoch 3); behind it: broker 0 (ends at 10)"
    )
    assert choose_replica([_copy(0, 3, 12, 5), _copy(1, 3, 12, 2)])[1] == (
        "broker 1: log start offset 2 < 5 on broker 0 (same leader epoch 3, same log end offset 12)"
    )
    assert choose_replica([_copy(4, 3, 12, 0)])[1] == "broker 4: the only copy"


def test_split_broker_prefix() -> None:
    assert split_broker_prefix("2=/data/kafka") == (2, "/data/kafka")
    assert split_broker_prefix("/data/a=b") == (None, "/data/a=b")
    assert split_broker_prefix("http://h:9/m?x=1") == (None, "http://h:9/m?x=1")
    with pytest.raises(ValueError):
        split_broker_prefix("3=")


# -- broker scans: the same audit when each broker's files are scanned where they are ---------------


def test_broker_scans_give_the_audit_of_the_log_dirs(brokers, tmp_path, capsys) -> None:
    truncate(brokers[1] / "__consumer_offsets-39", 600)
    bump_epoch(brokers[2] / "__consumer_offsets-13", 7, 223)
    seg = brokers[0] / "__consumer_offsets-13" / LOG
    data = bytearray(seg.read_bytes())
    data[-1] ^= 0xFF
    seg.write_bytes(bytes(data))
    shared = tmp_path / "scans"
    for root in brokers.values():
        assert main(["broker-scan", f"--log-dir={root}", f"--out={shared}", f"--now={NOW}"]) == 0
    assert sorted(p.name for p in shared.iterdir()) == ["broker-0.json", "broker-1.json", "broker-2.json"]
    args = ["audit", "--json", "--no-record", f"--now={NOW}"]
    assert main([*args, f"--broker-scans={shared}"]) == 0
    from_scans = json.loads(capsys.readouterr().out)
    assert main([*args] + [f"--log-dir={p}" for p in brokers.values()]) == 0
    from_files = json.loads(capsys.readouterr().out)
    assert from_scans["verdict"] == from_files["verdict"] == "CRITICAL"
    for key in ("partitions", "replicas", "summary", "reasons"):
        assert from_scans[key] == from_files[key], key
    kinds = {
        (d["partition"], d["broker_id"], d["kind"]) for r in from_scans["replicas"] for d in r["divergences"]
    }
    assert kinds == {(13, 0, DIFFERENT_BATCHES)}


def test_a_stale_or_malformed_scan_is_reported(brokers, tmp_path, capsys) -> None:
    from offsetops.coordinator_core.cleaner.collect import audit_broker_scans, read_broker_scans

    shared = tmp_path / "scans"
    for root in brokers.values():
        assert main(["broker-scan", f"--log-dir={root}", f"--out={shared}", f"--now={NOW}"]) == 0
    audit = audit_broker_scans(read_broker_scans(shared), now_ms=NOW + 3 * 3_600_000, record_history=False)
    stale = [r for r in audit.reasons if r.code == "stale_broker_scan"]
    assert len(stale) == 3 and "broker 0's scan" in stale[0].message and audit.verdict == "DEGRADED"
    with pytest.raises(LogDirError, match=r"partition\(s\) \[4\] of __consumer_offsets are in none"):
        audit_broker_scans(read_broker_scans(shared), partitions=[4, 13], now_ms=NOW, record_history=False)
    (shared / "broker-1.json").write_text('{"format": "offsetops-broker-scan/1", "broker_id": 1}')
    capsys.readouterr()
    assert main(["audit", "--json", "--no-record", f"--broker-scans={shared}"]) == 0  # the others are judged
    doc = json.loads(capsys.readouterr().out)
    (bad,) = [r for r in doc["reasons"] if r["code"] == "unusable_broker_scan"]
    assert f"{shared / 'broker-1.json'}: not a valid broker scan: log_dir must be a string" in bad["message"]
    assert {p["broker_id"] for p in doc["partitions"]} == {0, 2}
    for other in ("broker-0.json", "broker-2.json"):
        (shared / other).unlink()
    assert main(["audit", f"--broker-scans={shared}"]) == 2
    assert f"{shared / 'broker-1.json'}: not a valid broker scan" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["audit", f"--broker-scans={empty}"]) == 2
    assert "is the per-broker collector running?" in capsys.readouterr().err
