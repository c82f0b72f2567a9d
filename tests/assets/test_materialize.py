"""The full asset graph, materialized in-process on simulator data with local Spark."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, materialize

from tests.assets.conftest import NUM_PARTITIONS, Materialized
from tests.support.slack_server import SlackTestServer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ASSETS = (
    "raw_segments",
    "coordinator_cache",
    "expiration_plan",
    "tombstone_execution",
    "cleaner_audit",
    "cache_validation",
)


def _metadata(result: Any, asset: str) -> dict[str, Any]:
    """The metadata of ``asset``'s materialization of partition 0 in ``result``."""
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key == AssetKey(asset) and mat.partition == "0":
            return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    raise AssertionError(f"no materialization of {asset} partition 0")


def test_run_succeeds_and_materializes_every_partition(materialized: Materialized) -> None:
    result = materialized.result
    assert result.success, [e.message for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    by_asset: dict[str, set[str]] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        by_asset.setdefault(mat.asset_key.to_user_string(), set()).add(mat.partition)
    assert set(by_asset) == set(ASSETS)
    for asset, partitions in by_asset.items():
        assert partitions == {str(p) for p in range(NUM_PARTITIONS)}, asset


def test_reload_matches_the_simulator_truth(materialized: Materialized) -> None:
    meta = _metadata(materialized.result, "coordinator_cache")
    truth_groups = sum(len(p["groups"]) for p in materialized.truth["partitions"])
    truth_offsets = sum(len(g["offsets"]) for p in materialized.truth["partitions"] for g in p["groups"])
    assert meta["groups"] == truth_groups > 0
    assert meta["offsets"] == truth_offsets
    assert meta["errors"] == 0
    assert meta["records"] > 0 and meta["bytes"] > 0
    inventory = _metadata(materialized.result, "raw_segments")
    assert inventory["partitions_present"] == NUM_PARTITIONS
    assert inventory["bytes"] == meta["bytes"]


def test_reports_are_written_where_the_metadata_says(materialized: Materialized) -> None:
    out = materialized.output_dir
    validation = _metadata(materialized.result, "cache_validation")
    assert Path(validation["data_docs"]).is_file()
    assert Path(validation["data_docs"]) == out / "reports" / "data_docs" / "index.html"
    assert validation["success_error_level"] is True
    assert (
        validation["expectations_passed"] + validation["expectations_failed"]
        == validation["expectations"]
        > 0
    )
    audit = json.loads((out / "reports" / "cleaner_audit.json").read_text())
    assert audit["verdict"] == _metadata(materialized.result, "cleaner_audit")["verdict"]
    assert len(audit["partitions"]) == NUM_PARTITIONS
    plan = json.loads((out / "reports" / "expiration_plan.json").read_text())
    expiration = _metadata(materialized.result, "expiration_plan")
    assert plan["summary"]["forecast_offsets"] == expiration["forecast_offsets"]
    assert plan["summary"]["offset_tombstones"] == expiration["offset_tombstones"]
    tombstones = _metadata(materialized.result, "tombstone_execution")
    assert tombstones["mode"] == "dry_run" and tombstones["applied"] == 0
    assert (out / "tables" / "offsets").is_dir()


def test_checks_reflect_the_reports(materialized: Materialized) -> None:
    evaluations = {e.check_name: e for e in materialized.result.get_asset_check_evaluations()}
    assert set(evaluations) == {
        "gx_error_expectations",
        "gx_warning_expectations",
        "cleaner_verdict",
        "no_offsets_expiring_soon",
    }
    assert evaluations["gx_error_expectations"].passed
    verdict = _metadata(materialized.result, "cleaner_audit")["verdict"]
    assert evaluations["cleaner_verdict"].passed == (verdict == "HEALTHY")
    forecast_groups = _metadata(materialized.result, "expiration_plan")["forecast_groups"]
    assert evaluations["no_offsets_expiring_soon"].passed == (forecast_groups == 0)


def test_alert_sensor_pages_what_the_run_found(materialized: Materialized, tmp_path: Path) -> None:
    from dagster import build_sensor_context

    from assets.alerting.sensors import offsetops_alerts
    from assets.resources import SlackResource, StateResource

    audit = _metadata(materialized.result, "cleaner_audit")
    plan = _metadata(materialized.result, "expiration_plan")
    with SlackTestServer() as server:
        slack = SlackResource(token="xoxb-test-token", channel="#oncall", base_url=server.base_url)
        state = StateResource(output_dir=str(tmp_path))
        # The plans the run wrote, in a fresh state dir (its own alert memory, nothing fired yet).
        shutil.copytree(materialized.output_dir / "state" / "expiration", state.state_path / "expiration")
        context = build_sensor_context(
            instance=materialized.instance, resources={"slack": slack, "state": state}
        )
        first = offsetops_alerts(context)
        assert "alerts reconciled" in first.skip_message
        texts = [r.body["text"] for r in server.requests_to("chat.postMessage")]
        # One message per kind of change, worst first; nothing resolves on a first evaluation.
        assert not any(t.startswith("[RESOLVED]") for t in texts)
        critical = audit["critical_partitions"]
        if critical:
            assert texts[0].startswith(f"[CRITICAL] Log Cleaner CRITICAL on {len(critical)} partition")
        lost = any(t.startswith("[CRITICAL]") and "lost committed offsets" in t for t in texts)
        assert lost == bool(plan["offset_tombstones"] or plan["dead_groups"])
        expected = len(texts)
        # Nothing new materialized: the next tick does not even look.
        again = offsetops_alerts(
            build_sensor_context(
                instance=materialized.instance,
                cursor=context.cursor,
                resources={"slack": slack, "state": state},
            )
        )
        assert "no new" in again.skip_message
        assert len(server.requests_to("chat.postMessage")) == expected


def test_a_partition_absent_from_the_log_dir_is_an_empty_materialization(
    materialized: Materialized, tmp_path: Path
) -> None:
    from assets.reload import coordinator_cache, raw_segments
    from assets.resources import OffsetsSourceResource, StateResource

    partial = tmp_path / "logdir"
    partial.mkdir()
    (partial / "__consumer_offsets-3").symlink_to(materialized.log_dir / "__consumer_offsets-3")
    resources = {
        **materialized.resources,
        "offsets_source": OffsetsSourceResource(log_dir=str(partial)),
        "state": StateResource(output_dir=str(tmp_path / "out")),
    }
    result = materialize(
        [raw_segments, coordinator_cache],
        resources=resources,
        instance=DagsterInstance.ephemeral(),
        partition_key="7",
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )
    assert result.success
    inventory = _metadata_for(result, "raw_segments", "7")
    assert inventory["partitions_present"] == 0 and inventory["partitions_absent"] == [7]
    cache = _metadata_for(result, "coordinator_cache", "7")
    assert cache["groups"] == 0 and cache["offsets"] == 0 and cache["errors"] == 0


def _metadata_for(result: Any, asset: str, partition: str) -> dict[str, Any]:
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key == AssetKey(asset) and mat.partition == partition:
            return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    raise AssertionError(f"no materialization of {asset} partition {partition}")
