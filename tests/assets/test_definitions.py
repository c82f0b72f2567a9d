"""The whole code location loads: assets, lineage, partitions, checks, jobs, schedules, sensors, config."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import AssetKey, Definitions, build_schedule_context
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
from offsetops.assets.definitions import MAIN_JOB, defs
from offsetops.assets.resources import (
    DeploymentConfigError,
    OffsetsSourceResource,
    SlackResource,
    SparkResource,
    build_resources,
    num_partitions_from_env,
)
from pydantic import ValidationError

REPO = Path(__file__).resolve().parents[2]

LINEAGE = {
    "raw_segments": set(),
    "coordinator_cache": {"raw_segments"},
    "expiration_plan": {"coordinator_cache"},
    "tombstone_execution": {"expiration_plan"},
    "cleaner_audit": {"raw_segments", "coordinator_cache"},
    "cache_validation": {"coordinator_cache"},
}
SUMMARY = "offsets_topic_summary"  # unpartitioned: the topic-wide figures
METRICS = "offsets_metrics"  # unpartitioned: the exporter's numbers, after the summary
FOLLOWED = "offsets_followed"  # observed by the offsets_follow sensor, never materialized


@pytest.fixture(scope="module")
def repo():
    Definitions.validate_loadable(defs)
    return defs.get_repository_def()


def test_assets_lineage_and_partitions(repo) -> None:
    graph = repo.asset_graph
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == set(LINEAGE) | {
        SUMMARY,
        METRICS,
        FOLLOWED,
    }
    assert not graph.get(AssetKey(FOLLOWED)).is_executable
    # the metrics read the published tables and the audit report themselves, after the summary
    parents = {p.to_user_string() for p in graph.get(AssetKey(METRICS)).parent_keys}
    assert parents == {SUMMARY, "coordinator_cache", "cleaner_audit"}
    summary = graph.get(AssetKey(SUMMARY))
    assert summary.partitions_def is None
    parents = {p.to_user_string() for p in summary.parent_keys}
    assert parents == {"cleaner_audit", "expiration_plan", "cache_validation"}
    for name, parents in LINEAGE.items():
        node = graph.get(AssetKey(name))
        assert {p.to_user_string() for p in node.parent_keys} == parents, name
        keys = node.partitions_def.get_partition_keys()
        assert keys == [str(p) for p in range(50)], name
    groups = {graph.get(AssetKey(n)).group_name for n in LINEAGE}
    assert groups == {"reload", "expiration", "cleaner_audit", "validation"}


def test_asset_checks(repo) -> None:
    checks = {(k.asset_key.to_user_string(), k.name) for k in repo.asset_graph.asset_check_keys}
    assert checks == {
        ("cache_validation", "gx_error_expectations"),
        ("cache_validation", "gx_warning_expectations"),
        ("cleaner_audit", "cleaner_verdict"),
        ("cleaner_audit", "partition_verdict"),
        ("expiration_plan", "no_offsets_expiring_soon"),
        # the topic's own checks, on the unpartitioned summary (checks/topic_checks.py)
        (SUMMARY, "topic_cleaner_verdict"),
        (SUMMARY, "topic_offsets_expiration"),
    }
    # One result per offsets partition: the check shares its asset's partitions.
    for key in repo.asset_graph.asset_check_keys:
        spec = repo.asset_graph.get_check_spec(key)
        partitioned = key.name in ("partition_verdict", "no_offsets_expiring_soon")
        assert (spec.partitions_def is not None) == partitioned, key


def test_resources_are_bound(repo) -> None:
    assert {"offsets_source", "spark", "state", "slack"} <= set(repo.get_top_level_resources())


def test_schedules_cover_all_partitions_and_never_execute_tombstones(repo) -> None:
    schedules = {s.name: s for s in repo.schedule_defs}
    assert {n: s.cron_schedule for n, s in schedules.items()} == {
        "hourly_cleaner_audit": "15 * * * *",
        "daily_expiration_forecast": "30 5 * * *",
        "daily_reload_and_validation": "0 5 * * *",
    }
    expected_assets = {
        "hourly_cleaner_audit": {"cleaner_audit", SUMMARY, METRICS},
        "daily_expiration_forecast": {"expiration_plan", SUMMARY},
        "daily_reload_and_validation": {"raw_segments", "coordinator_cache", "cache_validation"},
    }
    for name, schedule in schedules.items():
        job = repo.get_job(schedule.job_name)
        selected = {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
        assert selected == expected_assets[name]
        assert "tombstone_execution" not in selected
        when = datetime(2026, 3, 1, 5, 15, tzinfo=UTC)
        with build_schedule_context(repository_def=repo, scheduled_execution_time=when) as context:
            requests = list(schedule.evaluate_tick(context).run_requests or [])
        assert len(requests) == 1
        assert requests[0].tags[ASSET_PARTITION_RANGE_START_TAG] == "0"
        assert requests[0].tags[ASSET_PARTITION_RANGE_END_TAG] == "49"
        assert "20260301" in requests[0].run_key  # one run per tick, even if the tick is retried


def test_jobs_and_sensors(repo) -> None:
    jobs = {j.name for j in repo.get_all_jobs()}
    assert {
        MAIN_JOB,
        "cleaner_audit_job",
        "expiration_forecast_job",
        "reload_and_validation_job",
        "tombstone_execution_job",
    } <= jobs
    main = repo.get_job(MAIN_JOB)
    assert {k.to_user_string() for k in main.asset_layer.executable_asset_keys} == set(LINEAGE) | {
        SUMMARY,
        METRICS,
    }
    sensors = {s.name: s for s in repo.sensor_defs}
    assert set(sensors) == {"slack_on_run_failure", "offsetops_alerts", "offsets_follow"}
    status = {name: s.default_status.value for name, s in sensors.items()}
    # following reads the whole topic at its first evaluation: an operator turns it on
    assert status == {
        "slack_on_run_failure": "RUNNING",
        "offsetops_alerts": "RUNNING",
        "offsets_follow": "STOPPED",
    }


def test_bad_config_fails_fast_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="log_dir"):
        OffsetsSourceResource()
    with pytest.raises(ValidationError, match="num_partitions"):
        OffsetsSourceResource(log_dir="/x", num_partitions=0)
    with pytest.raises(ValidationError, match="bootstrap_servers"):
        OffsetsSourceResource(bootstrap_servers="broker-without-port")
    with pytest.raises(ValidationError, match="master"):
        SparkResource(master="bogus://x")
    with pytest.raises(ValidationError, match="conf"):
        SparkResource(conf={"executor.memory": "4g"})
    with pytest.raises(ValidationError, match="base_url"):
        SlackResource(base_url="ftp://slack")
    with pytest.raises(DeploymentConfigError, match="OFFSETOPS_SPARK_MASTER"):
        build_resources("cluster", env={"OFFSETOPS_LOG_DIR": "/data"})
    with pytest.raises(DeploymentConfigError, match="OFFSETOPS_DEPLOYMENT"):
        build_resources(env={"OFFSETOPS_DEPLOYMENT": "staging"})
    with pytest.raises(DeploymentConfigError, match=r"SparkResource\.master \(env OFFSETOPS_SPARK_MASTER\)"):
        build_resources(env={"OFFSETOPS_SPARK_MASTER": "nonsense"})
    with pytest.raises(DeploymentConfigError, match="OFFSETOPS_NUM_PARTITIONS"):
        num_partitions_from_env({"OFFSETOPS_NUM_PARTITIONS": "0"})


def test_tombstone_admin_mode_needs_confirmation() -> None:
    from offsetops.assets.expiration import TombstoneExecutionConfig

    with pytest.raises(ValidationError, match="confirm"):
        TombstoneExecutionConfig(mode="admin")
    assert TombstoneExecutionConfig(mode="admin", confirm=True).mode == "admin"
    assert TombstoneExecutionConfig().mode == "dry_run"


def test_tombstone_execution_names_the_resource_field_it_lacks(tmp_path) -> None:
    from dagster import Failure
    from offsetops.assets.expiration import TombstoneExecutionConfig, _executor
    from offsetops.assets.resources import OffsetsSourceResource, StateResource

    state = StateResource(output_dir=str(tmp_path / "state"))
    live = OffsetsSourceResource(bootstrap_servers="127.0.0.1:1")
    with pytest.raises(Failure, match=r"OffsetsSourceResource\.log_dir is not set"):
        _executor(TombstoneExecutionConfig(mode="segment"), live, state, "kip848")
    files = OffsetsSourceResource(log_dir=str(tmp_path / "logdir"))
    with pytest.raises(Failure, match="bootstrap_servers or client_config"):
        _executor(TombstoneExecutionConfig(mode="admin", confirm=True), files, state, "kip848")
    segment = _executor(TombstoneExecutionConfig(mode="segment"), files, state, "kip848")
    assert segment.target()["output_dir"] == str((state.state_path / "tombstoned-logdir").resolve())


def test_deployments_pick_resources_in_one_place() -> None:
    local = build_resources(env={})
    assert local["spark"].master == "local[*]"
    assert local["offsets_source"].log_dir == "out/demo/logdir"
    assert local["slack"].token is None
    cluster = build_resources(
        env={
            "OFFSETOPS_DEPLOYMENT": "cluster",
            "OFFSETOPS_SPARK_MASTER": "k8s://https://kubernetes.default.svc",
            "OFFSETOPS_SPARK_CONF": "spark.executor.instances=8,spark.executor.memory=8g",
            "OFFSETOPS_BOOTSTRAP_SERVERS": "b1:9092,b2:9092",
            "OFFSETOPS_OUTPUT_DIR": "/data/offsetops",
            "SLACK_BOT_TOKEN": "xoxb-secret",
        }
    )
    assert cluster["spark"].conf == {"spark.executor.instances": "8", "spark.executor.memory": "8g"}
    assert cluster["offsets_source"].is_live
    assert cluster["slack"].token != "xoxb-secret"  # an EnvVar, resolved at run time, never shown


def test_dagster_cli_loads_the_workspace(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "DAGSTER_HOME": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_deploy_instance_config_is_valid_for_this_dagster(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml
    from dagster._config import process_config
    from dagster._core.instance.config import dagster_instance_config_schema

    for var in ("DAGSTER_PG_HOST", "DAGSTER_PG_DB", "DAGSTER_PG_USERNAME", "DAGSTER_PG_PASSWORD"):
        monkeypatch.setenv(var, "x")
    monkeypatch.setenv("DAGSTER_PG_PORT", "5432")
    config = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())
    result = process_config(dagster_instance_config_schema(), config)
    assert result.success, [e.message for e in result.errors or []]
    assert "postgres" in config["storage"]
    values = yaml.safe_load((REPO / "deploy" / "helm" / "values.yaml").read_text())
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == [
        "--module-name",
        "offsetops.assets.definitions",
        "--attribute",
        "defs",
    ]
    assert values["dagsterDaemon"]["enabled"] is True
