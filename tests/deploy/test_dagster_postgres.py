"""Dagster on PostgreSQL, as deployed: ``deploy/dagster.yaml`` unchanged, a real server, real processes.

One module-scoped stack: a throwaway PostgreSQL on loopback, ``dagster-daemon run`` and
``dagster-webserver`` on the offsetops code location (``workspace.yaml``), both with
``DAGSTER_HOME/dagster.yaml`` copied from ``deploy/`` and the Dagster variables the image sets
(``DAGSTER_EVENT_BATCH_SIZE``). The main job is launched through the webserver's
GraphQL API, queued in Postgres, dequeued by the daemon's run coordinator and run by the default run
launcher (local Spark, a 4-partition simulated log dir). The schedules are evaluated by the code server
(the UI's "Test schedule"); the alert sensor is ticked by the daemon and pages the loopback Slack server.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import (
    REPO,
    VENV_BIN,
    Service,
    image_dagster_env,
    simulated_run_input,
    wait_http,
)
from tests.deploy.postgres import PostgresServer
from tests.support.broker import free_port
from tests.support.slack_server import SlackTestServer

pytestmark = [pytest.mark.slow, pytest.mark.spark]

PARTITIONS = 4
TOKEN = "xoxb-offsetops-deploy-test"
LOCATION = {"repositoryLocationName": "offsetops", "repositoryName": "__repository__"}
DAY_MS = 86_400_000
RUN_TIMEOUT_S = 1200
SENSOR_TIMEOUT_S = 150


@dataclass
class Stack:
    pg: PostgresServer
    url: str
    slack: SlackTestServer
    daemon: Service
    webserver: Service
    output_dir: Path

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(
            self.url + "/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            doc = json.loads(r.read())
        assert not doc.get("errors"), doc["errors"]
        return doc["data"]


@pytest.fixture(scope="module")
def stack(postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    sim = simulated_run_input(tmp_path_factory, "dagster-pg", PARTITIONS)
    root = sim.out_dir.parent
    home = root / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "deploy" / "dagster.yaml", home / "dagster.yaml")
    slack = SlackTestServer(valid_tokens={TOKEN}).start()
    port = free_port()
    env = {
        **os.environ,
        **postgres.env(),
        # what the image sets for every Dagster process (DAGSTER_EVENT_BATCH_SIZE): runs write as deployed
        **image_dagster_env(),
        "DAGSTER_HOME": str(home),
        "OFFSETOPS_DEPLOYMENT": "local",
        "OFFSETOPS_LOG_DIR": str(sim.out_dir),
        "OFFSETOPS_OUTPUT_DIR": str(root / "out"),
        "OFFSETOPS_NUM_PARTITIONS": str(PARTITIONS),
        # Six and a half days on, the 7-day retention puts the simulated groups inside the 24 h forecast.
        "OFFSETOPS_AS_OF_MS": str(sim.simulated_until_ms + DAY_MS * 13 // 2),
        "OFFSETOPS_SPARK_MASTER": "local[1]",
        "OFFSETOPS_SPARK_CONF": "spark.ui.enabled=false,spark.sql.shuffle.partitions=4,"
        "spark.driver.memory=1g",
        "OFFSETOPS_SCHEDULES": "stopped",
        "SLACK_BOT_TOKEN": TOKEN,
        "OFFSETOPS_SLACK_BASE_URL": slack.base_url,
        "OFFSETOPS_DAGSTER_URL": f"http://127.0.0.1:{port}",
    }
    workspace = str(REPO / "workspace.yaml")
    daemon = Service(
        "dagster-daemon",
        [str(VENV_BIN / "dagster-daemon"), "run", "-w", workspace],
        env=env,
        cwd=REPO,
        log=root / "daemon.log",
    )
    webserver = Service(
        "dagster-webserver",
        [str(VENV_BIN / "dagster-webserver"), "-w", workspace, "-h", "127.0.0.1", "-p", str(port)],
        env=env,
        cwd=REPO,
        log=root / "webserver.log",
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/server_info", webserver, timeout=180)
        yield Stack(postgres, f"http://127.0.0.1:{port}", slack, daemon, webserver, root / "out")
    finally:
        webserver.stop()
        daemon.stop()
        slack.stop()


LAUNCH = """
mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
  __typename
  ... on LaunchRunSuccess { run { runId status } }
  ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } }
} }"""

RUN = """query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status } } }"""


@pytest.fixture(scope="module")
def main_run(stack: Stack) -> dict[str, Any]:
    """The main job over every partition, launched as the UI's "Materialize all" does, run to the end."""
    from offsetops.assets.partitions import all_partitions_tags

    tags = [{"key": k, "value": v} for k, v in all_partitions_tags(PARTITIONS).items()]
    params = {
        "selector": {**LOCATION, "jobName": "offsetops_main_job"},
        "runConfigData": {},
        "executionMetadata": {"tags": tags},
    }
    launched = stack.graphql(LAUNCH, {"p": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    deadline = time.monotonic() + RUN_TIMEOUT_S
    status = launched["run"]["status"]
    while time.monotonic() < deadline:
        status = stack.graphql(RUN, {"id": run_id})["runOrError"]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        if not stack.daemon.alive():
            pytest.fail(f"dagster-daemon exited:\n{stack.daemon.tail()}")
        time.sleep(3)
    return {"run_id": run_id, "status": status}


def test_main_job_is_queued_and_run_from_postgres(stack: Stack, main_run: dict[str, Any]) -> None:
    assert main_run["status"] == "SUCCESS", stack.daemon.tail()
    # The run, its queueing and its asset events are rows in the Postgres instance, not local files.
    rows = stack.pg.query(f"SELECT status FROM runs WHERE run_id = '{main_run['run_id']}'")
    assert rows == [["SUCCESS"]]
    events = dict(
        stack.pg.query(
            "SELECT dagster_event_type, count(*) FROM event_logs "
            f"WHERE run_id = '{main_run['run_id']}' GROUP BY dagster_event_type"
        )
    )
    # Queued by the webserver, started by the daemon's QueuedRunCoordinator (run events keep their
    # PIPELINE_* names in storage).
    lifecycle = {k: events.get(k) for k in ("PIPELINE_ENQUEUED", "PIPELINE_STARTING", "PIPELINE_SUCCESS")}
    assert lifecycle == dict.fromkeys(lifecycle, "1"), sorted(events.items())
    for asset in ("coordinator_cache", "cleaner_audit", "expiration_plan", "cache_validation"):
        # every partition once; a run over several partitions restates its worst one last (the asset's
        # latest materialization is the worst), so one more materialization may follow
        n = stack.pg.query(
            "SELECT count(DISTINCT partition), count(*) FROM event_logs "
            f"WHERE dagster_event_type = 'ASSET_MATERIALIZATION' AND asset_key = '[\"{asset}\"]'"
        )
        assert int(n[0][0]) == PARTITIONS, asset
        assert int(n[0][1]) in (PARTITIONS, PARTITIONS + 1), asset
    assert int(events.get("ASSET_CHECK_EVALUATION", 0)) > 0
    assert (stack.output_dir / "tables" / "offsets").is_dir() or any(stack.output_dir.rglob("*.parquet"))


@dataclass(frozen=True)
class StoredEvent:
    """One row of the run's event log: storage id, the transaction that wrote it, and the entry."""

    storage_id: int
    xmin: int
    event_type: str
    asset: str
    partition: str | None
    entry: Any


def run_events(stack: Stack, run_id: str, *types: str) -> list[StoredEvent]:
    """The run's events of ``types`` as stored, oldest first (``xmin``: the transaction that wrote it)."""
    from dagster import deserialize_value

    wanted = ", ".join(f"'{t}'" for t in types)
    rows = stack.pg.query(
        "SELECT id, xmin, dagster_event_type, coalesce(partition, ''), event FROM event_logs "
        f"WHERE run_id = '{run_id}' AND dagster_event_type IN ({wanted}) ORDER BY id"
    )
    events = []
    for storage_id, xmin, kind, partition, body in rows:
        entry = deserialize_value(body)
        # a check evaluation names its asset in its data (its row has no asset_key)
        key = entry.dagster_event.asset_key or entry.dagster_event.event_specific_data.asset_key
        events.append(
            StoredEvent(int(storage_id), int(xmin), kind, key.to_user_string(), partition or None, entry)
        )
    return events


CHECK_STATUSES = """query($a: [String!]!) { assetNodeOrError(assetKey: {path: $a}) { ... on AssetNode {
  assetChecksOrError { ... on AssetChecks { checks { name
    executionForLatestMaterialization { status }
    partitionStatuses { ... on AssetCheckDefaultPartitionStatuses {
      succeededPartitions failedPartitions inProgressPartitions skippedPartitions executionFailedPartitions
} } } } } } } }"""


@pytest.fixture(scope="module")
def stored(stack: Stack, main_run: dict[str, Any]) -> dict[str, list[StoredEvent]]:
    """The main run's materializations and check evaluations, as Postgres stores them."""
    assert main_run["status"] == "SUCCESS", stack.daemon.tail()
    return {
        "mats": run_events(stack, main_run["run_id"], "ASSET_MATERIALIZATION"),
        "evaluations": run_events(stack, main_run["run_id"], "ASSET_CHECK_EVALUATION"),
    }


def test_each_steps_materializations_are_one_write(stored: dict[str, list[StoredEvent]]) -> None:
    """The image's DAGSTER_EVENT_BATCH_SIZE is in effect: a step's per-partition materializations were
    written by one transaction (without it each is one of its own; a restated worst partition is too)."""
    mats = stored["mats"]
    partitioned = sorted({m.asset for m in mats if m.partition is not None})
    assert len(partitioned) >= 4, partitioned
    for asset in partitioned:
        transactions: dict[int, int] = {}
        for m in mats:
            if m.asset == asset:
                transactions[m.xmin] = transactions.get(m.xmin, 0) + 1
        assert max(transactions.values()) == PARTITIONS, (asset, transactions)


def test_every_check_evaluation_targets_its_runs_newest_materialization(
    stored: dict[str, list[StoredEvent]], main_run: dict[str, Any]
) -> None:
    """With batched writes, each check evaluation of the main job targets the newest materialization of its
    asset (and partition) when it was evaluated, which is one of its own run."""
    mats, evaluations = stored["mats"], stored["evaluations"]
    assert any(e.entry.dagster_event.event_specific_data.partition for e in evaluations)
    for e in evaluations:
        data = e.entry.dagster_event.event_specific_data
        earlier = [m for m in mats if m.asset == e.asset and m.storage_id < e.storage_id]
        if data.partition is not None:
            earlier = [m for m in earlier if m.partition == data.partition]
        where = (e.asset, data.check_name, data.partition)
        assert earlier, f"{where}: evaluated before any materialization"
        target = data.target_materialization_data
        assert target is not None, where
        assert (target.run_id, target.storage_id) == (main_run["run_id"], earlier[-1].storage_id), where


def test_the_ui_shows_every_partitions_check_as_evaluated(
    stack: Stack, stored: dict[str, list[StoredEvent]]
) -> None:
    """Every partition of a partitioned check passed or failed as evaluated; a run-level check's latest
    execution is this run's result (never "not evaluated")."""
    evaluations = stored["evaluations"]
    for asset in sorted({e.asset for e in evaluations}):
        node = stack.graphql(CHECK_STATUSES, {"a": [asset]})["assetNodeOrError"]
        checks = {c["name"]: c for c in node["assetChecksOrError"]["checks"]}
        mine = [e.entry.dagster_event.event_specific_data for e in evaluations if e.asset == asset]
        for name in sorted({d.check_name for d in mine}):
            outcomes = {d.partition: d.passed for d in mine if d.check_name == name}
            if None in outcomes:
                status = checks[name]["executionForLatestMaterialization"]
                assert status == {"status": "SUCCEEDED" if outcomes[None] else "FAILED"}, (asset, name)
                continue
            statuses = checks[name]["partitionStatuses"]
            assert sorted(outcomes) == [str(p) for p in range(PARTITIONS)], (asset, name)
            assert sorted(statuses["succeededPartitions"]) == sorted(p for p, ok in outcomes.items() if ok)
            assert sorted(statuses["failedPartitions"]) == sorted(p for p, ok in outcomes.items() if not ok)
            others = ("inProgressPartitions", "skippedPartitions", "executionFailedPartitions")
            assert all(statuses[k] == [] for k in others), (asset, name, statuses)


DRY_RUN = """
mutation($s: ScheduleSelector!, $t: Float) { scheduleDryRun(selectorData: $s, timestamp: $t) {
  __typename
  ... on DryRunInstigationTick { evaluationResult {
      runRequests { runKey tags { key value } } skipReason error { message } } }
  ... on PythonError { message }
} }"""


@pytest.mark.parametrize(
    ("schedule", "run_key"),
    [
        ("hourly_cleaner_audit", "cleaner-audit-2026010205"),
        ("daily_reload_and_validation", "reload-validation-20260102"),
        ("daily_expiration_forecast", "expiration-20260102"),
    ],
)
def test_schedule_ticks_evaluate_against_postgres(stack: Stack, schedule: str, run_key: str) -> None:
    tick_time = 1767329940.0  # 2026-01-02T04:59:00Z: the next tick of each schedule is that day's
    result = stack.graphql(DRY_RUN, {"s": {**LOCATION, "scheduleName": schedule}, "t": tick_time})
    tick = result["scheduleDryRun"]
    assert tick["__typename"] == "DryRunInstigationTick", tick
    evaluation = tick["evaluationResult"]
    assert evaluation["error"] is None, evaluation["error"]
    [request] = evaluation["runRequests"]
    assert request["runKey"] == run_key
    tags = {t["key"]: t["value"] for t in request["tags"]}
    assert tags["dagster/asset_partition_range_start"] == "0"
    assert tags["dagster/asset_partition_range_end"] == str(PARTITIONS - 1)
    # Stored schedule state lives in Postgres: starting the schedule writes an instigator row.
    started = stack.graphql(
        """mutation($s: ScheduleSelector!) { startSchedule(scheduleSelector: $s) {
             __typename ... on ScheduleStateResult { scheduleState { status } } } }""",
        {"s": {**LOCATION, "scheduleName": schedule}},
    )["startSchedule"]
    assert started["scheduleState"]["status"] == "RUNNING", started
    rows = stack.pg.query(f"SELECT status FROM instigators WHERE instigator_body LIKE '%\"{schedule}\"%'")
    assert rows == [["RUNNING"]]
    stack.graphql(
        """mutation($s: ScheduleSelector!) { resetSchedule(scheduleSelector: $s) { __typename } }""",
        {"s": {**LOCATION, "scheduleName": schedule}},
    )


SENSOR_TICKS = """
query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { __typename ... on Sensor {
  sensorState { status ticks(limit: 20) { status skipReason timestamp error { message } } } } } }"""


def test_alert_sensor_ticks_in_the_daemon_and_pages_slack(stack: Stack, main_run: dict[str, Any]) -> None:
    assert main_run["status"] == "SUCCESS"
    deadline = time.monotonic() + SENSOR_TIMEOUT_S
    reconciled: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not stack.slack.messages:
        sensor = stack.graphql(SENSOR_TICKS, {"s": {**LOCATION, "sensorName": "offsetops_alerts"}})
        state = sensor["sensorOrError"]["sensorState"]
        assert state["status"] == "RUNNING"
        errors = [t["error"]["message"] for t in state["ticks"] if t["error"]]
        assert not errors, errors
        reconciled = [t for t in state["ticks"] if "alerts reconciled" in (t["skipReason"] or "")]
        time.sleep(5)
    messages = stack.slack.messages
    assert messages, (
        f"no Slack message within {SENSOR_TIMEOUT_S} s; ticks: {reconciled}\n{stack.daemon.tail()}"
    )
    assert any("lose committed offsets" in m.get("text", "") for m in messages), messages
    # The sensor's ticks (and its cursor) are rows in Postgres.
    ticks = stack.pg.query("SELECT count(*) FROM job_ticks WHERE tick_body LIKE '%\"offsetops_alerts\"%'")
    assert int(ticks[0][0]) >= 1


def test_webserver_serves_the_ui_and_the_runs_from_postgres(stack: Stack, main_run: dict[str, Any]) -> None:
    with urllib.request.urlopen(stack.url + "/", timeout=30) as r:
        page = r.read().decode()
    assert r.status == 200 and "__NEXT_DATA__" in page  # the UI's single-page app shell
    script = re.search(r'src="(/_next/static/[^"]+\.js)"', page)
    assert script, page[:500]
    with urllib.request.urlopen(stack.url + script.group(1), timeout=30) as r:
        assert r.status == 200 and len(r.read()) > 1000  # and its code is served
    runs = stack.graphql(
        """{ runsOrError(limit: 10) { ... on Runs { results { runId jobName status } } } }"""
    )["runsOrError"]["results"]
    assert {
        "runId": main_run["run_id"],
        "jobName": "offsetops_main_job",
        "status": main_run["status"],
    } in runs
    info = stack.graphql("{ instance { runLauncher { name } runQueuingSupported } }")["instance"]
    assert info["runQueuingSupported"] is True and info["runLauncher"]["name"] == "DefaultRunLauncher"
