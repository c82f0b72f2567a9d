"""The cleaner_audit asset judging every broker from the scans their collectors wrote to shared storage
(the deployment's layout: no broker volume is mounted into run pods)."""

from __future__ import annotations

import json
from pathlib import Path

from dagster import AssetKey, DagsterInstance, materialize
from offsetops.checks.dagster_checks import plain_metadata

from offsetops.cli import main
from tests.coordinator_core.sources.test_replicas import NOW, bump_epoch, truncate
from tests.coordinator_core.sources.test_replicas import brokers as brokers


def test_cleaner_audit_reads_every_brokers_scan(brokers, tmp_path: Path) -> None:
    from offsetops.assets.cleaner_audit import cleaner_audit
    from offsetops.assets.resources import OffsetsSourceResource, SparkResource, StateResource

    # broker 2 led epoch 4 from offset 900 and holds less than brokers 0 and 1, which are ahead of it
    end = truncate(brokers[2] / "__consumer_offsets-39", 600)
    bump_epoch(brokers[2] / "__consumer_offsets-39", 4, 900)
    shared = tmp_path / "scans"
    for root in brokers.values():  # what each broker's CronJob or sidecar does
        assert main(["broker-scan", f"--log-dir={root}", f"--out={shared}", f"--now={NOW}"]) == 0
    out = tmp_path / "out"
    result = materialize(
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
