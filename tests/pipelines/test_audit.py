"""The audit job judges the cleaner by its audit history (``--state-dir``) as ``offsetops audit`` does."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.cleaner.history import AuditHistory

from offsetops.cli import main as offsetops_main

DAY_MS = 86_400_000

pytestmark = pytest.mark.spark


def _stalled_history(log_dir: Path, history_dir: Path, now_ms: int) -> int:
    """An audit two days before ``now_ms`` of a partition the cleaner should clean; returns the partition."""
    earlier = now_ms - 2 * DAY_MS
    probe = audit_log_dir(log_dir, now_ms=earlier, record_history=False)
    eligible = sorted(p.partition for p in probe.partitions if p.eligible)
    assert eligible, "the simulated log dir has no partition the cleaner should clean"
    audit_log_dir(log_dir, now_ms=earlier, partitions=[eligible[-1]], state_dir=history_dir)
    return eligible[-1]


def _job(log_dir: Path, out: Path, now_ms: int, *extra: str) -> tuple[dict[int, dict], dict]:
    argv = ["pipeline", "audit", "--input", str(log_dir), "--output", str(out), "--now-ms", str(now_ms)]
    assert offsetops_main([*argv, *extra]) == 0
    rows = {r["offsets_partition"]: r for r in pq.read_table(out / "cleaner_audit").to_pylist()}
    (topic,) = pq.read_table(out / "cleaner_audit_topic").to_pylist()
    return rows, topic


def _codes(row: dict) -> set[str]:
    return {r["code"] for r in row["reasons"]}


def test_a_stalled_cleaner_is_critical_with_history_and_not_without(spark, sim_txn, tmp_path) -> None:
    now = sim_txn.simulated_until_ms + 8 * DAY_MS
    history = tmp_path / "history"
    stalled = _stalled_history(sim_txn.out_dir, history, now)

    blind, _topic = _job(sim_txn.out_dir, tmp_path / "blind", now)
    assert "no_progress" not in _codes(blind[stalled])
    assert blind[stalled]["verdict"] == "DEGRADED"  # dirty and eligible: slow or stalled, it cannot tell

    rows, topic = _job(sim_txn.out_dir, tmp_path / "judged", now, "--state-dir", str(history), "--no-record")
    assert rows[stalled]["verdict"] == "CRITICAL"
    assert "no_progress" in _codes(rows[stalled])
    assert topic["verdict"] == "CRITICAL"
    # The same document and verdicts as `offsetops audit --state-dir` (judged on one machine).
    local = audit_log_dir(sim_txn.out_dir, now_ms=now, state_dir=history, record_history=False)
    assert {p.partition: p.verdict for p in local.partitions} == {p: r["verdict"] for p, r in rows.items()}
    for p in local.partitions:
        assert json.loads(rows[p.partition]["audit_json"]) == json.loads(json.dumps(p.to_json()))
    assert set(rows) == set(blind)
    # --no-record left the history as it was; without it the job appends this audit.
    assert len(AuditHistory.load(history).entries) == 1
    _job(sim_txn.out_dir, tmp_path / "recorded", now, "--state-dir", str(history))
    assert len(AuditHistory.load(history).entries) == 2


def test_a_state_dir_that_is_a_file_is_named_before_the_scan(spark, sim_txn, tmp_path, capsys) -> None:
    not_a_dir = tmp_path / "audits"
    not_a_dir.write_text("", encoding="utf-8")
    argv = ["pipeline", "audit", "--input", str(sim_txn.out_dir), "--output", str(tmp_path / "out")]
    assert offsetops_main([*argv, "--state-dir", str(not_a_dir)]) == 2
    assert f"--state-dir {not_a_dir}: not a directory" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
