"""The Airflow DAGs in their own environment: parsed, scheduled as Dagster is, run by ``airflow dags test``.

Airflow is installed from ``deploy/airflow/requirements.lock`` into a venv of its own, cached under
``.cache/`` (gitignored) and keyed by the lockfile's hash, so a rerun reuses it; the offsetops
environment never sees Airflow. ``airflow dags test`` runs the expiration DAG for real: spark-submit of
``pipelines/expire.py`` (local Spark, the ``--py-files`` zip), then the forecast alert in the offsetops
venv, which pages the loopback Slack server.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from offsetops.coordinator_core.expiration import plan_expiration
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.simulator import SimulationConfig, SimulationResult, simulate

from tests.deploy.conftest import REPO, VENV_BIN, build_py_files, java_available
from tests.deploy.spark_cluster import spark_home
from tests.support.slack_server import SlackTestServer

pytestmark = [pytest.mark.slow, pytest.mark.spark]

LOCK = REPO / "deploy" / "airflow" / "requirements.lock"
DAGS = REPO / "deploy" / "airflow"
TOKEN = "xoxb-offsetops-airflow-test"
CACHE = REPO / ".cache"
DAG_SCHEDULES = {
    "offsetops_cleaner_audit": "hourly_cleaner_audit",
    "offsetops_reload_and_validation": "daily_reload_and_validation",
    "offsetops_expiration_forecast": "daily_expiration_forecast",
}


def airflow_venv() -> Path:
    """Airflow's venv, built once per lockfile (with uv when present, else plain pip)."""
    key = hashlib.sha256(LOCK.read_bytes()).hexdigest()[:12]
    venv = CACHE / f"airflow-venv-{key}"
    if (venv / ".complete").exists():
        return venv
    # Console scripts carry the venv's absolute path, so build in place; ".complete" marks a finished one.
    shutil.rmtree(venv, ignore_errors=True)
    CACHE.mkdir(exist_ok=True)
    base = getattr(sys, "_base_executable", sys.executable)
    if shutil.which("uv"):
        subprocess.run(["uv", "venv", "-q", "-p", base, str(venv)], check=True, timeout=300)
        install = ["uv", "pip", "install", "-q", "-p", str(venv / "bin" / "python"), "-r", str(LOCK)]
    else:
        subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
        install = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "-r", str(LOCK)]
    subprocess.run(install, check=True, timeout=1200)
    (venv / ".complete").write_text(key, encoding="utf-8")
    return venv


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The Airflow venv and an ``AIRFLOW_HOME`` with a migrated SQLite metadata database."""
    venv = airflow_venv()
    home = tmp_path_factory.mktemp("airflow_home")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__EXECUTOR": "SequentialExecutor",
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv),
        "OFFSETOPS_PYTHON": str(VENV_BIN / "python"),
        "OFFSETOPS_HOME": str(REPO),
    }
    env.pop("PYTHONPATH", None)
    subprocess.run(
        [str(venv / "bin" / "airflow"), "db", "migrate"],
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
    )
    return {
        **env,
        "AIRFLOW_BIN": str(venv / "bin" / "airflow"),
        "AIRFLOW_PYTHON": str(venv / "bin" / "python"),
    }


def test_airflow_does_not_leak_into_the_offsetops_environment() -> None:
    assert importlib.util.find_spec("airflow") is None


def test_dags_parse_and_follow_the_dagster_schedules(airflow: dict[str, str]) -> None:
    probe = (
        "import json; from airflow.models import DagBag; "
        f"b = DagBag(dag_folder={str(DAGS)!r}, include_examples=False); "
        "print(json.dumps({'errors': {k: str(v) for k, v in b.import_errors.items()}, "
        "'dags': {d: {'cron': str(g.schedule_interval), 'tasks': sorted(g.task_ids)} "
        "for d, g in b.dags.items()}, "
        "'audit': b.dags['offsetops_cleaner_audit'].get_task('audit').bash_command}))"
    )
    # The audit task judges by the audit history the settings name (a stalled cleaner is CRITICAL).
    env = {**airflow, "OFFSETOPS_AUDIT_HISTORY_DIR": "/srv/offsetops/audit-history"}
    done = subprocess.run(
        [airflow["AIRFLOW_PYTHON"], "-c", probe], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    bag = json.loads(done.stdout.strip().splitlines()[-1])
    assert bag["errors"] == {}
    from offsetops.assets.definitions import defs

    for dag_id, schedule in DAG_SCHEDULES.items():
        assert bag["dags"][dag_id]["cron"] == defs.get_schedule_def(schedule).cron_schedule, dag_id
        assert "page_failures" in bag["dags"][dag_id]["tasks"]
    assert bag["dags"]["offsetops_reload_and_validation"]["tasks"] == ["page_failures", "reload", "validate"]
    assert "--state-dir /srv/offsetops/audit-history" in bag["audit"]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate(
        SimulationConfig(
            out_dir=tmp_path_factory.mktemp("sim") / "logdir", groups=12, partitions=3, days=0.05, seed=5
        )
    )


def test_dags_test_runs_the_expire_job_and_pages_the_forecast(
    airflow: dict[str, str], sim: SimulationResult, tmp_path: Path
) -> None:
    if not java_available():
        pytest.skip("Java is needed for spark-submit")
    # The run's "now" is its data interval end: a 05:30 UTC slot 5.5 to 6.5 days after the last commit,
    # so with 7-day retention every simulated offset expires inside the 48-hour forecast window.
    end = datetime.fromtimestamp(sim.simulated_until_ms / 1000, UTC) + timedelta(days=5.5)
    slot = end.replace(hour=5, minute=30, second=0, microsecond=0)
    if slot < end:
        slot += timedelta(days=1)
    zip_path = build_py_files(tmp_path / "offsetops.zip")
    out = tmp_path / "out"
    with SlackTestServer(valid_tokens={TOKEN}) as slack:
        env = {
            **airflow,
            "SPARK_HOME": str(spark_home()),
            "OFFSETOPS_SPARK_SUBMIT": str(VENV_BIN / "spark-submit"),
            "OFFSETOPS_SPARK_MASTER": "local[1]",
            "OFFSETOPS_SPARK_CONF": "spark.ui.enabled=false,spark.sql.shuffle.partitions=4,"
            "spark.driver.memory=1g",
            "OFFSETOPS_PY_FILES": str(zip_path),
            "OFFSETOPS_LOG_DIR": str(sim.out_dir),
            "OFFSETOPS_OUTPUT_DIR": str(out),
            "OFFSETOPS_NUM_PARTITIONS": "3",
            "OFFSETOPS_FORECAST_HOURS": "48",
            "OFFSETOPS_SLACK_BASE_URL": slack.base_url,
            "SLACK_BOT_TOKEN": TOKEN,
        }
        done = subprocess.run(
            [airflow["AIRFLOW_BIN"], "dags", "test", "offsetops_expiration_forecast", slot.isoformat()],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        messages = slack.messages
    log = done.stdout[-4000:] + done.stderr[-4000:]
    assert done.returncode == 0, log
    assert "state=failed" not in done.stdout and "page_failures" not in " ".join(
        m.get("text", "") for m in messages
    )
    forecast = list(out.glob("airflow/offsetops_expiration_forecast/*/expire/expiration_forecast"))
    assert len(forecast) == 1 and any(forecast[0].glob("*.parquet")), log
    assert messages, "the forecast alert posted nothing"
    assert all(m["channel"] == "#offsetops-alerts" for m in messages)
    # The same groups the single-process planner forecasts as of the run's data interval end.
    plan = plan_expiration(
        load_log_dir(sim.out_dir, num_partitions=3),
        now_ms=int(slot.timestamp() * 1000),
        forecast_horizon_ms=48 * 3_600_000,
    )
    groups = sorted({f.group_id for f in plan.forecast})
    assert groups, "the chosen slot must put simulated groups inside the forecast window"
    # Every group the planner puts at risk is named by the alert (text or blocks), and nothing else.
    posted = " ".join(m.get("text", "") + json.dumps(m.get("blocks", [])) for m in messages)
    assert all(g in posted for g in groups), (groups, [m.get("text") for m in messages])
    assert "[DEGRADED]" in posted  # the one severity vocabulary (coordinator_core.findings)
