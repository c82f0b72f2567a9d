"""Shared, expensive fixtures of the Dagster tests: one simulated cluster, one full materialization.

A full in-process materialization (local Spark + Great Expectations) costs about a minute, so the
whole asset graph is materialized once per session and several tests read what it recorded.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

NUM_PARTITIONS = 50  # the code location's default; the tests do not set OFFSETOPS_NUM_PARTITIONS


def java_available() -> bool:
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


@pytest.fixture(scope="session")
def simulated_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small but realistic log dir written by the simulator (all 50 partitions, with truth.json)."""
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    out = tmp_path_factory.mktemp("sim") / "logdir"
    simulate(
        SimulationConfig(
            out_dir=out, groups=20, partitions=NUM_PARTITIONS, days=0.1, seed=3, segment_bytes=512 * 1024
        )
    )
    return out


@dataclass
class Materialized:
    """What the session's full materialization left behind."""

    result: Any
    instance: Any
    log_dir: Path
    output_dir: Path
    truth: dict[str, Any]
    resources: dict[str, Any]
    dagster_home: Path
    stalled_partition: int


DAYS_MS = 86_400_000


def record_stalled_cleaner(log_dir: Path, history_dir: Path, as_of_ms: int) -> int:
    """Record an audit two days before ``as_of_ms`` for one partition the cleaner should clean now.

    The first dirty offset has not moved since, so the next audit finds the cleaner stalled for two days:
    CRITICAL ``no_progress``, what an operator sees when a cleaner thread died. Returns the partition.
    """
    from offsetops.coordinator_core.cleaner.audit import audit_log_dir

    earlier = as_of_ms - 2 * DAYS_MS
    probe = audit_log_dir(log_dir, now_ms=earlier, record_history=False)
    eligible = sorted(p.partition for p in probe.partitions if p.eligible)
    assert eligible, "the simulated log dir has no partition the cleaner should clean"
    partition = eligible[-1]
    audit_log_dir(log_dir, now_ms=earlier, partitions=[partition], state_dir=history_dir)
    return partition


def materialize_all(
    log_dir: Path, output_dir: Path, instance: Any, *, run_config: dict[str, Any], app_name: str
) -> tuple[Any, dict[str, Any], int]:
    """Every asset and check over all 50 partitions in one in-process run on local Spark, after recording
    a cleaner stalled for two days (:func:`record_stalled_cleaner`). The log dir declares its clock (the
    simulator wrote it): no ``as_of_ms`` is configured. Returns the result, the resources and the stalled
    partition."""
    from dagster import materialize
    from offsetops.assets.definitions import all_assets_and_checks
    from offsetops.assets.partitions import all_partitions_tags
    from offsetops.assets.resources import OffsetsSourceResource, SlackResource, SparkResource, StateResource

    truth = json.loads((log_dir / "truth.json").read_text(encoding="utf-8"))
    state = StateResource(output_dir=str(output_dir))
    stalled = record_stalled_cleaner(log_dir, state.audit_history_dir, truth["simulated_until_ms"])
    resources = {
        "offsets_source": OffsetsSourceResource(log_dir=str(log_dir), num_partitions=NUM_PARTITIONS),
        "spark": SparkResource(master="local[2]", app_name=app_name),
        "state": state,
        "slack": SlackResource(token=None),
    }
    result = materialize(
        all_assets_and_checks(),
        resources=resources,
        instance=instance,
        tags=all_partitions_tags(NUM_PARTITIONS),
        run_config=run_config,
        raise_on_error=False,
    )
    return result, resources, stalled


@pytest.fixture(scope="session")
def materialized(simulated_log_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Materialized]:
    """Every asset and check over all 50 partitions, in one in-process run on local Spark.

    The instance is a persistent one in its own DAGSTER_HOME, so the UI tests can serve what it recorded.
    """
    if not java_available():
        pytest.skip("Java is needed for a local SparkSession")
    from dagster import DagsterInstance

    truth = json.loads((simulated_log_dir / "truth.json").read_text(encoding="utf-8"))
    output_dir = tmp_path_factory.mktemp("out")
    home = tmp_path_factory.mktemp("dagster_home")
    # No onboarding dialog over the screenshots, no telemetry from a test.
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\nnux:\n  enabled: false\n")
    with DagsterInstance.from_config(str(home)) as instance:
        result, resources, stalled = materialize_all(
            simulated_log_dir, output_dir, instance, run_config=RUN_CONFIG, app_name="offsetops-assets-tests"
        )
        yield Materialized(result, instance, simulated_log_dir, output_dir, truth, resources, home, stalled)


RUN_CONFIG = {
    "loggers": {"console": {"config": {"log_level": "WARNING"}}},
    "ops": {"expiration_plan": {"config": {"retention_minutes": 60}}},
}


def materialize_assets(
    log_dir: Path, out: Path, assets: list[Any], resume_dir: Path | None
) -> dict[str, dict[int, Any]]:
    """``assets`` over every partition of ``log_dir`` into ``out`` (resumed from ``resume_dir`` when
    given); each asset's per-partition metadata, by asset name."""
    from dagster import DagsterInstance, materialize
    from offsetops.assets.partitions import all_partitions_tags
    from offsetops.assets.resources import OffsetsSourceResource, SparkResource, StateResource
    from offsetops.checks.dagster_checks import plain_metadata

    result = materialize(
        assets,
        resources={
            "offsets_source": OffsetsSourceResource(
                log_dir=str(log_dir), resume_state_dir=None if resume_dir is None else str(resume_dir)
            ),
            "spark": SparkResource(master="local[1]"),
            "state": StateResource(output_dir=str(out)),
        },
        instance=DagsterInstance.ephemeral(),
        tags=all_partitions_tags(NUM_PARTITIONS),
    )
    assert result.success
    out_meta: dict[str, dict[int, Any]] = {}
    for e in result.get_asset_materialization_events():
        m = e.event_specific_data.materialization
        out_meta.setdefault(m.asset_key.path[-1], {})[int(m.partition)] = plain_metadata(m.metadata)
    return out_meta
