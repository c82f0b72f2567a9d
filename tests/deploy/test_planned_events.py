"""What an operator sees of a failed run with and without ``DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS``.

Dagster (1.13) can plan a single-run backfill with one planned event per asset instead of one per asset
and partition, warning that partitions are then "not marked as failed if the run fails". Here the main
job runs for real (``offsetops demo``, local Spark, four partitions): once on a sound log dir, then, from
copies of that instance, a second time with tombstone execution on a log dir with a corrupt segment, so
the run fails mid-way (the reload, plan, audit and validation succeed; ``tombstone_execution`` refuses to
act on a plan built on a reload with decode errors), once without the variable and once with it. The
partitions' health is read as the UI reads it (GraphQL ``assetPartitionStatuses``, the code location
loaded from ``workspace.yaml``) and from the instance. SQLite instances: the failed partitions are
derived by Dagster's SQL event log storage, the same code for Postgres.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import REPO, simulated_run_input

pytestmark = [pytest.mark.slow, pytest.mark.spark]

PARTITIONS = 4
PLANNED_SUBSET = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"
FAILING_ASSET = "tombstone_execution"
CLI = "import sys; from offsetops.cli import main; sys.exit(main(sys.argv[1:]))"
DEMO_TIMEOUT_S = 900

PARTITION_HEALTH = """query($a: [String!]!) { assetNodeOrError(assetKey: {path: $a}) { ... on AssetNode {
  assetPartitionStatuses { ... on DefaultPartitionStatuses {
    materializedPartitions failedPartitions unmaterializedPartitions materializingPartitions } } } } }"""


@dataclass(frozen=True)
class Seen:
    """What the operator sees after the failed run: partition health per partitioned asset, and the run's
    own planned events for its ``assets`` (partitioned or not)."""

    health: dict[str, dict[str, list[str]]]
    materialized: dict[str, set[str]]
    run_status: str
    planned_events: int
    assets: int
    #: the assets the failed run materialized before it failed, and the steps that failed
    materialized_by_run: set[str]
    failed_steps: list[str]


def demo(out: Path, log_dir: Path, *extra: str, env: dict[str, str] | None = None) -> int:
    """``offsetops demo`` in a process of its own (its output in ``out``.log); its exit code."""
    argv = [sys.executable, "-c", CLI, "demo", "--out", str(out), "--log-dir", str(log_dir)]
    argv += ["--partitions", str(PARTITIONS), "--spark-master", "local[1]", *extra]
    with out.with_suffix(".log").open("ab") as log:
        return subprocess.run(
            argv, env=env or dict(os.environ), cwd=REPO, stdout=log, stderr=log, timeout=DEMO_TIMEOUT_S
        ).returncode


def break_a_segment(log_dir: Path) -> None:
    """Partition 2's first segment becomes a directory: the reload counts a decode error for it."""
    segment = sorted((log_dir / "__consumer_offsets-2").glob("*.log"))[0]
    segment.unlink()
    segment.mkdir()


@pytest.fixture(scope="module")
def failed_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Seen]:
    """The same failed run on two copies of one instance: without the variable ("off") and with it ("on")."""
    sim = simulated_run_input(tmp_path_factory, "planned-events", PARTITIONS)
    root = sim.out_dir.parent
    broken = root / "broken"
    shutil.copytree(sim.out_dir, broken)
    break_a_segment(broken)
    base = root / "base"
    assert demo(base, sim.out_dir) == 0, base.with_suffix(".log").read_text(errors="replace")[-3000:]
    seen = {}
    for name, extra_env in (("off", {}), ("on", {PLANNED_SUBSET: "true"})):
        out = root / name
        shutil.copytree(base, out)
        env = {k: v for k, v in os.environ.items() if k != PLANNED_SUBSET}
        rc = demo(out, broken, "--execute-tombstones", env={**env, **extra_env})
        assert rc == 1, out.with_suffix(".log").read_text(errors="replace")[-3000:]
        seen[name] = what_the_operator_sees(out, broken)
    return seen


