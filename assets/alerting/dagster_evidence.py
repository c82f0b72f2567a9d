r"""The evidence the alert sensor reads from the Dagster instance: the watched assets' latest
materializations, turned into :class:`~offsetops.checks.alerting.model.Observation`\ s.

The observations from files and rows (each audited partition's verdict, the failover forecast, the
expiration plans) are framework-free, in :mod:`offsetops.checks.alerting.evidence`; this module adds the
ones only the instance knows and gathers them all for the sensor.
"""

import json
import logging
from collections.abc import Mapping
from typing import Any

from dagster import AssetKey
from offsetops.assets.resources import StateResource
from offsetops.checks.alerting.evidence import (
    CLEANER_LEVEL,
    cleaner_observations,
    failover_observations,
    load_partition_plans,
    metadata_rows,
    offsets_observations,
)
from offsetops.checks.alerting.model import Observation
from offsetops.checks.alerting.state import ConditionEntry
from offsetops.checks.asset_names import AUDIT_ASSET, EXPIRATION_ASSET, VALIDATION_ASSET
from offsetops.coordinator_core.untrusted import read_regular_file

log = logging.getLogger(__name__)


def _values(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: getattr(v, "value", v) for k, v in metadata.items()}


def latest_by_partition(instance: Any, asset: str, limit: int) -> dict[int, tuple[dict[str, Any], str]]:
    """For each offsets partition, the metadata and run id of ``asset``'s latest materialization of it."""
    records = instance.fetch_materializations(AssetKey(asset), limit=limit).records
    out: dict[int, tuple[dict[str, Any], str]] = {}
    for record in records:  # newest first
        mat = record.asset_materialization
        if mat is None or mat.partition is None:
            continue
        try:
            partition = int(mat.partition)
        except ValueError:
            continue
        out.setdefault(partition, (_values(mat.metadata), record.run_id))
    return out


def _topic_findings(instance: Any, state: StateResource) -> tuple[list[dict[str, Any]], str | None] | None:
    """The newest audit's topic-wide findings and its run id; None when no audit says anything of them.

    Run-wide metadata (with ``partition_verdicts``) lists them with ``partition: None``; when each
    partition's materialization carries only its own facts, they are in the audit state's
    ``latest/topic.json``.
    """
    records = instance.fetch_materializations(AssetKey(AUDIT_ASSET), limit=1).records
    if not records or records[0].asset_materialization is None:
        return None
    run_id = records[0].run_id
    meta = _values(records[0].asset_materialization.metadata)
    if "partition_verdicts" in meta:
        return [
            f for f in metadata_rows(meta.get("findings")) if "partition" in f and f["partition"] is None
        ], run_id
    topic = state.audit_history_dir / "latest" / "topic.json"
    try:
        doc = json.loads(read_regular_file(topic, kind="report"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("topic-wide audit findings %s are unreadable (%s); not evaluated", topic, exc)
        return None
    return metadata_rows(doc.get("reasons")), run_id


def cleaner_topic_observations(
    instance: Any, state: StateResource, firing: Mapping[str, ConditionEntry]
) -> list[Observation]:
    """Topic-wide findings (no partition) of the newest audit; a firing code it no longer reports is ok."""
    evidence = _topic_findings(instance, state)
    if evidence is None:
        return []  # no evidence either way
    rows, run_id = evidence
    found: dict[str, dict[str, Any]] = {}
    for f in rows:
        if CLEANER_LEVEL.get(str(f.get("severity"))) not in (None, "ok"):
            found.setdefault(str(f.get("code")), f)
    out = [
        Observation(
            key=f"cleaner-topic:{code}",
            kind="cleaner-topic",
            level=CLEANER_LEVEL[str(f["severity"])],  # type: ignore[arg-type]
            state=str(f["severity"]),
            reason=f"{code}: {f.get('message')}",
            remedy=str(f.get("remedy") or ""),
            asset=AUDIT_ASSET,
            run_id=run_id,
            codes=(code,),
        )
        for code, f in sorted(found.items())
    ]
    for key, entry in firing.items():
        if entry.kind == "cleaner-topic" and key.split(":", 1)[1] not in found:
            out.append(
                Observation(
                    key=key,
                    kind="cleaner-topic",
                    level="ok",
                    state="HEALTHY",
                    reason="the latest cleaner audit no longer reports it",
                    asset=AUDIT_ASSET,
                    run_id=run_id,
                )
            )
    return out


def validation_observations(instance: Any) -> list[Observation]:
    """The latest validation: an error-level failure is critical, a pass at error level is ok."""
    event = instance.get_latest_materialization_event(AssetKey(VALIDATION_ASSET))
    if event is None or event.asset_materialization is None:
        return []
    meta = _values(event.asset_materialization.metadata)
    if "success_error_level" not in meta:
        return []
    passed = bool(meta["success_error_level"])
    failed = [f for f in metadata_rows(meta.get("failed_checks")) if f.get("severity") == "error"]
    return [
        Observation(
            key="validation",
            kind="validation",
            level="ok" if passed else "critical",
            state="passed" if passed else "failed",
            reason="every error-level expectation passed"
            if passed
            else f"{len(failed)} error-level expectation(s) failed: "
            + ", ".join(f"{f.get('check_id')} ({f.get('unexpected_count')})" for f in failed[:10]),
            codes=() if passed else ("validation_failed",),
            remedy="Open the Data Docs of the run, look at the failing rows, and check the reload's decode "
            "errors before trusting the cache (or acting on an expiration plan).",
            run_id=event.run_id,
        )
    ]


def observe(
    instance: Any, state: StateResource, firing: Mapping[str, ConditionEntry], limit: int
) -> list[Observation]:
    """Every observation the current evidence supports (audit, topic-wide findings, validation, plans: per
    partition the later of the ``expiration_plan`` asset's and the ``offsets_follow`` sensor's)."""
    plan_runs = {
        p: run_id for p, (_, run_id) in latest_by_partition(instance, EXPIRATION_ASSET, limit).items()
    }
    return [
        *cleaner_observations(latest_by_partition(instance, AUDIT_ASSET, limit)),
        *cleaner_topic_observations(instance, state, firing),
        *failover_observations(state.reports_path),
        *validation_observations(instance),
        *offsets_observations(
            load_partition_plans(state.expiration_plans_dir, state.follow_plans_dir), firing, plan_runs
        ),
    ]
