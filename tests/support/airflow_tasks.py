"""The Airflow DAG's alert task as ``ExternalPythonOperator`` runs it, without Airflow.

``ExternalPythonOperator`` ships only the callable's source to the offsetops venv and calls it in a new
interpreter with the worker's environment; :func:`run_send_alerts` does the same with ``send_alerts``
cut out of ``deploy/airflow/offsetops_dags.py``, and says which frameworks that interpreter imported.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DAG_FILE = REPO / "deploy" / "airflow" / "offsetops_dags.py"
FRAMEWORKS = ("dagster", "airflow", "pyspark")


def send_alerts_source() -> str:
    """The source of ``send_alerts`` exactly as the DAG file holds it (what the operator ships)."""
    text = DAG_FILE.read_text(encoding="utf-8")
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "send_alerts")
    source = ast.get_source_segment(text, node)
    assert source is not None
    return source


def run_send_alerts(token: str, env: Mapping[str, str] | None = None, **kwargs: Any) -> dict[str, Any]:
    """``send_alerts(**kwargs)`` in a new interpreter whose environment is a worker's: ``SLACK_BOT_TOKEN``
    plus ``env`` (the ``OFFSETOPS_*`` settings). Returns its result and the frameworks it imported."""
    script = "\n".join(
        [
            send_alerts_source(),
            "import json, sys",
            f"result = send_alerts(**json.loads({json.dumps(json.dumps(kwargs))}))",
            f"loaded = sorted({{m.split('.')[0] for m in sys.modules}} & set({list(FRAMEWORKS)!r}))",
            "print(json.dumps({'result': result, 'loaded': loaded}))",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={"PATH": "/usr/bin:/bin", "SLACK_BOT_TOKEN": token, "HOME": str(Path.home()), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
