"""The Dagster side of alerting: a run-failure sensor and the offsetops alert sensor.

* ``slack_on_run_failure`` pages once per failed run (key ``run-failure:<job>:<run_id>``).
* ``offsetops_alerts`` reads what the assets recorded and keeps Slack in line with it: a CRITICAL
  cleaner verdict (per partition, or topic-wide), an error-level validation failure, and groups that
  lose offsets within the forecast window. Conditions that clear get one RESOLVED message.

Both go through :class:`~assets.alerting.SlackNotifier`, so a missing or invalid token never fails
anything: the alert lands in the outbox of the state dir with one log line.
"""

import json
from collections.abc import Iterable, Mapping
from typing import Any

from dagster import (
    AssetKey,
    DefaultSensorStatus,
    Definitions,
    RunFailureSensorContext,
    SensorEvaluationContext,
    SkipReason,
    run_failure_sensor,
    sensor,
)
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_NAME_TAG,
)

from assets.alerting.model import Alert, SendResult
from assets.resources import NUM_PARTITIONS, SlackResource, StateResource
from checks.dagster_checks import plain_metadata

AUDIT_ASSET = "cleaner_audit"
VALIDATION_ASSET = "cache_validation"
EXPIRATION_ASSET = "expiration_plan"
WATCHED = (AUDIT_ASSET, VALIDATION_ASSET, EXPIRATION_ASSET)


def run_partitions_from_tags(tags: Mapping[str, str]) -> tuple[int, ...]:
    """The offsets partitions a run covered, from its partition (range) tags; () when unpartitioned."""
    try:
        if ASSET_PARTITION_RANGE_START_TAG in tags and ASSET_PARTITION_RANGE_END_TAG in tags:
            first, last = int(tags[ASSET_PARTITION_RANGE_START_TAG]), int(tags[ASSET_PARTITION_RANGE_END_TAG])
            return tuple(range(first, last + 1))
        if PARTITION_NAME_TAG in tags:
            return (int(tags[PARTITION_NAME_TAG]),)
    except ValueError:
        pass
    return ()


def failure_alert(
    job_name: str, run_id: str, tags: Mapping[str, str], reason: str, steps: Iterable[str], run_url: str
) -> Alert:
    """The page for one failed run."""
    steps = sorted(set(steps))
    return Alert(
        key=f"run-failure:{job_name}:{run_id}",
        severity="critical",
        title=f"Dagster run of {job_name} failed",
        partitions=run_partitions_from_tags(tags),
        reason=reason[:1500] or "the run failed",
        remedy="Open the run, read the failed step's error, fix the cause, then re-execute from failure.",
        run_url=run_url,
        details={"job": job_name, "run_id": run_id, **({"failed_steps": ", ".join(steps)} if steps else {})},
    )


