"""The `offsetops` command line: reload/dump/decode/partition-for, their JSON contract and exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from offsetops.coordinator_core.records import build_record_batch
from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value

from offsetops.cli import main

T0 = 1_700_000_000_000


def _write_partition(root: Path, partition: int, batches: list[bytes]) -> Path:
    pdir = root / f"__consumer_offsets-{partition}"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"".join(batches))
    return pdir


def _commit(offset: int, group: str = "testgroup", topic: str = "orders", part: int = 3, base: int = 0):
    key = encode_key(OffsetCommitKey(group=group, topic=topic, partition=part))
    value = encode_value(OffsetCommitValue(version=3, offset=offset, leader_epoch=5, commit_timestamp=T0))
    return build_record_batch([(key, value, T0)], base_offset=base)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_reload_json_contract(tmp_path, capsys):
    _write_partition(tmp_path, 27, [_commit(41), _commit(42, base=1)])
    code, out, _ = run(capsys, "reload", str(tmp_path), "--json")
    assert code == 0
    doc = json.loads(out)
    [part] = doc["partitions"]
    assert part["partition"] == 27
    [group] = part["groups"]
    assert set(group) >= {
        "group_id",
        "state",
        "protocol_type",
        "generation",
        "protocol",
        "leader",
        "current_state_timestamp",
        "members",
        "offsets",
        "pending_offsets",
    }
    assert group["group_id"] == "testgroup" and group["protocol_type"] is None
    assert group["offsets"] == [
        {
            "topic": "orders",
            "partition": 3,
            "offset": 42,
            "leader_epoch": 5,
            "metadata": "",
            "commit_timestamp": T0,
            "expire_timestamp": None,
        }
    ]
    stats = part["stats"]
    assert (stats["batches"], stats["records"], stats["tombstones"], stats["unknown_record_types"]) == (
        2,
        2,
        0,
        0,
    )
    assert stats["errors"] == []


def test_corrupt_segment_is_reported_and_strict_fails(tmp_path, capsys):
    good, bad = _commit(1), bytearray(_commit(2, base=1))
    bad[-1] ^= 0xFF  # corrupts the record body, so the CRC no longer matches
    tail = _commit(3, group="testgroup", part=4, base=2)
    pdir = _write_partition(tmp_path, 27, [good, bytes(bad), tail])
    code, out, err = run(capsys, "reload", str(pdir), "--json")
    assert code == 0
    stats = json.loads(out)["partitions"][0]["stats"]
    [error] = stats["errors"]
    assert error["kind"] == "crc_mismatch" and error["offset"] == 1
    assert error["position"] == len(good) and error["file"].endswith("00000000000000000000.log")
    assert "crc_mismatch" in err
    # The batch after the bad one is still loaded.
    offsets = json.loads(out)["partitions"][0]["groups"][0]["offsets"]
    assert {(o["partition"], o["offset"]) for o in offsets} == {(3, 1), (4, 3)}
    code, _, _ = run(capsys, "reload", str(pdir), "--strict")
    assert code == 1


def test_reload_missing_path_is_a_clear_error(tmp_path, capsys):
    code, _, err = run(capsys, "reload", str(tmp_path / "nope"))
    assert code == 2 and "nope" in err and "no such file" in err


def test_dump_prints_kafka_style_lines(tmp_path, capsys):
    pdir = _write_partition(tmp_path, 27, [_commit(42)])
    code, out, _ = run(capsys, "dump", str(pdir))
    assert code == 0
    assert "baseOffset: 0 lastOffset: 0 count: 1" in out
    assert (
        'key: {"type":"1","data":{"group":"testgroup","topic":"orders","partition":3}} '
        'payload: {"version":"3","data":{"offset":42,"leaderEpoch":5,"metadata":"",'
        '"commitTimestamp":1700000000000}}'
    ) in out
    code, out, _ = run(capsys, "dump", str(pdir), "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["type"] for line in lines] == ["settings", "batch", "record"]
    assert lines[0]["settings"]["max_batch_bytes"]["source"] == "offsetops default"
    assert lines[2]["payload"]["data"]["offset"] == 42


def test_decode_hand_built_vectors(capsys):
    code, out, _ = run(
        capsys,
        "decode",
        "--key",
        "0001 0009 7465737467726f7570 0006 6f7264657273 00000003",
        "--value",
        "0003 000000000000002a 00000005 0000 0000018bcfe56800",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["key"] == {"type": "1", "data": {"group": "testgroup", "topic": "orders", "partition": 3}}
    assert doc["value"]["data"]["offset"] == 42 and doc["value"]["data"]["leaderEpoch"] == 5
    code, out, err = run(capsys, "decode", "--key", "zz")
    assert code == 2 and "not valid hex" in err


@pytest.mark.parametrize(
    ("group", "expected"), [("testgroup", 27), ("polygenelubricants", 0), ("console-consumer-1", 24)]
)
def test_partition_for(capsys, group, expected):
    code, out, _ = run(capsys, "partition-for", group)
    assert code == 0 and out.strip() == str(expected)


def test_dump_and_reload_every_real_fixture_without_errors(real_kafka_dir, tmp_path, capsys):
    for logdir in sorted(p for p in real_kafka_dir.iterdir() if p.is_dir()):
        code, out, err = run(capsys, "dump", str(logdir), "--strict")
        assert code == 0, err
        assert "Error" not in out
        copy = tmp_path / logdir.name
        shutil.copytree(logdir, copy)
        code, out, err = run(capsys, "reload", str(copy), "--json", "--strict")
        assert code == 0, err
        assert all(p["stats"]["errors"] == [] for p in json.loads(out)["partitions"])


def test_dump_shows_errors_where_they_happen(tmp_path, capsys):
    good, bad = _commit(1), bytearray(_commit(2, base=1))
    bad[-1] ^= 0xFF
    pdir = _write_partition(tmp_path, 27, [good, bytes(bad), _commit(3, base=2)])
    code, out, err = run(capsys, "dump", str(pdir), "--strict")
    assert code == 1 and "crc_mismatch" in err
    lines = out.splitlines()
    [at] = [i for i, line in enumerate(lines) if line.startswith("Error:")]
    assert "offset 1" in lines[at] and "crc_mismatch" in lines[at]
    assert "| offset: 0 " in lines[at - 1] and lines[at + 1].startswith("baseOffset: 2 ")
    code, out, _ = run(capsys, "dump", str(pdir), "--json")
    kinds = [json.loads(line)["type"] for line in out.splitlines()]
    assert kinds == ["settings", "batch", "record", "error", "batch", "record"]
