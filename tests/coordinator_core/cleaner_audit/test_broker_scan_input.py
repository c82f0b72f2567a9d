"""Broker scans are untrusted input: special files, hostile numbers, duplicate brokers, skewed clocks, paths
that must stay labels, wrong shapes and huge files. Each is a finding (or a clear exit 2), never a hang,
a HEALTHY verdict or an internal error; the other brokers are still judged."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from offsetops.coordinator_core.cleaner import collect
from offsetops.coordinator_core.cleaner.collect import (
    audit_broker_scans,
    read_broker_scans,
    scan_broker,
    write_broker_scan,
)
from offsetops.coordinator_core.simulator import SimulationConfig, simulate
from offsetops.coordinator_core.sources.logdir import LogDirError, open_log_dir

from tests.support.memory import PRINT_PEAK_KB

CLI_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def scan_doc(tmp_path_factory) -> dict[str, Any]:
    """A real scan of a small simulated log dir, as a collector writes it."""
    out = tmp_path_factory.mktemp("sim") / "logdir"
    simulate(SimulationConfig(out_dir=out, groups=8, partitions=3, days=0.05, seed=3))
    scan = scan_broker(open_log_dir(out), 1, now_ms=1_700_000_000_000)
    path = write_broker_scan(scan, tmp_path_factory.mktemp("scans"))
    return json.loads(path.read_text())


def put(root: Path, name: str, doc: Any, broker_id: int | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    doc = json.loads(json.dumps(doc))
    if broker_id is not None:
        doc["broker_id"] = broker_id
        for c in doc["copies"]:
            c["broker_id"] = broker_id
    path = root / name
    path.write_text(json.dumps(doc))  # json.dumps writes NaN/Infinity as a hostile writer would
    return path


def run_audit(scans: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``offsetops audit --broker-scans`` in a child process, so that a hang fails the test, not the suite."""
    code = (
        "import sys\nfrom offsetops.cli import main\nrc = main(sys.argv[1:])\n"
        + PRINT_PEAK_KB
        + "sys.exit(rc)\n"
    )
    argv = ["audit", f"--broker-scans={scans}", "--no-record", "--now=1700000000000", *extra]
    return subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=CLI_TIMEOUT_S
    )


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"non-standard JSON constant {name} in the output")

    return json.loads(text, parse_constant=refuse)


def codes(doc: dict[str, Any]) -> list[str]:
    return [r["code"] for r in doc["reasons"]]


def test_a_fifo_a_link_to_dev_zero_and_a_directory_are_findings_and_the_rest_is_judged(
    tmp_path: Path, scan_doc
) -> None:
    scans = tmp_path / "scans"
    put(scans, "broker-1.json", scan_doc)
    os.mkfifo(scans / "broker-0.json")
    (scans / "broker-2.json").symlink_to("/dev/zero")
    (scans / "broker-3.json").mkdir()
    done = run_audit(scans, "--json")
    assert done.returncode == 0, done.stderr
    doc = strict_json(done.stdout)
    assert "unusable_broker_scan" in codes(doc)
    (finding,) = [r for r in doc["reasons"] if r["code"] == "unusable_broker_scan"]
    assert "broker-0.json: broker scan is a FIFO, not a regular file" in finding["message"]
    assert "broker-2.json: broker scan is a symbolic link" in finding["message"]
    assert "broker-3.json: broker scan is a directory" in finding["message"]
    assert {p["broker_id"] for p in doc["partitions"]} == {1}


