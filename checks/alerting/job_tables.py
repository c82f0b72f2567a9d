"""The Spark jobs' tables as alert evidence: what an orchestrator without Dagster's materializations
(Airflow's alert tasks) reads, turned into the same observations the Dagster sensor makes.

``rows(table)`` reads one of the job's output tables as a list of dicts (the caller knows where the
job wrote them and how to read Parquet).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from offsetops.checks.alerting.evidence import cleaner_observations, offsets_observations
from offsetops.checks.alerting.model import Observation
from offsetops.checks.alerting.state import ConditionEntry

Rows = Callable[[str], list[dict[str, Any]]]
#: The expire job's tables and the key each goes under in a partition's plan document.
PLAN_TABLES = (
    ("tombstones", "tombstones"),
    ("dead_groups", "dead_groups"),
    ("expiration_forecast", "forecast"),
)


def audit_job_observations(rows: Rows, run_id: str) -> list[Observation]:
    """Each partition's verdict and findings from the audit job's ``cleaner_audit`` rows, as the
    ``cleaner_audit`` asset records them per partition."""
    latest = {
        r["offsets_partition"]: (
            {
                "partition_verdicts": {str(r["offsets_partition"]): r["verdict"]},
                "findings": json.loads(r["audit_json"]).get("reasons", []),
            },
            run_id,
        )
        for r in rows("cleaner_audit")
    }
    return cleaner_observations(latest)


def expire_job_observations(
    rows: Rows,
    firing: Mapping[str, ConditionEntry],
    *,
    run_id: str,
    now_ms: int,
    horizon_ms: int,
    settings: Mapping[str, Any] | None = None,
) -> list[Observation]:
    """Each group's loss or risk from the expire job's tables, as the ``expiration_plan`` asset writes
    its per-partition plan documents (``settings``: the run model's, as the plan documents carry it)."""
    plans: dict[int, dict[str, Any]] = {}
    for table, key in PLAN_TABLES:
        for r in rows(table):
            doc = plans.setdefault(
                r["offsets_partition"],
                {
                    "partition": r["offsets_partition"],
                    "run_id": run_id,
                    "now_ms": now_ms,
                    "forecast_horizon_ms": horizon_ms,
                    "settings": dict(settings or {}),
                    "tombstones": [],
                    "dead_groups": [],
                    "forecast": [],
                },
            )
            doc[key].append(r)
    return offsets_observations(plans, firing, {})