@run_failure_sensor(
    name="slack_on_run_failure",
    description="Pages Slack once for every failed run of this code location "
    "(to the outbox when Slack is unusable).",
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
def slack_on_run_failure(
    context: RunFailureSensorContext, slack: SlackResource, state: StateResource
) -> None:
    """Send one ``run-failure`` alert for the failed run."""
    run = context.dagster_run
    steps = []
    messages = []
    for event in context.get_step_failure_events():
        steps.append(event.step_key or "")
        error = getattr(event.step_failure_data, "error", None)
        while error is not None and error.cause is not None:  # the user's exception, not the wrapper
            error = error.cause
        if error is not None:
            messages.append(f"{event.step_key}: {error.message.strip()}")
    reason = "\n".join(messages) or (context.failure_event.message or "")
    alert = failure_alert(
        run.job_name, run.run_id, run.tags, reason, filter(None, steps), slack.run_url(run.run_id)
    )
    state.ensure()
    result = slack.notifier(state).send(alert)
    context.log.info(f"run failure of {run.job_name} ({run.run_id}): {result.status.value}: {result.reason}")


# -- the alert sensor ------------------------------------------------------------------------------


def _values(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return plain_metadata(metadata)


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


def audit_alerts(latest: Mapping[int, tuple[dict[str, Any], str]], slack: SlackResource) -> list[Alert]:
    """One critical alert per CRITICAL partition, plus one for topic-wide CRITICAL findings."""
    alerts = []
    topic_findings: dict[str, tuple[dict[str, Any], str]] = {}
    for partition, (meta, run_id) in sorted(latest.items()):
        # Each partition's materialization carries only that partition's verdict and findings.
        findings = [f for f in meta.get("findings") or [] if f.get("severity") == "CRITICAL"]
        for f in findings:
            if f.get("partition", partition) is None:
                topic_findings.setdefault(f["code"], (f, run_id))
        if meta.get("verdict") != "CRITICAL":
            continue
        mine = [f for f in findings if f.get("partition", partition) == partition]
        alerts.append(
            Alert(
                key=f"audit:critical:partition-{partition}",
                severity="critical",
                title=f"Log Cleaner CRITICAL on __consumer_offsets-{partition}",
                partitions=(partition,),
                reason="; ".join(f"{f['code']}: {f['message']}" for f in mine)
                or "the cleaner audit verdict is CRITICAL",
                remedy="; ".join(dict.fromkeys(f["remedy"] for f in mine)) or "See the cleaner audit report.",
                run_url=slack.run_url(run_id),
                details={"dirty_ratio": meta.get("dirty_ratio")},
            )
        )
    for code, (f, run_id) in sorted(topic_findings.items()):
        alerts.append(
            Alert(
                key=f"audit:critical:topic:{code}",
                severity="critical",
                title="Log Cleaner CRITICAL for __consumer_offsets",
                partitions=(),
                reason=f"{code}: {f['message']}",
                remedy=f["remedy"],
                run_url=slack.run_url(run_id),
            )
        )
    return alerts


def validation_alerts(instance: Any, slack: SlackResource) -> list[Alert]:
    """A critical alert while the latest validation failed at error level."""
    event = instance.get_latest_materialization_event(AssetKey(VALIDATION_ASSET))
    if event is None or event.asset_materialization is None:
        return []
    meta = _values(event.asset_materialization.metadata)
    if meta.get("success_error_level", True):
        return []
    failed = [f for f in meta.get("failed_checks") or [] if f.get("severity") == "error"]
    run = instance.get_run_by_id(event.run_id)
    return [
        Alert(
            key="validation:error-level",
            severity="critical",
            title="Coordinator cache validation failed at error level",
            partitions=run_partitions_from_tags(run.tags) if run is not None else (),
            reason=f"{len(failed)} error-level expectation(s) failed: "
            + ", ".join(f"{f['check_id']} ({f.get('unexpected_count')})" for f in failed[:10]),
            remedy="Open the Data Docs of the run, look at the failing rows, and check the reload's decode "
            "errors before trusting the cache (or acting on an expiration plan).",
            run_url=slack.run_url(event.run_id),
            details={"data_docs": meta.get("data_docs")},
        )
    ]


def forecast_alerts(latest: Mapping[int, tuple[dict[str, Any], str]], slack: SlackResource) -> list[Alert]:
    """A warning while groups lose committed offsets within the forecast window."""
    at_risk: dict[str, dict[str, Any]] = {}
    partitions: set[int] = set()
    run_ids = set()
    horizon = None
    for partition, (meta, run_id) in latest.items():
        horizon = meta.get("forecast_horizon_hours", horizon)
        for g in meta.get("groups_at_risk") or []:
            if g.get("partition") == partition:
                at_risk.setdefault(g["group_id"], g)
                partitions.add(partition)
                run_ids.add(run_id)
    if not at_risk:
        return []
    groups = sorted(at_risk.values(), key=lambda g: str(g.get("first_expiry_at")))
    return [
        Alert(
            key="expiration:forecast",
            severity="warning",
            title=f"{len(groups)} consumer group(s) will lose committed offsets within {horizon}h",
            partitions=tuple(sorted(partitions)),
            reason="; ".join(
                f"{g['group_id']} ({g['offsets']} offsets, first in {g['first_expiry_in']})"
                for g in groups[:10]
            ),
            remedy="If these groups are still needed, restart their consumers (or commit) before the offsets "
            "expire; otherwise no action: cleanup will delete them (offsets.retention.minutes).",
            run_url=slack.run_url(sorted(run_ids)[0]) if len(run_ids) == 1 else None,
            details={"groups": len(groups)},
        )
    ]


def _cursor(instance: Any) -> str:
    ids = {}
    for asset in WATCHED:
        records = instance.fetch_materializations(AssetKey(asset), limit=1).records
        ids[asset] = records[0].storage_id if records else None
    return json.dumps(ids, sort_keys=True)


def evaluate_alerts(instance: Any, slack: SlackResource, state: StateResource) -> list[SendResult]:
    """Compute what should be firing and reconcile Slack with it (sends, dedupes, recoveries)."""
    limit = NUM_PARTITIONS * 4
    notifier = slack.notifier(state)
    results = []
    results += notifier.reconcile(
        audit_alerts(latest_by_partition(instance, AUDIT_ASSET, limit), slack), scope="audit:"
    )
    results += notifier.reconcile(validation_alerts(instance, slack), scope="validation:")
    results += notifier.reconcile(
        forecast_alerts(latest_by_partition(instance, EXPIRATION_ASSET, limit), slack), scope="expiration:"
    )
    return results


@sensor(
    name="offsetops_alerts",
    description="Pages Slack when the cleaner audit is CRITICAL, validation fails at error level, or groups "
    "lose offsets within the forecast window; sends RESOLVED when a condition clears.",
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
)
def offsetops_alerts(
    context: SensorEvaluationContext, slack: SlackResource, state: StateResource
) -> SkipReason:
    """Re-evaluate only when one of the watched assets has a new materialization."""
    cursor = _cursor(context.instance)
    if cursor == context.cursor:
        return SkipReason("no new cleaner audit, validation or expiration plan since the last evaluation")
    state.ensure()
    results = evaluate_alerts(context.instance, slack, state)
    context.update_cursor(cursor)
    tally: dict[str, int] = {}
    for r in results:
        tally[f"{r.kind} {r.status.value}"] = tally.get(f"{r.kind} {r.status.value}", 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(tally.items())) or "nothing firing"
    return SkipReason(f"alerts reconciled: {summary}")


defs = Definitions(sensors=[slack_on_run_failure, offsetops_alerts])