def test_non_finite_ratios_and_out_of_range_sizes_fail_their_partition(tmp_path: Path, scan_doc) -> None:
    doc = json.loads(json.dumps(scan_doc))
    doc["partitions"]["0"]["audit"]["dirty_ratio"] = math.nan
    doc["partitions"]["1"]["audit"]["unpinned_dirty_ratio"] = math.inf
    doc["partitions"]["2"]["audit"]["size_bytes"] = 2**80
    scans = tmp_path / "scans"
    put(scans, "broker-1.json", doc)
    other = json.loads(json.dumps(scan_doc))
    other["partitions"]["0"]["audit"]["cleanable_bytes"] = -1
    put(scans, "broker-2.json", other, broker_id=2)
    done = run_audit(scans, "--json")
    assert done.returncode == 0, done.stderr
    out = strict_json(done.stdout)
    (failed,) = [r for r in out["reasons"] if r["code"] == "partition_audit_failed"]
    assert "dirty_ratio must be a finite number, got nan" in failed["message"]
    assert "unpinned_dirty_ratio must be a finite number, got inf" in failed["message"]
    assert (
        "size_bytes must be in [0, 9223372036854775807], got 1208925819614629174706176" in failed["message"]
    )
    assert "cleanable_bytes must be in [0, 9223372036854775807], got -1" in failed["message"]
    judged = {(p["partition"], p["broker_id"]) for p in out["partitions"]}
    assert judged == {(1, 2), (2, 2)}  # the failed ones are not judged HEALTHY, the rest are judged
    assert out["verdict"] != "HEALTHY"


def test_one_scan_per_broker_id_and_the_duplicates_are_a_finding(tmp_path: Path, scan_doc) -> None:
    scans = tmp_path / "scans"
    for name in ("broker-0001.json", "broker-01.json", "broker-1.json"):
        put(scans, name, scan_doc)
    result = read_broker_scans(scans)
    assert [s.source for s in result] == [str(scans / "broker-1.json")]
    (dup,) = result.findings
    assert dup.code == "duplicate_broker_scan"
    assert (
        dup.message == "broker 1 has 3 scans: broker-1.json is used, broker-0001.json, broker-01.json ignored"
    )
    (scans / "broker-1.json").unlink()
    result = read_broker_scans(scans)  # no canonical name: the first by name, whatever the listing order
    assert [s.source for s in result] == [str(scans / "broker-0001.json")]


def test_a_scan_from_the_future_is_a_finding(tmp_path: Path, scan_doc) -> None:
    scans = tmp_path / "scans"
    put(scans, "broker-1.json", scan_doc)
    now = scan_doc["scanned_at_ms"]
    audit = audit_broker_scans(read_broker_scans(scans), now_ms=now - 3_600_000, record_history=False)
    (future,) = [r for r in audit.reasons if r.code == "future_broker_scan"]
    assert "is dated 1 h after this audit's clock" in future.message and audit.verdict == "DEGRADED"
    # ten years ahead: still a finding, and never a fresh scan
    audit = audit_broker_scans(
        read_broker_scans(scans), now_ms=now - 10 * 365 * 86_400_000, record_history=False
    )
    assert "future_broker_scan" in [r.code for r in audit.reasons]
    within = audit_broker_scans(read_broker_scans(scans), now_ms=now - 60_000, record_history=False)
    assert "future_broker_scan" not in [r.code for r in within.reasons]


def test_a_scans_paths_are_labels_never_opened(tmp_path: Path, scan_doc) -> None:
    trap = tmp_path / "trap"
    trap.mkdir()
    os.mkfifo(trap / "replication-offset-checkpoint")
    doc = json.loads(json.dumps(scan_doc))
    doc["log_dir"] = str(trap)
    for c in doc["copies"]:
        c["path"] = "../../etc"
    scans = tmp_path / "scans"
    put(scans, "broker-1.json", doc)
    done = run_audit(scans, "--json")  # a FIFO opened centrally would hang here
    assert done.returncode == 0, done.stderr
    out = strict_json(done.stdout)
    assert out["log_dirs"] == [{"broker_id": 1, "log_dir": str(trap)}]
    assert not any("replication-offset-checkpoint" in n for n in out["notes"])


