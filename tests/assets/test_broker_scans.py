"""The cleaner_audit asset judging every broker from the scans their collectors wrote to shared storage
(the deployment's layout: no broker volume is mounted into run pods)."""

from __future__ import annotations

import json
from pathlib import Path

from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult, materialize
from offsetops.checks.dagster_checks import plain_metadata

from offsetops.cli import main
from tests.coordinator_core.sources.test_replicas import NOW, bump_epoch, truncate
from tests.coordinator_core.sources.test_replicas import brokers as brokers


def test_cleaner_audit_reads_every_brokers_scan(brokers, tmp_path: Path) -> None:
    # broker 2 led epoch 4 from offset 900 and holds less than brokers 0 and 1, which are ahead of it
    end = truncate(brokers[2] / "__consumer_offsets-39", 600)
    bump_epoch(brokers[2] / "__consumer_offsets-39", 4, 900)
    shared = tmp_path / "scans"
    for root in brokers.values():  # what each broker's CronJob or sidecar does
        assert main(["broker-scan", f"--log-dir={root}", f"--out={shared}", f"--now={NOW}"]) == 0
    out = tmp_path / "out"
    result = _audit_partition_39(shared, out)
    assert result.success
    (mat,) = [
        e.event_specific_data.materialization
        for e in result.get_asset_materialization_events()
        if e.event_specific_data.materialization.asset_key == AssetKey("cleaner_audit")
    ]
    meta = plain_metadata(mat.metadata)
    assert meta["read_from_broker"] == 2 and meta["replica_choice"].startswith("broker 2: leader epoch 4 > 0")
    assert meta["copies_on_brokers"] == "0, 1, 2"
    # brokers 0 and 1 reach past the chosen copy: the partition's facts are its worst copy's
    assert meta["verdict"] == "DEGRADED" and "replica_divergence" in meta["worst_finding"]
    assert f"[{end}, 1241)" in meta["worst_finding"] and meta["divergent_copies"] == 2
    report = json.loads((out / "reports" / "cleaner_audit.json").read_text())
    rows = {(p["partition"], p["broker_id"]) for p in report["partitions"]}
    assert rows == {(39, 0), (39, 1), (39, 2)}


def test_a_fifo_on_the_scans_volume_is_a_finding_not_a_hung_run(brokers, tmp_path: Path) -> None:
    """A FIFO named like a scan (and a link to /dev/zero) sit beside the real scans: the hourly run
    completes, reports them, and judges the brokers whose scans are usable."""
    import os
    import threading

    shared = tmp_path / "scans"
    for root in brokers.values():
        assert main(["broker-scan", f"--log-dir={root}", f"--out={shared}", f"--now={NOW}"]) == 0
    os.mkfifo(shared / "broker-7.json")
    (shared / "broker-8.json").symlink_to("/dev/zero")
    out = tmp_path / "out"
    done: dict[str, object] = {}

    def run() -> None:
        try:
            done["result"] = _audit_partition_39(shared, out)
        except BaseException as exc:  # handed to the test below
            done["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(120)
    if worker.is_alive():
        os.close(os.open(shared / "broker-7.json", os.O_WRONLY | os.O_NONBLOCK))  # release the reader
        raise AssertionError("the cleaner_audit run hung on a FIFO in the scans directory")
    if "error" in done:
        raise done["error"]  # type: ignore[misc]
    assert done["result"].success  # type: ignore[attr-defined]
    report = json.loads((out / "reports" / "cleaner_audit.json").read_text())
    (finding,) = [r for r in report["reasons"] if r["code"] == "unusable_broker_scan"]
    assert "broker-7.json: broker scan is a FIFO" in finding["message"]
    assert "broker-8.json: broker scan is a symbolic link" in finding["message"]
    assert {p["broker_id"] for p in report["partitions"]} == {0, 1, 2}


def _audit_partition_39(shared: Path, out: Path) -> ExecuteInProcessResult:
    """The cleaner_audit asset's run for partition 39, judging the scans in ``shared`` into ``out``."""
    from offsetops.assets.cleaner_audit import cleaner_audit
    from offsetops.assets.resources import OffsetsSourceResource, SparkResource, StateResource

    return materialize(
        [cleaner_audit],
        resources={
            # the reload's source in the deployment; the audit itself never connects
            "offsets_source": OffsetsSourceResource(
                broker_scans_dir=str(shared), bootstrap_servers="127.0.0.1:9", as_of_ms=NOW
            ),
            # never started: the scans were made beside the brokers
            "spark": SparkResource(master="local[1]"),
            "state": StateResource(output_dir=str(out)),
        },
        instance=DagsterInstance.ephemeral(),
        partition_key="39",
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )
