"""One truth on every surface, from settings given once: the consistency matrix.

The scenario is a simulated cluster with a CRITICAL partition (its cleaner stalled two days), DEGRADED
ones, and groups whose offsets expire within the forecast window. ``offsets.retention.minutes`` is
given once, by the ``OFFSETOPS_*`` environment, by the config file (``OFFSETOPS_CONFIG``) and by the
brokers' ``server.properties`` (``OFFSETOPS_SERVER_PROPERTIES``) in turn; nothing else names it. For
each, one full materialization, and every surface (the CLI's JSON and text of ``audit``, ``expire``,
``groups`` and ``describe``, report.html, the Dagster metadata and check results, the Slack messages of
the alert sensor on the loopback Slack server, the Prometheus textfile and the exporter scraped over
HTTP, and the Airflow DAG's tasks: the audit and expire jobs and their alert tasks, run as the DAG runs
them) must give the same verdict per partition, the same counts, the same worst-first order and the same
words as the core's own audit and plan. :mod:`tests.support.surfaces` reads each surface back.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from dagster import AssetKey
from offsetops.coordinator_core.findings import CRITICAL, DEGRADED, HEALTHY, remedy_parts, worst_first

from offsetops.cli import main
from tests.assets.conftest import NUM_PARTITIONS, java_available, materialize_all
from tests.support import surfaces
from tests.support.airflow_tasks import run_send_alerts
from tests.support.slack_server import SlackTestServer
from tests.support.surfaces import Story, disagreements

pytestmark = pytest.mark.slow

RETENTION = 30  # minutes: some groups are past it (tombstones due), others expire within the window
TOKEN = "xoxb-consistency"
SOURCES = ("env", "config", "server")


@dataclass(frozen=True)
class Given:
    """The retention given once: the environment that gives it, and the source every surface must name."""

    how: str
    env: dict[str, str]
    source: str


def _given(how: str, tmp: Path) -> Given:
    if how == "env":
        return Given(how, {"OFFSETOPS_RETENTION_MINUTES": str(RETENTION)}, "env OFFSETOPS_RETENTION_MINUTES")
    path = tmp / f"{how}.properties"
    path.write_text(f"offsets.retention.minutes={RETENTION}\n", encoding="utf-8")
    if how == "config":
        source = f"config file {path} (OFFSETOPS_CONFIG) (offsets.retention.minutes)"
        return Given(how, {"OFFSETOPS_CONFIG": str(path)}, source)
    source = f"broker server.properties {path} (offsets.retention.minutes)"
    return Given(how, {"OFFSETOPS_SERVER_PROPERTIES": str(path)}, source)


@pytest.fixture(scope="module", params=SOURCES)
def given(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Given]:
    """The settings source of this round of the matrix: only it is in the environment meanwhile."""
    if not java_available():
        pytest.skip("Java is needed for a local SparkSession")
    chosen = _given(request.param, tmp_path_factory.mktemp(f"given-{request.param}"))
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("OFFSETOPS_")]:
            mp.delenv(name)
        for name, value in chosen.env.items():
            mp.setenv(name, value)
        yield chosen


@dataclass(frozen=True)
class DagsterRun:
    """One full materialization from the given settings, and what the alert sensor posted after it."""

    result: Any
    instance: Any
    output_dir: Path
    history_dir: Path
    slack: list[dict[str, Any]]

    @property
    def reports(self) -> Path:
        return self.output_dir / "reports"


RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}  # no setting given here


@pytest.fixture(scope="module")
def dagster(
    given: Given, simulated_log_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DagsterRun]:
    """Every asset and check over all partitions in one in-process run; then the alert sensor's pass."""
    from dagster import DagsterInstance
    from offsetops.assets.alerting.sensors import evaluate_alerts
    from offsetops.assets.resources import SlackResource

    output_dir = tmp_path_factory.mktemp(f"out-{given.how}")
    with DagsterInstance.ephemeral() as instance:
        result, resources, _stalled = materialize_all(
            simulated_log_dir, output_dir, instance, run_config=RUN_CONFIG, app_name="offsetops-consistency"
        )
        state = resources["state"]
        with SlackTestServer(valid_tokens={TOKEN}) as server:
            slack = SlackResource(
                token=TOKEN,
                channel="#oncall",
                base_url=server.base_url,
                dagster_url="https://dagster.example",
            )
            evaluate_alerts(instance, slack, state)
            messages = list(server.messages)
        yield DagsterRun(result, instance, output_dir, Path(state.audit_history_dir), messages)


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    assert code == 0, (argv, out.getvalue()[-2000:])
    return out.getvalue()


@pytest.fixture(scope="module")
def cli(given: Given, dagster: DagsterRun, simulated_log_dir: Path) -> dict[str, str]:
    """Each command's stdout, with no setting on its command line (the environment gives them)."""
    log_dir = str(simulated_log_dir)
    audit = ("audit", log_dir, "--state-dir", str(dagster.history_dir), "--no-record")
    return {
        "audit --json": _cli(*audit, "--json"),
        "audit": _cli(*audit),
        "expire --json": _cli("expire", log_dir, "--json"),
        "expire": _cli("expire", log_dir),
        "groups --json": _cli("groups", log_dir, "--json"),
        "describe --json": _cli("describe", log_dir, "--json"),
    }


@pytest.fixture(scope="module")
def exporter(given: Given, dagster: DagsterRun, simulated_log_dir: Path) -> str:
    """``offsetops exporter`` as its own process on a free loopback port, scraped once over HTTP; it reads
    the audit history the Dagster run keeps, as an exporter beside that deployment does."""
    argv = [
        "exporter",
        str(simulated_log_dir),
        "--listen",
        "127.0.0.1:0",
        "--state-dir",
        str(dagster.history_dir),
    ]
    proc = subprocess.Popen([sys.executable, "-m", "offsetops.cli", *argv], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the first refresh is done before it listens
        found = re.search(r"serving (http://\S+/metrics)", line)
        assert found, line + proc.stderr.read()
        with urllib.request.urlopen(found.group(1), timeout=30) as response:
            return response.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@dataclass(frozen=True)
class AirflowRun:
    """The Airflow DAGs' tasks: the audit and expire jobs' tables, their alert tasks' Slack messages."""

    tables: dict[str, list[dict[str, Any]]]
    cleaner: list[dict[str, Any]]
    forecast: list[dict[str, Any]]
    loaded: list[str]


@pytest.fixture(scope="module")
def airflow(
    given: Given,
    simulated_log_dir: Path,
    now_ms: int,
    dagster: DagsterRun,
    tmp_path_factory: pytest.TempPathFactory,
) -> AirflowRun:
    """The tasks as the DAGs chain them: ``audit`` -> ``alert_cleaner``, ``expire`` -> ``alert_forecast``.

    The Spark tasks run the same job with the same arguments as the DAG's spark-submit (in process, on
    local Spark); the alert tasks run the DAG file's ``send_alerts`` as ``ExternalPythonOperator`` does,
    in a new interpreter whose environment holds only the worker's ``OFFSETOPS_*`` settings.
    """
    out = tmp_path_factory.mktemp(f"airflow-{given.how}")
    log_dir = str(simulated_log_dir)
    for job in ("audit", "expire"):
        argv = ("pipeline", job, "--input", log_dir, "--output", str(out / job), "--now-ms", str(now_ms))
        # The DAG's audit task reads the deployment's audit history (here the one the Dagster run keeps).
        history = ("--state-dir", str(dagster.history_dir), "--no-record") if job == "audit" else ()
        _cli(*argv, *history, "--master", "local[2]")
    tables = {
        name: pq.read_table(out / job / name).to_pylist()
        for job, name in (
            ("audit", "cleaner_audit"),
            ("expire", "expiration_forecast"),
            ("expire", "tombstones"),
        )
    }
    common = {
        "state_dir": str(out / "state"),
        "channel": "#offsetops-alerts",
        "run_url": "http://airflow.example",
    }
    posted, loaded = {}, set()
    for rule, job, extra in (
        ("audit", "audit", {}),
        ("forecast", "expire", {"now_ms": str(now_ms), "log_dir": log_dir}),
    ):
        with SlackTestServer(valid_tokens={TOKEN}) as server:
            done = run_send_alerts(
                TOKEN,
                given.env,
                **common,
                base_url=server.base_url,
                run_id=f"scheduled__{rule}",
                rule=rule,
                table_dir=str(out / job),
                **extra,
            )
            posted[rule] = list(server.messages)
        loaded |= set(done["loaded"])
    return AirflowRun(tables, posted["audit"], posted["forecast"], sorted(loaded))


@pytest.fixture(scope="module")
def now_ms(given: Given, simulated_log_dir: Path) -> int:
    """The instant the log dir declares (the simulator's clock): every surface evaluates as of it."""
    from offsetops.coordinator_core.run import resolve_run

    return resolve_run(log_dir=str(simulated_log_dir)).now_ms


@pytest.fixture(scope="module")
def core(given: Given, dagster: DagsterRun, simulated_log_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The core's own audit and plan of the scenario, from the run model over the given settings."""
    from offsetops.coordinator_core.cleaner.run import AuditRequest, run_audit
    from offsetops.coordinator_core.expiration import plan_expiration
    from offsetops.coordinator_core.loader import load_log_dir
    from offsetops.coordinator_core.run import resolve_run

    run = resolve_run(log_dir=str(simulated_log_dir))
    request = AuditRequest(
        path=str(simulated_log_dir), state_dir=str(dagster.history_dir), record_history=False, clock=run.clock
    )
    audit = run_audit(request).to_json()
    plan = plan_expiration(
        load_log_dir(simulated_log_dir, num_partitions=NUM_PARTITIONS),
        now_ms=run.now_ms,
        retention_ms=run.retention_ms,
        coordinator=run["coordinator"],
        forecast_horizon_ms=run.forecast_horizon_ms,
    ).to_json()
    return audit, plan


@pytest.fixture(scope="module")
def truth(given: Given, core: tuple[dict[str, Any], dict[str, Any]]) -> Story:
    audit, plan = core
    return surfaces.truth(audit, plan, (str(RETENTION), given.source))


def _evaluations(run: DagsterRun) -> list[Any]:
    return run.result.get_asset_check_evaluations()


def _topic_check(run: DagsterRun, name: str) -> Any:
    return next(e for e in _evaluations(run) if e.check_name == name and e.partition is None)


def _latest(run: DagsterRun, asset: str) -> Any:
    return run.instance.fetch_materializations(AssetKey(asset), limit=1).records[0].asset_materialization


def _summary(run: DagsterRun) -> Story:
    tags = run.instance.get_run_by_id(run.result.run_id).tags
    return surfaces.dagster_summary(_latest(run, "offsets_topic_summary").metadata, tags)


def _report(run: DagsterRun) -> str:
    return (run.reports / "report.html").read_text(encoding="utf-8")


def _json(text: str) -> Any:
    return json.loads(text)


Reader = tuple[str, Callable[[Any], Story]]
SURFACES: dict[str, Reader] = {
    "cli audit --json": ("cli", lambda c: surfaces.cli_audit_json(_json(c["audit --json"]))),
    "cli audit --json findings": (
        "cli",
        lambda c: surfaces.cli_audit_json_findings(_json(c["audit --json"])),
    ),
    "cli audit text findings": ("cli", lambda c: surfaces.cli_audit_text(c["audit"])),
    "cli audit text table": ("cli", lambda c: surfaces.cli_audit_text_table(c["audit"])),
    "cli expire --json": ("cli", lambda c: surfaces.cli_expire_json(_json(c["expire --json"]))),
    "cli expire text": ("cli", lambda c: surfaces.cli_expire_text(c["expire"])),
    "cli groups --json": ("cli", lambda c: surfaces.cli_groups_json(_json(c["groups --json"]))),
    "cli describe --json": ("cli", lambda c: surfaces.cli_settings_json(_json(c["describe --json"]))),
    "report.html table": ("dagster", lambda r: surfaces.report_table(_report(r))),
    "report.html banner": ("dagster", lambda r: surfaces.report_banner(_report(r))),
    "report.html expiration and settings": ("dagster", lambda r: surfaces.report_expiration(_report(r))),
    "dagster partition_verdict checks": (
        "dagster",
        lambda r: surfaces.dagster_partition_checks(_evaluations(r), "partition_verdict"),
    ),
    "dagster topic_cleaner_verdict": (
        "dagster",
        lambda r: surfaces.dagster_topic_check(_topic_check(r, "topic_cleaner_verdict")),
    ),
    "dagster cleaner_verdict": (
        "dagster",
        lambda r: surfaces.dagster_failing_table(_topic_check(r, "cleaner_verdict")),
    ),
    "dagster cleaner_audit latest materialization": (
        "dagster",
        lambda r: Story(worst=int(_latest(r, "cleaner_audit").partition)),
    ),
    "dagster expiration_plan metadata": (
        "dagster",
        lambda r: surfaces.dagster_plan_partitions(
            r.result.asset_materializations_for_node("expiration_plan")
        ),
    ),
    "dagster offsets_topic_summary and run tag": ("dagster", _summary),
    "dagster offsets_metrics metadata": (
        "dagster",
        lambda r: surfaces.dagster_metrics(
            r.result.asset_materializations_for_node("offsets_metrics")[0].metadata
        ),
    ),
    "prometheus textfile": (
        "dagster",
        lambda r: surfaces.prometheus((r.reports / "offsetops.prom").read_text(encoding="utf-8")),
    ),
    "exporter /metrics": ("exporter", surfaces.prometheus),
    "slack cleaner alerts (dagster sensor)": ("dagster", lambda r: surfaces.slack_cleaner(r.slack)),
    "airflow audit job table": ("airflow", lambda a: surfaces.job_audit_rows(a.tables["cleaner_audit"])),
    "airflow expire job tables": (
        "airflow",
        lambda a: surfaces.job_expire_rows(a.tables["expiration_forecast"], a.tables["tombstones"]),
    ),
    "slack cleaner alerts (airflow alert_cleaner)": ("airflow", lambda a: surfaces.slack_cleaner(a.cleaner)),
}


@pytest.mark.parametrize("surface", list(SURFACES))
def test_every_surface_tells_the_runs_story(
    surface: str, truth: Story, request: pytest.FixtureRequest
) -> None:
    fixture, read = SURFACES[surface]
    assert disagreements(truth, read(request.getfixturevalue(fixture))) == []


@pytest.mark.parametrize("who", ["dagster sensor", "airflow alert_forecast"])
def test_the_offsets_alerts_name_the_groups_at_risk_and_the_setting(
    who: str, truth: Story, request: pytest.FixtureRequest
) -> None:
    messages = request.getfixturevalue("dagster").slack if who == "dagster sensor" else None
    if messages is None:
        messages = request.getfixturevalue("airflow").forecast
    assert truth.groups_named
    shown = surfaces.slack_offsets(messages, truth.groups_named)
    assert disagreements(truth, shown) == []


def test_the_scenario_holds_what_the_matrix_compares(truth: Story, given: Given) -> None:
    assert truth.unhealthy and {CRITICAL, DEGRADED} <= set(truth.unhealthy.values())
    assert truth.groups_at_risk, "the scenario needs groups whose offsets expire within the window"
    assert truth.tombstones_due, "the scenario needs tombstones due"
    assert truth.group_risks and {CRITICAL, DEGRADED} <= {level for _, level in truth.group_risks}
    assert truth.retention == (str(RETENTION), given.source)


def test_the_topic_check_gives_each_remedys_commands_verbatim(dagster: DagsterRun, core) -> None:
    description = _topic_check(dagster, "topic_cleaner_verdict").description
    audit, _plan = core
    for d in worst_first(audit["partitions"])[:10]:
        for r in d["reasons"]:
            if r["severity"] == d["verdict"] != HEALTHY:
                for command in (text for is_command, text in remedy_parts(r["remedy"]) if is_command):
                    assert f"`{command}`" in description


def test_slack_speaks_one_vocabulary_and_gives_every_reason(dagster: DagsterRun, core) -> None:
    audit, _plan = core
    texts = [m["text"] for m in dagster.slack]
    codes = {r["code"] for d in audit["partitions"] for r in d["reasons"] if r["severity"] != HEALTHY}
    cleaner = " ".join(t for t in texts if "Log Cleaner" in t)
    assert codes <= set(re.findall(r"`([a-z_]+)`", cleaner))
    assert all("Operator report" in t for t in texts)
    assert surfaces.slack_levels(dagster.slack) <= {CRITICAL, DEGRADED, "RESOLVED"}
    assert any(t.startswith("[DEGRADED]") and "lose committed offsets soon" in t for t in texts)


def test_the_airflow_alert_tasks_import_no_framework(airflow: AirflowRun) -> None:
    assert airflow.loaded == []
    assert surfaces.slack_levels(airflow.cleaner + airflow.forecast) <= {CRITICAL, DEGRADED, "RESOLVED"}


@pytest.mark.parametrize("check_name", ["partition_verdict", "no_offsets_expiring_soon"])
def test_each_partitioned_result_says_which_partition_it_is_about(
    check_name: str, dagster: DagsterRun
) -> None:
    results = [e for e in _evaluations(dagster) if e.check_name == check_name]
    assert len(results) == NUM_PARTITIONS
    assert all(e.description.startswith(f"partition {e.partition}: ") for e in results)