@pytest.mark.parametrize(
    "text, field",
    [
        ("[]", "the document must be an object, got list"),
        ('{"format": "offsetops-broker-scan/1", "broker_id": "1"}', "broker_id must be an integer"),
        ('{"format": "offsetops-broker-scan/1", "broker_id": 1, "log_dir": 5}', "log_dir must be a string"),
        ("[" * 200_000 + "]" * 200_000, "not JSON"),
        ('{"format": "other/9"}', "format is 'other/9'"),
    ],
)
def test_a_scan_of_the_wrong_shape_is_a_data_error_not_an_internal_one(
    tmp_path: Path, scan_doc, text: str, field: str
) -> None:
    scans = tmp_path / "scans"
    scans.mkdir()
    (scans / "broker-1.json").write_text(text)
    done = run_audit(scans)
    assert done.returncode == 2, done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if not ln.startswith("PEAK_RSS_KB")]
    assert line.startswith("offsetops: error: ") and "broker-1.json" in line and field in line
    with pytest.raises(LogDirError, match="no usable broker scan"):
        read_broker_scans(scans)


def test_wrong_shapes_inside_a_scan_fail_only_their_entry(tmp_path: Path, scan_doc) -> None:
    doc = json.loads(json.dumps(scan_doc))
    doc["partitions"]["0"] = {"audit": {"partition": 0}}
    doc["partitions"]["1"]["audit"]["open_transactions"] = [{"producer_id": "x"}]
    doc["copies"][0]["digests"] = [[1, 2]]
    scans = tmp_path / "scans"
    put(scans, "broker-1.json", doc)
    (scan,) = read_broker_scans(scans)
    assert isinstance(scan.partitions[0], collect.PartitionFailure)
    assert "partitions.0.audit.size_bytes is missing" in scan.partitions[0].error
    assert "open_transactions[0].producer_id must be an integer" in scan.partitions[1].error
    assert not isinstance(scan.partitions[2], collect.PartitionFailure)
    assert any("copies[0] left out" in n and "digests[0] must be" in n for n in scan.notes)


def test_a_100_mb_scan_is_refused_by_its_size_without_reading_it(tmp_path: Path, scan_doc) -> None:
    from offsetops.coordinator_core.untrusted import MAX_BYTES

    scans = tmp_path / "scans"
    put(scans, "broker-1.json", scan_doc)
    big = scans / "broker-2.json"
    with open(big, "wb") as fh:
        fh.write(b'{"format": "offsetops-broker-scan/1", "notes": ["')
        fh.truncate(100 * 1024 * 1024)  # sparse: 100 MB for the reader, nothing on disk
    done = run_audit(scans, "--json")
    assert done.returncode == 0, done.stderr
    out = strict_json(done.stdout)
    (finding,) = [r for r in out["reasons"] if r["code"] == "unusable_broker_scan"]
    assert (
        f"broker-2.json: broker scan is 104857600 bytes, above the limit of {MAX_BYTES['broker scan']}"
        in (finding["message"])
    )
    peak_kb = int(done.stderr.split("PEAK_RSS_KB")[1].split()[0])
    assert peak_kb < 400 * 1024  # the file is never read: nothing near the 617 MB a full parse cost


def test_the_collector_keeps_its_scan_under_the_readers_limit(tmp_path: Path, scan_doc, monkeypatch) -> None:
    from offsetops.coordinator_core.untrusted import MAX_BYTES

    scans = tmp_path / "scans"
    put(scans, "broker-1.json", scan_doc)
    (scan,) = read_broker_scans(scans)
    full = (scans / "broker-1.json").stat().st_size
    monkeypatch.setitem(MAX_BYTES, "broker scan", full // 3)
    path = write_broker_scan(scan, tmp_path / "out")
    assert path.stat().st_size <= full // 3
    (again,) = read_broker_scans(tmp_path / "out")
    assert any("batch digests cut to" in n for n in again.notes)
    assert any(c.digests_until is not None for c in again.copies)


def test_broker_scans_are_group_readable(tmp_path: Path, scan_doc) -> None:
    scans = tmp_path / "scans"
    put(scans, "broker-1.json", scan_doc)
    (scan,) = read_broker_scans(scans)
    path = write_broker_scan(scan, tmp_path / "out")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