def what_the_operator_sees(out: Path, log_dir: Path) -> Seen:
    """The UI's partition health of every asset the failed run planned, and the instance's own answers."""
    import warnings

    from dagster import DagsterEventType, DagsterInstance

    warnings.filterwarnings("ignore")
    # the code location as `dagster dev` loads it for this demo (the demo prints these variables)
    env = {
        "DAGSTER_HOME": str(out / "dagster_home"),
        "OFFSETOPS_LOG_DIR": str(log_dir),
        "OFFSETOPS_OUTPUT_DIR": str(out),
        "OFFSETOPS_NUM_PARTITIONS": str(PARTITIONS),
    }
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
            [run] = instance.get_runs(limit=1)
            planned = instance.get_records_for_run(
                run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION_PLANNED
            ).records
            keys = sorted({r.event_log_entry.dagster_event.asset_key for r in planned})
            health = partition_health(instance, keys)
            materialized = {k.to_user_string(): set(instance.get_materialized_partitions(k)) for k in keys}
            mats = instance.get_records_for_run(run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
            failures = instance.get_records_for_run(run.run_id, of_type=DagsterEventType.STEP_FAILURE)
            return Seen(
                health,
                materialized,
                run.status.value,
                len(planned),
                len(keys),
                {r.event_log_entry.dagster_event.asset_key.to_user_string() for r in mats.records},
                [r.event_log_entry.step_key for r in failures.records],
            )
    finally:
        os.environ.clear()
        os.environ.update(saved)


def partition_health(instance: Any, keys: list[Any]) -> dict[str, dict[str, list[str]]]:
    """GraphQL ``assetPartitionStatuses`` of each partitioned asset of ``keys``, as the UI asks for it."""
    from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

    health = {}
    with define_out_of_process_context(str(REPO / "workspace.yaml"), None, instance) as ctx:
        for key in keys:
            result = execute_dagster_graphql(ctx, PARTITION_HEALTH, {"a": list(key.path)})
            assert not result.errors, result.errors
            statuses = result.data["assetNodeOrError"]["assetPartitionStatuses"]
            if any(statuses.values()):  # all empty for an asset without partitions
                health[key.to_user_string()] = {k: sorted(v) for k, v in statuses.items()}
    return health


ALL = [str(p) for p in range(PARTITIONS)]


def test_the_run_failed_mid_way_in_both(failed_runs: dict[str, Seen]) -> None:
    for seen in failed_runs.values():
        assert seen.run_status == "FAILURE"
        assert seen.failed_steps == [FAILING_ASSET]
        # the reload, the plan, the audit and the validation ran and materialized before the refusal
        before = {"coordinator_cache", "expiration_plan", "cleaner_audit", "cache_validation"}
        assert before <= seen.materialized_by_run
        assert FAILING_ASSET not in seen.materialized_by_run


def test_without_the_variable_the_failed_partitions_show_as_failed(failed_runs: dict[str, Seen]) -> None:
    off = failed_runs["off"]
    assert off.health[FAILING_ASSET]["failedPartitions"] == ALL
    assert off.health[FAILING_ASSET]["materializedPartitions"] == []
    # one planned event per asset and partition (one for an asset without partitions)
    assert off.planned_events == PARTITIONS * len(off.health) + off.assets - len(off.health)


def test_with_the_variable_the_failure_is_hidden_behind_the_last_success(
    failed_runs: dict[str, Seen],
) -> None:
    """Why the deployment leaves it off: the partitions the run failed on still read as materialized (the
    earlier run's), with nothing failed, while it saves only the planned events."""
    on = failed_runs["on"]
    assert on.planned_events == on.assets  # one per asset
    assert on.health[FAILING_ASSET]["failedPartitions"] == []
    assert on.health[FAILING_ASSET]["materializedPartitions"] == ALL
    assert on.materialized[FAILING_ASSET] == set(ALL)
    # and with the variable nothing anywhere reads as failed
    assert all(h["failedPartitions"] == [] for h in on.health.values())


def test_the_partitions_that_succeeded_read_alike(failed_runs: dict[str, Seen]) -> None:
    off, on = failed_runs["off"], failed_runs["on"]
    for asset in off.health:
        if asset != FAILING_ASSET and not off.health[asset]["failedPartitions"]:
            assert off.health[asset] == on.health[asset], asset
