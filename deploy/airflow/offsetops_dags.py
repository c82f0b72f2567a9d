"""offsetops on Apache Airflow: the Dagster schedules as three DAGs, on the same Spark jobs and alerting.

| DAG | schedule (UTC) | tasks |
|---|---|---|
| ``offsetops_cleaner_audit`` | ``15 * * * *`` | ``audit`` (spark-submit) -> ``alert_cleaner`` |
| ``offsetops_reload_and_validation`` | ``0 5 * * *`` | ``reload`` -> ``validate`` (spark-submit) |
| ``offsetops_expiration_forecast`` | ``30 5 * * *`` | ``expire`` (spark-submit) -> ``alert_forecast`` |

Every DAG ends with ``page_failures`` (runs only when a task failed). Nothing here reimplements
offsetops: the Spark tasks ``spark-submit`` the ``pipelines/`` jobs exactly as docs/pipelines.md says
(``--py-files`` zip), and the alert tasks run in the offsetops environment (``ExternalPythonOperator``)
and call the alert sensor's own evidence rules and condition lifecycle from the framework-free
``offsetops.checks.alerting`` (the jobs' tables read as the assets' evidence, ``reconcile``),
``failure_alert`` and ``SlackNotifier`` (durable queue, RESOLVED messages, outbox), without importing
Dagster. Airflow's environment needs only Airflow; offsetops lives in its own venv, named by
``OFFSETOPS_PYTHON``.

Settings (environment of the scheduler and workers, read when the DAG file is parsed):
``OFFSETOPS_PYTHON`` (required), ``OFFSETOPS_HOME`` (the source tree holding the jobs' scripts; default
``/opt/offsetops``), ``OFFSETOPS_PY_FILES`` (default ``$OFFSETOPS_HOME/offsetops.zip``),
``OFFSETOPS_SPARK_SUBMIT`` (default ``spark-submit``), ``OFFSETOPS_SPARK_MASTER``,
``OFFSETOPS_SPARK_CONF`` (``key=value`` pairs separated by commas), ``OFFSETOPS_LOG_DIR``,
``OFFSETOPS_OUTPUT_DIR``, ``OFFSETOPS_STATE_DIR`` (default ``$OFFSETOPS_OUTPUT_DIR/state``),
``OFFSETOPS_AUDIT_HISTORY_DIR`` (the audit job's ``--state-dir``; default
``$OFFSETOPS_OUTPUT_DIR/airflow/audit-history``),
the run model's ``OFFSETOPS_NUM_PARTITIONS``, ``OFFSETOPS_RETENTION_MINUTES``, ``OFFSETOPS_FORECAST_HOURS``,
``OFFSETOPS_CONFIG`` and ``OFFSETOPS_SERVER_PROPERTIES`` (the jobs and the alert tasks resolve them alike,
see docs/architecture.md), ``OFFSETOPS_SLACK_CHANNEL``,
``OFFSETOPS_SLACK_BASE_URL``,
``OFFSETOPS_AIRFLOW_URL``; the Slack token is the ``SLACK_BOT_TOKEN`` environment variable of the
worker (from a Kubernetes secret or Airflow's secrets backend), never a DAG argument.

Each run evaluates "now" as its data interval's end, so a backfill audits and forecasts as of its
own slot, and writes under ``$OFFSETOPS_OUTPUT_DIR/airflow/<dag>/<run timestamp>/``.
"""

from __future__ import annotations

import os
import shlex
from datetime import datetime, timedelta, timezone

from airflow import DAG
from airflow.operators.bash import BashOperator
from airflow.operators.python import ExternalPythonOperator

NOW_MS = "{{ data_interval_end.int_timestamp * 1000 }}"
RUN_DIR = "{{ dag.dag_id }}/{{ ts_nodash }}"
RUN_URL = "{{ ti.log_url }}"


