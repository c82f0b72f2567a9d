"""The cleaner scan in the reload's pass (``pipelines/reload_scan.py``): the audits it writes equal the
audit's own scan of the same files, and a scan made with other inputs is not trusted."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from offsetops.coordinator_core.cleaner.audit import scan_log_dir
from offsetops.coordinator_core.cleaner.collect import partition_audit_state
from offsetops.coordinator_core.cleaner.config import CleanerConfig
from offsetops.coordinator_core.simulator import SimulationResult
from offsetops.coordinator_core.sources.logdir import open_log_dir
from offsetops.pipelines.reload import reload_tables, run_reload
from offsetops.pipelines.reload_scan import (
    SCAN_BLOB_TABLE,
    CleanerScanRequest,
    ScanMerger,
    plan_scan,
    read_reload_scan,
    scan_identity,
)
from offsetops.pipelines.source import list_log_dir, read_checkpoints
from pyspark.sql import functions as F

from tests.support.shared import require_real_kafka

DAY_MS = 86_400_000


def _identity(spark, log_dir: str, run_id: str, config: CleanerConfig, now_ms: int) -> dict:
    listing = list_log_dir(spark, log_dir)
    checkpoints, _notes = read_checkpoints(spark, listing)
    return scan_identity(run_id, listing, checkpoints, config, now_ms)


def _own_scan(log_dir: str, config: CleanerConfig, now_ms: int) -> dict[int, dict]:
    found = scan_log_dir(open_log_dir(log_dir), config=config, now_ms=now_ms)
    return {p: partition_audit_state(pa) for p, pa in found.items() if pa is not None}  # type: ignore[arg-type]


def _reload_with_scan(spark, log_dir: str, tmp_path: Path, now_ms: int, run_id: str = "run-1") -> tuple:
    config = CleanerConfig()
    path = tmp_path / "reload-scan.json"
    request = CleanerScanRequest(run_id, config, now_ms, path)
    run_reload(spark, log_dir, str(tmp_path / "tables"), scan=request)
    return path, config


def test_the_reload_writes_the_audits_the_audit_would_compute(
    spark, sim_txn: SimulationResult, tmp_path: Path
) -> None:
    log_dir = str(sim_txn.out_dir)
    now = sim_txn.simulated_until_ms + DAY_MS
    path, config = _reload_with_scan(spark, log_dir, tmp_path, now)
    got, why = read_reload_scan(path, _identity(spark, log_dir, "run-1", config, now))
    assert got is not None, why
    assert why == "from the reload of run run-1"
    mine = {p: partition_audit_state(pa) for p, pa in got.items()}  # type: ignore[arg-type]
    own = _own_scan(log_dir, config, now)
    assert mine == own
    # the simulated transactions span segments: some stay open, some were aborted
    assert any(d["open_transactions"] for d in own.values()) or any(
        d["aborted_records"] for d in own.values()
    )
    assert sum(d["segments"] for d in own.values()) > len(own)


def test_a_scan_of_another_run_or_clock_is_not_trusted(
    spark, sim_txn: SimulationResult, tmp_path: Path
) -> None:
    log_dir = str(sim_txn.out_dir)
    now = sim_txn.simulated_until_ms
    path, config = _reload_with_scan(spark, log_dir, tmp_path, now, run_id="run-a")
    got, why = read_reload_scan(path, _identity(spark, log_dir, "run-b", config, now))
    assert got is None and "another run_id" in why
    got, why = read_reload_scan(path, _identity(spark, log_dir, "run-a", config, now + 1))
    assert got is None and "another now_ms" in why
    other = config.with_values({"log.cleaner.delete.retention.ms": "1"}, source="user")
    got, why = read_reload_scan(path, _identity(spark, log_dir, "run-a", other, now))
    assert got is None and "another config" in why
    got, why = read_reload_scan(tmp_path / "absent.json", _identity(spark, log_dir, "run-a", config, now))
    assert got is None and why.startswith("no reload scan at")


def test_a_tampered_scan_file_is_a_failure_of_that_partition_not_trusted_numbers(
    spark, sim_txn: SimulationResult, tmp_path: Path
) -> None:
    log_dir = str(sim_txn.out_dir)
    now = sim_txn.simulated_until_ms
    path, config = _reload_with_scan(spark, log_dir, tmp_path, now)
    doc = json.loads(path.read_text())
    first = sorted(doc["partitions"])[0]
    doc["partitions"][first]["audit"]["reclaimable_bytes"] = -5
    path.write_text(json.dumps(doc))
    got, _why = read_reload_scan(path, _identity(spark, log_dir, "run-1", config, now))
    assert got is not None
    failure = got[int(first)]
    assert "reclaimable_bytes" in failure.error  # type: ignore[union-attr]
    path.write_text("[1, 2")
    got, why = read_reload_scan(path, _identity(spark, log_dir, "run-1", config, now))
    assert got is None and "unusable" in why


def test_remote_segment_bytes_scan_as_the_local_mapping_does(
    spark, sim_txn: SimulationResult, tmp_path: Path
) -> None:
    # a remote listing ships each segment's bytes with its row instead of mapping the file
    log_dir = str(sim_txn.out_dir)
    now = sim_txn.simulated_until_ms
    config = CleanerConfig()
    local = list_log_dir(spark, log_dir)
    uris = tuple(dataclasses.replace(s, path=f"file:{s.path}") for s in local.segments)
    listing = dataclasses.replace(local, segments=uris, local=False)
    checkpoints, _notes = read_checkpoints(spark, listing)
    plan = plan_scan(listing, checkpoints, CleanerScanRequest("r", config, now, tmp_path / "x.json"))
    _tables, blobs = reload_tables(spark, listing, plan=plan)
    rows = blobs.where(F.col("table") == SCAN_BLOB_TABLE).collect()
    got = {str(r["offsets_partition"]): json.loads(bytes(r["ipc"]))["audit"] for r in rows}
    assert got == json.loads(json.dumps(_own_scan(log_dir, config, now)))
    assert isinstance(ScanMerger(plan).finish(0), type(None))  # nothing merged: no entry


def test_real_log_dirs_give_the_same_audits_through_the_reload(spark, tmp_path: Path) -> None:
    root = require_real_kafka()
    now = 1_770_000_000_000
    for name in ("DonaldY__kafka-2.7.1", "William0423__kafka"):
        log_dir = str(root / name)
        path, config = _reload_with_scan(spark, log_dir, tmp_path / name, now)
        got, why = read_reload_scan(path, _identity(spark, log_dir, "run-1", config, now))
        assert got is not None, why
        mine = {p: partition_audit_state(pa) for p, pa in got.items()}  # type: ignore[arg-type]
        assert mine == _own_scan(log_dir, config, now), name


@pytest.mark.parametrize("mode", ["rows"])
def test_the_scan_runs_in_the_arrow_mode_only(
    spark, sim_txn: SimulationResult, tmp_path: Path, mode: str
) -> None:
    request = CleanerScanRequest("r", CleanerConfig(), 0, tmp_path / "x.json")
    with pytest.raises(ValueError, match="arrow mode"):
        run_reload(spark, str(sim_txn.out_dir), str(tmp_path / "t"), mode=mode, scan=request)
