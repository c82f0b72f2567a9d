"""Scenario log dirs through the ``offsetops audit`` CLI: verdicts, reasons and the JSON contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.records.builder import build_record_batch

from offsetops.cli import main
from tests.coordinator_core.cleaner_audit.scenarios import (
    DAY_MS,
    HOUR_MS,
    T0,
    VALUE,
    checkpoints,
    commits,
    dirty_partition,
    hanging_txn_partition,
    healthy_partition,
    key,
    partition_dir,
    write_segment,
)

DATA = Path(__file__).parent / "data"
PARTITION_KEYS = {
    "partition", "clean_bytes", "cleanable_bytes", "dirty_ratio", "first_dirty_offset",
    "first_uncleanable_offset", "uncleanable_reasons", "open_transactions", "reclaimable_ratio",
    "expired_tombstones", "verdict", "reasons",
}  # fmt: skip


def audit_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["audit", *args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"verdict", "partitions"}
    for p in doc["partitions"]:
        assert set(p) >= PARTITION_KEYS
        for t in p["open_transactions"]:
            assert set(t) >= {"producer_id", "first_offset", "age_ms"}
        for r in p["reasons"]:
            assert r["message"] and r["remedy"] and r["severity"] in ("DEGRADED", "CRITICAL")
    return doc


def codes(entry: dict[str, Any]) -> list[str]:
    return [r["code"] for r in entry["reasons"]]


def test_healthy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    healthy_partition(tmp_path, 0)
    checkpoints(tmp_path, {0: 3})
    doc = audit_json(capsys, str(tmp_path), "--now", str(T0))
    assert doc["verdict"] == "HEALTHY" and doc["reasons"] == []
    (p,) = doc["partitions"]
    assert p["verdict"] == "HEALTHY" and p["reasons"] == []
    assert (p["first_dirty_offset"], p["first_uncleanable_offset"], p["dirty_ratio"]) == (3, 3, 0.0)
    assert (
        p["cleanable_bytes"] == 0
        and p["clean_bytes"]
        == (tmp_path / "__consumer_offsets-0" / "00000000000000000000.log").stat().st_size
    )
    assert p["uncleanable_reasons"] == ["active_segment"]
    # keys g0 and g1 appear again in the active segment: 2 of 5 records are superseded
    assert p["reclaimable_records"] == 2 and p["data_records"] == 5


def test_dead_cleaner_no_progress_and_growth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir, state = tmp_path / "logs", tmp_path / "state"
    pdir = dirty_partition(logdir, 0)
    checkpoints(logdir, {0: 2})
    first = audit_json(capsys, str(logdir), "--state-dir", str(state), "--now", str(T0))
    p = first["partitions"][0]
    assert p["dirty_ratio"] > 0.5 and p["verdict"] == "DEGRADED" and codes(p) == ["cleaning_due"]
    assert p["checkpoint_advanced"] is None

    # 26 h later: the active segment rolled and a new one started, the checkpoint did not move
    later = T0 + 26 * HOUR_MS
    write_segment(pdir, 22, [commits(22, ["g0", "g1", "g2", "g3"] * 10, later - HOUR_MS)], later - HOUR_MS)
    second = audit_json(capsys, str(logdir), "--state-dir", str(state), "--now", str(later))
    p = second["partitions"][0]
    assert second["verdict"] == "CRITICAL" and p["verdict"] == "CRITICAL"
    assert codes(p)[0] == "no_progress"
    msg = p["reasons"][0]["message"]
    assert "cleaner made no progress for 26 h while dirty ratio" in msg and "> 0.5" in msg
    assert p["checkpoint_advanced"] is False and p["stalled_for_ms"] == 26 * HOUR_MS
    assert p["growth_bytes_per_hour"] > 0
    lines = (state / "audits.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["verdict"] == "CRITICAL"


def test_cleaner_that_advanced_is_not_dead(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir, state = tmp_path / "logs", tmp_path / "state"
    dirty_partition(logdir, 0)
    checkpoints(logdir, {0: 2})
    audit_json(capsys, str(logdir), "--state-dir", str(state), "--now", str(T0))
    checkpoints(logdir, {0: 14})  # the cleaner got through segments 2 and 8
    doc = audit_json(capsys, str(logdir), "--state-dir", str(state), "--now", str(T0 + 30 * HOUR_MS))
    p = doc["partitions"][0]
    assert p["checkpoint_advanced"] is True and p["stalled_for_ms"] == 0
    assert "no_progress" not in codes(p)


def test_hanging_transaction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    opened = T0 - (3 * DAY_MS + 4 * HOUR_MS)
    hanging_txn_partition(tmp_path, 5, opened_at=opened)
    checkpoints(tmp_path, {5: 4})
    doc = audit_json(capsys, str(tmp_path), "--now", str(T0))
    (p,) = doc["partitions"]
    assert doc["verdict"] == "CRITICAL" and p["verdict"] == "CRITICAL"
    assert p["open_transactions"] == [
        {"producer_id": 1002, "producer_epoch": 7, "first_offset": 12, "age_ms": 3 * DAY_MS + 4 * HOUR_MS}
    ]
    assert p["last_stable_offset"] == 12 and p["first_uncleanable_offset"] == 12
    assert p["uncleanable_reasons"] == ["open_transaction"]
    assert p["dirty_ratio"] == 0.0 and p["unpinned_dirty_ratio"] > 0.5
    reason = p["reasons"][0]
    assert reason["code"] == "hanging_transaction"
    assert "hanging transaction from producer 1002" in reason["message"]
    assert "since 3 d 4 h pins LSO at offset 12" in reason["message"]
    assert "kafka-transactions.sh" in reason["remedy"] and "--start-offset 12" in reason["remedy"]
    # producer 2000 committed and 3000 aborted: neither is open; the aborted record is reclaimable
    assert p["aborted_records"] == 1


def test_young_open_transaction_is_listed_but_not_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hanging_txn_partition(tmp_path, 5, opened_at=T0 - 10 * 60_000)
    checkpoints(tmp_path, {5: 4})
    (p,) = audit_json(capsys, str(tmp_path), "--now", str(T0))["partitions"]
    assert p["open_transactions"][0]["age_ms"] == 10 * 60_000
    assert "hanging_transaction" not in codes(p)


def test_uncleanable_from_broker_log_and_metrics_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_partition(tmp_path, 7)
    healthy_partition(tmp_path, 3)
    checkpoints(tmp_path, {7: 3, 3: 3})
    doc = audit_json(capsys, str(tmp_path), "--now", str(T0), "--broker-log", str(DATA / "log-cleaner.log"))
    by_part = {p["partition"]: p for p in doc["partitions"]}
    assert by_part[7]["verdict"] == "CRITICAL" and codes(by_part[7]) == ["marked_uncleanable"]
    assert "CorruptRecordException" in by_part[7]["reasons"][0]["message"]
    assert by_part[3]["verdict"] == "HEALTHY"
    assert doc["verdict"] == "CRITICAL"
    assert [r["code"] for r in doc["reasons"]] == ["cleaner_thread_died"]
    assert "offset map can fit only 1248" in doc["reasons"][0]["message"]
    assert doc["broker_log"]["uncleanable_partitions"] == [7] and doc["broker_log"]["dead_threads"] == [0]


def test_misconfigured_policy_and_disabled_cleaner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirty_partition(tmp_path, 0)
    checkpoints(tmp_path, {0: 2})
    doc = audit_json(
        capsys, str(tmp_path), "--now", str(T0),
        "--config", "cleanup.policy=delete", "--config", "log.cleaner.enable=false",
    )  # fmt: skip
    assert doc["verdict"] == "CRITICAL"
    assert [r["code"] for r in doc["reasons"]] == ["cleanup_policy", "cleaner_disabled"]
    assert (
        "'delete'" in doc["reasons"][0]["message"] and "cleanup.policy=compact" in doc["reasons"][0]["remedy"]
    )
    assert doc["config"]["cleanup_policy"] == {"value": "delete", "source": "user"}
    # a log that is not compacted is never eligible (grabFilthiestCompactedLog filters on compact)
    assert doc["partitions"][0]["eligible"] is False


def test_dedupe_buffer_too_small_for_the_dirty_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirty_partition(tmp_path, 0)
    checkpoints(tmp_path, {0: 2})
    # 96 B / 1 thread / 24 = 4 slots * 0.9 = 3 keys; the dirty range holds g0, g1 and g2 -> tight
    doc = audit_json(capsys, str(tmp_path), "--now", str(T0), "--config", "log.cleaner.dedupe.buffer.size=96")
    p = doc["partitions"][0]
    assert (p["dirty_keys"], p["dedupe_capacity"]) == (3, 3)
    assert "dedupe_buffer_tight" in codes(p)
    doc = audit_json(capsys, str(tmp_path), "--now", str(T0), "--config", "log.cleaner.dedupe.buffer.size=72")
    p = doc["partitions"][0]
    assert p["dedupe_capacity"] == 2 and "dedupe_buffer_too_small" in codes(p)
    assert (
        "needs 2 passes" in next(r for r in p["reasons"] if r["code"] == "dedupe_buffer_too_small")["message"]
    )


def test_tombstones_use_the_kip534_delete_horizon_where_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pdir = partition_dir(tmp_path, 0)
    old = T0 - 10 * DAY_MS
    seg0 = [
        # horizon passed: expired although the record is recent
        build_record_batch([(key("h1"), None, T0 - 1000)], base_offset=0, delete_horizon_ms=T0 - 1),
        # horizon in the future: not expired although the record is 10 days old
        build_record_batch([(key("h2"), None, old)], base_offset=1, delete_horizon_ms=T0 + HOUR_MS),
        # no horizon in the clean section: cleaned by a pre-3.1 broker, whose rule is time-based
        build_record_batch([(key("h3"), None, old)], base_offset=2),
        build_record_batch([(key("h4"), None, T0 - HOUR_MS)], base_offset=3),
        build_record_batch([(key("h5"), VALUE, old)], base_offset=4),
    ]
    write_segment(pdir, 0, seg0, old)
    write_segment(pdir, 5, [commits(5, ["x"], T0 - 1000)], T0 - 1000)
    checkpoints(tmp_path, {0: 5})
    (p,) = audit_json(capsys, str(tmp_path), "--now", str(T0))["partitions"]
    assert (p["tombstones"], p["expired_tombstones"], p["expired_tombstones_cleanable"]) == (4, 2, 2)
    # Nothing is dirty, so no pass is due: Kafka keeps them until one comes. Counted, not a finding.
    assert not p["eligible"] and p["verdict"] == "HEALTHY" and codes(p) == []
    # The same log with segment 0 still dirty: a pass is due and has not removed them.
    checkpoints(tmp_path, {0: 0})
    (p,) = audit_json(capsys, str(tmp_path), "--now", str(T0), "--no-record")["partitions"]
    # KIP-534: a dirty tombstone without a horizon is kept by the next pass, which stamps one (h3, h4).
    assert p["eligible"] and p["expired_tombstones_cleanable"] == 1
    assert p["tombstones_without_horizon_cleanable"] == 2
    assert p["verdict"] == "DEGRADED" and "expired_tombstones" in codes(p)


def test_reclaimable_counts_superseded_and_aborted_records_by_scanning(tmp_path: Path) -> None:
    pdir = partition_dir(tmp_path, 0)
    batches = [build_record_batch([(key(g), VALUE, T0)], base_offset=i) for i, g in enumerate("abac")]
    write_segment(pdir, 0, batches, T0)
    checkpoints(tmp_path, {})
    (p,) = audit_log_dir(tmp_path, now_ms=T0).partitions
    # 'a' at offset 0 is superseded by offset 2: one record, exactly the bytes of batch 0
    assert (p.records, p.reclaimable_records, p.reclaimable_bytes) == (4, 1, len(batches[0]))
    assert p.reclaimable_ratio == pytest.approx(len(batches[0]) / sum(map(len, batches)))


def test_table_output_names_the_verdict_and_remedy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hanging_txn_partition(tmp_path, 5, opened_at=T0 - 2 * DAY_MS)
    checkpoints(tmp_path, {5: 4})
    assert main(["audit", str(tmp_path), "--now", str(T0)]) == 0
    out = capsys.readouterr().out
    assert "verdict: CRITICAL" in out and "open_transaction" in out and "remedy: abort it" in out
    assert main(["audit", str(tmp_path), "--now", str(T0), "--exit-code"]) == 2
    capsys.readouterr()


def test_usage_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err
    healthy_partition(tmp_path, 0)
    assert main(["audit", str(tmp_path), "--config", "min.cleanable.ratio=0.1"]) == 2
    assert "unknown config 'min.cleanable.ratio'" in capsys.readouterr().err
    assert main(["audit", str(tmp_path), "--config", "min.cleanable.dirty.ratio"]) == 2
    assert "--config expects KEY=VALUE, got 'min.cleanable.dirty.ratio'" in capsys.readouterr().err
    assert main(["audit", str(tmp_path), "--threshold", "hanging_transaction_ms=abc"]) == 2
    assert "hanging_transaction_ms" in capsys.readouterr().err
