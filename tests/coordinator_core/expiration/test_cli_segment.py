"""``offsetops expire`` end to end on files: the JSON contract, the segment executor, the journal."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.tombstones.journal import FAULT_ENV, Journal

from offsetops.cli import main
from tests.coordinator_core.expiration.scenario import DAY, ScenarioLog, group_key
from tests.coordinator_core.expiration.test_rules import (
    EXPECTED_LEGACY_ONLY,
    EXPECTED_OFFSETS,
    NOW,
    RET,
    P,
    build_scenario,
)
from tests.support.shared import real_kafka_logdirs

REPO = Path(__file__).resolve().parents[3]
TOMBSTONE_FIELDS = {
    "offsets_partition",
    "kind",
    "group_id",
    "topic",
    "partition",
    "key_hex",
    "reason",
    "base_timestamp",
    "age_ms",
}


def _run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["expire", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _new_segment_records(pdir: Path, base_offset: int) -> list[tuple[int, bytes | None, bytes | None, int]]:
    errors: list[DecodeError] = []
    out = []
    for batch in iter_segment_batches(pdir / f"{base_offset:020d}.log", errors=errors):
        for off, ts, key, value in batch.iter_records():
            out.append((off, key, value, batch.magic))
            assert ts == NOW or batch.magic == 0
    assert errors == []
    return out


def test_json_contract_on_a_log_dir_and_a_partition_dir(tmp_path: Path, capsys) -> None:
    logdir = build_scenario(tmp_path)
    code, doc = _run_json(
        capsys, str(logdir), "--now", str(NOW), "--retention-ms", str(RET), "--coordinator", "legacy"
    )
    assert code == 0
    assert {"tombstones", "dead_groups", "forecast"} <= set(doc)
    assert all(set(t) == TOMBSTONE_FIELDS for t in doc["tombstones"])
    got = {
        (t["group_id"], t["topic"], t["partition"]): (t["reason"], t["base_timestamp"], t["age_ms"])
        for t in doc["tombstones"]
        if t["kind"] == "offset_commit"
    }
    assert got == {**EXPECTED_OFFSETS, **EXPECTED_LEGACY_ONLY}
    groups = [t for t in doc["tombstones"] if t["kind"] == "group_metadata"]
    assert [(t["group_id"], t["topic"], t["partition"]) for t in groups] == [
        ("empty-state", None, None),
        ("no-offsets", None, None),
    ]
    assert groups[0]["key_hex"] == group_key("empty-state").hex()
    assert doc["dry_run"] is True
    # The same partition dir given directly gives the same plan.
    code, doc2 = _run_json(
        capsys,
        str(logdir / f"__consumer_offsets-{P}"),
        "--now",
        str(NOW),
        "--retention-ms",
        str(RET),
        "--coordinator",
        "legacy",
    )
    assert doc2["tombstones"] == doc["tombstones"]


def test_broker_version_picks_the_coordinator_and_what_if(tmp_path: Path, capsys) -> None:
    logdir = build_scenario(tmp_path)
    _, old = _run_json(capsys, str(logdir), "--now", str(NOW), "--broker-version", "3.9")
    _, new = _run_json(
        capsys,
        str(logdir),
        "--now",
        str(NOW),
        "--broker-version",
        "4.1",
        "--what-if-retention-ms",
        str(2 * DAY),
    )
    assert old["coordinator"] == "legacy" and new["coordinator"] == "kip848"
    assert old["retention_ms"] == RET  # the 7-day default
    assert len(new["dead_groups"]) == len(old["dead_groups"])
    assert sum(d["group_tombstones"] for d in new["dead_groups"]) > sum(
        d["group_tombstones"] for d in old["dead_groups"]
    )
    assert new["what_if"]["retention_ms"] == 2 * DAY
    assert len(new["what_if"]["tombstones"]) > len(new["tombstones"])


def test_real_fixtures_plan_without_errors(capsys) -> None:
    dirs = real_kafka_logdirs()
    if not dirs:
        pytest.skip("real Kafka fixtures not found")
    total = 0
    for d in dirs:
        code, doc = _run_json(capsys, str(d), "--now", "4102444800000", "--coordinator", "legacy")
        assert code == 0
        for t in doc["tombstones"]:
            assert set(t) == TOMBSTONE_FIELDS
            assert (t["topic"] is None) == (t["kind"] == "group_metadata")
            assert (
                t["age_ms"] is None
                or t["age_ms"] >= RET
                or t["reason"] == "explicit_expire_timestamp"
                or t["kind"] == "group_metadata"
            )
        total += len(doc["tombstones"])
    assert total > 0  # by the year 2100 some real fixture has expired offsets


def _segment_argv(logdir: Path, out: Path, journal: Path, coordinator: str = "legacy") -> list[str]:
    return [
        "expire",
        str(logdir),
        "--now",
        str(NOW),
        "--retention-ms",
        str(RET),
        "--coordinator",
        coordinator,
        "--execute",
        "--executor",
        "segment",
        "--output-dir",
        str(out),
        "--journal-dir",
        str(journal),
        "--json",
    ]


@pytest.mark.parametrize("magic", [2, 1])
def test_segment_executor_round_trip(tmp_path: Path, capsys, magic: int) -> None:
    src = tmp_path / "src"
    if magic == 2:
        build_scenario(src)
    else:  # legacy message format: no transactions there
        log = ScenarioLog(P)
        log.group("old-empty", generation=2, state_ts=-1, version=1, ts=NOW - 20 * DAY)
        log.commit("old-empty", "t", 0, 5, NOW - 9 * DAY)
        log.commit("kept", "t", 0, 5, NOW - 1 * DAY)
        log.write(src, magic=1)
    before = _tree_digest(src)
    original = load_log_dir(src, semantics="scala")[0]
    out, journal = tmp_path / "copy", tmp_path / "journal"
    code = main(_segment_argv(src, out, journal))
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc["execution"]
    ex = doc["execution"]
    assert ex["complete"] and ex["verification"]["not_gone"] == []
    assert ex["verification"]["checked"] == len(doc["tombstones"])
    assert _tree_digest(src) == before  # the source is never written

    # The new segment is named by the log end offset and uses the partition's magic and timestamp now.
    leo = original.stats.last_offset + 1
    records = _new_segment_records(out / f"__consumer_offsets-{P}", leo)
    assert [r[0] for r in records] == list(range(leo, leo + len(doc["tombstones"])))
    assert {r[3] for r in records} == {magic}
    assert all(r[2] is None for r in records)
    assert [r[1].hex() for r in records] == [t["key_hex"] for t in doc["tombstones"]]

    # Reloading the copy gives the original cache minus what expired, minus the dead groups.
    reloaded = load_log_dir(out, semantics="scala")[0]
    assert reloaded.stats.errors == []
    expected = {gid: dict(g.offsets) for gid, g in original.groups.items()}
    for t in doc["tombstones"]:
        if t["kind"] == "offset_commit":
            del expected[t["group_id"]][(t["topic"], t["partition"])]
    dead = {d["group_id"] for d in doc["dead_groups"]}
    # Legacy: a generation-0 group gets no tombstone, so its GroupMetadata record comes back on reload
    # (with no offsets), as it would on a Scala broker; offsets-only groups just vanish.
    expected = {
        g: o
        for g, o in expected.items()
        if g not in dead
        or (
            original.groups[g].metadata_record_offset is not None
            and not any(d["group_id"] == g and d["group_tombstones"] for d in doc["dead_groups"])
        )
    }
    assert {gid: dict(g.offsets) for gid, g in reloaded.groups.items()} == expected
    for gid in set(original.groups) - dead:
        assert reloaded.groups[gid].state == original.groups[gid].state
        assert reloaded.groups[gid].pending_offsets.keys() == original.groups[gid].pending_offsets.keys()
    # A second pass at the same time over the copy finds nothing left to expire.
    code, again = _run_json(
        capsys, str(out), "--now", str(NOW), "--retention-ms", str(RET), "--coordinator", "legacy"
    )
    assert again["tombstones"] == []


def test_rerun_is_idempotent_and_new_plans_on_an_unfinished_target_are_refused(
    tmp_path: Path, capsys
) -> None:
    src = build_scenario(tmp_path / "src")
    out, journal = tmp_path / "copy", tmp_path / "journal"
    assert main(_segment_argv(src, out, journal)) == 0
    first = json.loads(capsys.readouterr().out)["execution"]
    seg = out / f"__consumer_offsets-{P}"
    sizes = {p.name: p.stat().st_size for p in seg.iterdir()}
    assert main(_segment_argv(src, out, journal)) == 0
    second = json.loads(capsys.readouterr().out)["execution"]
    assert second["plan_id"] == first["plan_id"] and second["resumed"]
    assert second["skipped_already_applied"] == len(second["items"])
    assert {p.name: p.stat().st_size for p in seg.iterdir()} == sizes
    # Another output dir that exists but belongs to no plan is refused, and nothing is written to it.
    other = tmp_path / "not-ours"
    other.mkdir()
    assert main(_segment_argv(src, other, tmp_path / "j2")) == 2
    assert list(other.iterdir()) == []


def _subprocess(argv: list[str], fault: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    if fault:
        env[FAULT_ENV] = fault
    return subprocess.run(
        [sys.executable, "-m", "offsetops.cli", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("fault", ["send:3", "send:6", "journal:2", "journal:5"])
def test_interrupted_segment_run_resumes_without_applying_twice(tmp_path: Path, fault: str) -> None:
    src = build_scenario(tmp_path / "src")
    out, journal_dir = tmp_path / "copy", tmp_path / "journal"
    argv = _segment_argv(src, out, journal_dir)
    killed = _subprocess(argv, fault)
    assert killed.returncode == -9, killed.stderr
    (journal,) = [Journal.open(journal_dir, p.name[5:-5]) for p in journal_dir.glob("plan-*.json")]
    n_items = len(journal.items)
    original = load_log_dir(src, semantics="scala")[0]
    leo = original.stats.last_offset + 1
    written = len(_new_segment_records(out / f"__consumer_offsets-{P}", leo))
    assert 0 < written < n_items  # it really stopped midway
    if fault.startswith("send"):
        assert len(journal.applied_ids()) < written  # written, but the journal never heard of it
    else:
        assert len(journal.applied_ids()) == int(fault.split(":")[1])
    done = _subprocess(argv, None)
    assert done.returncode == 0, done.stderr
    ex = json.loads(done.stdout)["execution"]
    assert ex["resumed"] and ex["complete"] and ex["verification"]["not_gone"] == []
    records = _new_segment_records(out / f"__consumer_offsets-{P}", leo)
    keys = [r[1].hex() for r in records]
    assert sorted(keys) == sorted(i["key_hex"] for i in journal.items)  # each exactly once, none lost
    # Every item was journaled as applied exactly once.
    for item in journal.items:
        assert journal.history(item["item_id"]).count("applied") == 1
