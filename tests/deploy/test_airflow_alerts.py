"""The Airflow DAGs' alert task runs without Dagster: ``send_alerts`` as ``ExternalPythonOperator`` runs it.

``ExternalPythonOperator`` ships only the callable's source to the offsetops venv, so these tests do the
same (no Airflow needed): they cut ``send_alerts`` out of the DAG file, run it in a fresh interpreter
against the loopback Slack server, and check what it posted and that no Dagster module was loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.support.airflow_tasks import run_send_alerts
from tests.support.slack_server import SlackTestServer

TOKEN = "xoxb-offsetops-airflow-alerts"


def common(slack: SlackTestServer, state_dir: Path) -> dict[str, Any]:
    return {
        "state_dir": str(state_dir),
        "channel": "#offsetops-alerts",
        "base_url": slack.base_url,
        "run_id": "scheduled__2026-01-01T05:30:00+00:00",
        "run_url": "http://airflow.example/dags/offsetops_cleaner_audit/grid",
    }


def test_the_failure_page_imports_no_dagster(tmp_path: Path) -> None:
    with SlackTestServer(valid_tokens={TOKEN}) as slack:
        out = run_send_alerts(
            TOKEN,
            **common(slack, tmp_path),
            rule="failure",
            dag_id="offsetops_cleaner_audit",
            failed="audit,alert_cleaner",
        )
        messages = slack.messages
    assert out["loaded"] == []
    assert out["result"] == "sent"
    assert len(messages) == 1
    assert "offsetops_cleaner_audit" in messages[0]["text"]
    assert "alert_cleaner" in json.dumps(messages[0]["blocks"])


def test_the_cleaner_alert_imports_no_dagster(tmp_path: Path) -> None:
    """A CRITICAL partition in the audit job's rows opens one alert naming it, its code and its remedy."""
    table_dir = tmp_path / "tables"
    (table_dir / "cleaner_audit").mkdir(parents=True)
    finding = {
        "severity": "CRITICAL",
        "code": "HANGING_TRANSACTION",
        "message": "an open transaction pins the last stable offset",
        "remedy": "kafka-transactions.sh --bootstrap-server <broker> abort",
    }
    rows = [
        {"offsets_partition": 7, "verdict": "CRITICAL", "audit_json": json.dumps({"reasons": [finding]})},
        {"offsets_partition": 8, "verdict": "HEALTHY", "audit_json": json.dumps({"reasons": []})},
    ]
    pq.write_table(pa.Table.from_pylist(rows), table_dir / "cleaner_audit" / "part-0.parquet")
    with SlackTestServer(valid_tokens={TOKEN}) as slack:
        out = run_send_alerts(
            TOKEN, **common(slack, tmp_path / "state"), rule="audit", table_dir=str(table_dir)
        )
        messages = slack.messages
    assert out["loaded"] == []
    assert out["result"] == "alert sent"
    posted = " ".join(m.get("text", "") + json.dumps(m.get("blocks", [])) for m in messages)
    assert "HANGING_TRANSACTION" in posted and "7" in posted


def test_the_forecast_alert_imports_no_dagster(tmp_path: Path) -> None:
    """The expire job's tables: a group past retention is lost, a dead group too, a group whose offsets
    expire inside the window is at risk; each is named."""
    table_dir = tmp_path / "tables"
    tables = {
        "tombstones": [
            {"offsets_partition": 3, "kind": "offset_commit", "group_id": "old-etl", "reason": "retention"}
        ],
        "dead_groups": [{"offsets_partition": 4, "group_id": "gone-app"}],
        "expiration_forecast": [
            {
                "offsets_partition": 3,
                "group_id": "billing",
                "expires_at": 1_767_300_000_000,
                "expires_in_ms": 3_600_000,
            }
        ],
    }
    for name, rows in tables.items():
        (table_dir / name).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), table_dir / name / "part-0.parquet")
    with SlackTestServer(valid_tokens={TOKEN}) as slack:
        out = run_send_alerts(
            TOKEN,
            **common(slack, tmp_path / "state"),
            rule="forecast",
            table_dir=str(table_dir),
            log_dir="",
            now_ms="1767296400000",
        )
        messages = slack.messages
    assert out["loaded"] == []
    assert out["result"].startswith("alert sent")
    posted = " ".join(m.get("text", "") + json.dumps(m.get("blocks", [])) for m in messages)
    assert all(group in posted for group in ("old-etl", "gone-app", "billing")), posted