def _env(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise RuntimeError(f"offsetops DAGs: set {name} in the Airflow scheduler's and workers' environment")
    return value


PYTHON = _env("OFFSETOPS_PYTHON", "/opt/offsetops/venv/bin/python")
HOME = _env("OFFSETOPS_HOME", "/opt/offsetops")
PY_FILES = _env("OFFSETOPS_PY_FILES", f"{HOME}/offsetops.zip")
SPARK_SUBMIT = _env("OFFSETOPS_SPARK_SUBMIT", "spark-submit")
SPARK_MASTER = _env("OFFSETOPS_SPARK_MASTER", "local[*]")
SPARK_CONF = [c.strip() for c in _env("OFFSETOPS_SPARK_CONF", "").split(",") if c.strip()]
LOG_DIR = _env("OFFSETOPS_LOG_DIR", "/kafka-data")
OUTPUT_DIR = _env("OFFSETOPS_OUTPUT_DIR", "/data/offsetops")
STATE_DIR = _env("OFFSETOPS_STATE_DIR", f"{OUTPUT_DIR}/state")
# The cleaner audit's history (audits.jsonl): each run is judged against the previous ones, so a stalled
# cleaner (no progress since the last audit) is CRITICAL, not merely slow.
AUDIT_HISTORY_DIR = _env("OFFSETOPS_AUDIT_HISTORY_DIR", f"{OUTPUT_DIR}/airflow/audit-history")
SLACK_CHANNEL = _env("OFFSETOPS_SLACK_CHANNEL", "#offsetops-alerts")
SLACK_BASE_URL = _env("OFFSETOPS_SLACK_BASE_URL", "")

DEFAULT_ARGS = {"owner": "kafka-ops", "retries": 1, "retry_delay": timedelta(minutes=5)}


# As offsetops.pipelines.cli_args.JOB_SCRIPTS says: the scheduler's Python does not have offsetops installed.
JOB_SCRIPTS = {
    "reload": "pipelines/reload.py",
    "expire": "pipelines/expire.py",
    "audit": "pipelines/audit.py",
    "validate": "checks/validate_job.py",
}


def job_dir(job: str) -> str:
    return f"{OUTPUT_DIR}/airflow/{RUN_DIR}/{job}"


def spark_submit(job: str, *args: str) -> str:
    """The command docs/pipelines.md gives operators, for one job of ``pipelines/``."""
    argv = [
        SPARK_SUBMIT,
        "--master",
        SPARK_MASTER,
        "--name",
        f"offsetops-{job}",
        "--py-files",
        PY_FILES,
        "--conf",
        f"spark.pyspark.python={PYTHON}",
        "--conf",
        f"spark.pyspark.driver.python={PYTHON}",
    ]
    for conf in SPARK_CONF:
        argv += ["--conf", conf]
    # offsets.topic.num.partitions, retention and the forecast window are the run model's: the job reads
    # OFFSETOPS_* from the worker's environment (append_env) exactly as the alert task does.
    argv += [f"{HOME}/{JOB_SCRIPTS[job]}", *args]
    # Templated values (now, run dir) are rendered by Jinja first; quote everything else.
    return " ".join(a if "{{" in a else shlex.quote(a) for a in argv)


def spark_task(job: str, *args: str, retries: int = 1) -> BashOperator:
    return BashOperator(task_id=job, bash_command=spark_submit(job, *args), append_env=True, retries=retries)


# -- the alert callable: runs inside OFFSETOPS_PYTHON (ExternalPythonOperator ships only its source) ------


def send_alerts(
    rule: str,
    state_dir: str,
    channel: str,
    base_url: str,
    run_id: str,
    run_url: str,
    table_dir: str = "",
    log_dir: str = "",
    now_ms: str = "0",
    dag_id: str = "",
    failed: str = "",
) -> str:
    """The Dagster alert sensor's evidence rules and lifecycle over a job's tables, through ``SlackNotifier``.

    ``audit``: the audit job's ``cleaner_audit`` rows; ``forecast``: the expire job's ``tombstones``,
    ``dead_groups`` and ``expiration_forecast``; both then ``reconcile`` the shared condition state
    (open, escalate, resolve) exactly as ``evaluate_alerts`` does. ``failure``: ``failure_alert``.
    """
    import os
    import time

    import pyarrow.parquet as pq
    from offsetops.checks.alerting.blocks import AlertLinks
    from offsetops.checks.alerting.job_tables import audit_job_observations, expire_job_observations
    from offsetops.checks.alerting.model import failure_alert
    from offsetops.checks.alerting.notifier import SlackNotifier
    from offsetops.checks.alerting.reconcile import reconcile

    class Links(AlertLinks):  # links go to the Airflow task log, not to a Dagster UI
        def run(self, _run_id: str) -> str:
            return run_url

        def asset_partition(self, _asset: str, _partition: int) -> str:
            return run_url

    notifier = SlackNotifier(
        os.environ.get("SLACK_BOT_TOKEN"),
        channel,
        base_url=base_url or None,
        state_path=f"{state_dir}/alerts/state.json",
        outbox_path=f"{state_dir}/alerts/outbox.jsonl",
    )
    if rule == "failure":
        steps = [s for s in failed.split(",") if s]
        reason = f"failed task(s): {', '.join(steps)}; see the task logs"
        return notifier.send(failure_alert(dag_id, run_id, (), reason, steps, run_url)).status.value

    def rows(table: str) -> list[dict]:
        return pq.read_table(f"{table_dir}/{table}").to_pylist()

    def observe(conditions: dict) -> list:
        if rule == "audit":  # the per-partition metadata the cleaner_audit asset records
            return audit_job_observations(rows, run_id)
        if rule == "forecast":  # the per-partition plan documents the expiration_plan asset writes
            from offsetops.coordinator_core.run import resolve_run

            # The settings the expire job resolved: the same run model over the same environment and log dir.
            run = resolve_run(log_dir=log_dir or None, now=(int(now_ms), "Airflow data interval end"))
            return expire_job_observations(
                rows,
                conditions,
                run_id=run_id,
                now_ms=int(now_ms),
                horizon_ms=run.forecast_horizon_ms,
                settings=run.to_json(),
            )
        raise ValueError(f"unknown alert rule {rule!r}")

    results = reconcile(notifier, Links(dagster_url=run_url), observe, time.time())
    return ", ".join(f"{r.kind} {r.status.value}" for r in results) or "nothing changed"


def external(task_id: str, rule: str, trigger_rule: str = "all_success", **kwargs: object):
    """An ``ExternalPythonOperator`` running :func:`send_alerts` with ``rule`` in the offsetops venv."""
    common = {
        "run_id": "{{ run_id }}",
        "state_dir": STATE_DIR,
        "channel": SLACK_CHANNEL,
        "base_url": SLACK_BASE_URL,
        "run_url": RUN_URL,
    }
    return ExternalPythonOperator(
        task_id=task_id,
        python=PYTHON,
        python_callable=send_alerts,
        op_kwargs={**common, "rule": rule, **kwargs},
        expect_airflow=False,  # offsetops' venv does not have Airflow, and must not need it
        trigger_rule=trigger_rule,
        retries=0,
    )


def failure_pager() -> ExternalPythonOperator:
    """``page_failures``: runs when any task of the DAG run failed."""
    failed = "{{ dag_run.get_task_instances(state='failed') | map(attribute='task_id') | join(',') }}"
    return external(
        "page_failures", "failure", trigger_rule="one_failed", dag_id="{{ dag.dag_id }}", failed=failed
    )


def _dag(dag_id: str, schedule: str, doc: str) -> DAG:
    return DAG(
        dag_id,
        schedule=schedule,
        # Early enough for backfills of old log copies; catchup stays off.
        start_date=datetime(2015, 1, 1, tzinfo=timezone.utc),  # noqa: UP017
        catchup=False,
        max_active_runs=1,
        default_args=DEFAULT_ARGS,
        tags=["offsetops", "kafka"],
        doc_md=doc,
    )


with _dag(
    "offsetops_cleaner_audit", "15 * * * *", "Hourly at :15: the Log Cleaner audit of every partition."
) as cleaner_audit:
    audit = spark_task(
        "audit",
        "--input",
        LOG_DIR,
        "--output",
        job_dir("audit"),
        "--now-ms",
        NOW_MS,
        "--state-dir",
        AUDIT_HISTORY_DIR,
    )
    alert = external("alert_cleaner", "audit", table_dir=job_dir("audit"))
    audit >> alert
    [audit, alert] >> failure_pager()

with _dag(
    "offsetops_reload_and_validation",
    "0 5 * * *",
    "Daily at 05:00 UTC: full reload into the cache tables, then the Great Expectations validation "
    "(an error-level failure fails the validate task and pages).",
) as reload_and_validation:
    reload = spark_task("reload", "--input", LOG_DIR, "--output", job_dir("reload"))
    validate = spark_task(
        "validate",
        "--input",
        job_dir("reload"),
        "--output",
        job_dir("validate"),
        "--now-ms",
        NOW_MS,
        retries=0,  # exit 1 means an error-level expectation failed: retrying cannot fix the data
    )
    reload >> validate
    [reload, validate] >> failure_pager()

with _dag(
    "offsetops_expiration_forecast",
    "30 5 * * *",
    "Daily at 05:30 UTC: expiration dry run and forecast; pages when groups lose offsets within the "
    "forecast window (24 h by default).",
) as expiration_forecast:
    expire = spark_task(
        "expire",
        "--input",
        LOG_DIR,
        "--output",
        job_dir("expire"),
        "--now-ms",
        NOW_MS,
    )
    alert = external(
        "alert_forecast",
        "forecast",
        table_dir=job_dir("expire"),
        now_ms=NOW_MS,
        log_dir=LOG_DIR,
    )
    expire >> alert
    [expire, alert] >> failure_pager()
