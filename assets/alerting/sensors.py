"""The Dagster side of alerting: a run-failure sensor and the offsetops alert sensor.

* ``slack_on_run_failure`` pages once per failed run (key ``run-failure:<job>:<run_id>``).
* ``offsetops_alerts`` turns the latest evidence into observations (each audited partition's
  verdict, topic-wide findings, the validation, each group in the expiration plans) and moves each
  condition's state machine (:mod:`offsetops.checks.alerting.lifecycle`); the changes become messages.

Both go through :class:`~offsetops.checks.alerting.SlackNotifier`: bounded in time, through the outbox, so a
dead or slow Slack, or a missing token, never fails or stalls anything.
"""

import json
import logging
import time
from collections.abc import Mapping
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
from offsetops.assets.alerting.dagster_evidence import observe
from offsetops.assets.partitions import (
    NUM_PARTITIONS,
    PARTITION_RANGE_END_TAG,
    PARTITION_RANGE_START_TAG,
    PARTITION_TAG,
)
from offsetops.assets.resources import SlackResource, StateResource
from offsetops.checks.alerting.model import Observation, SendResult, failure_alert
from offsetops.checks.alerting.reconcile import reconcile
from offsetops.checks.alerting.state import ConditionEntry
from offsetops.checks.asset_names import AUDIT_ASSET, EXPIRATION_ASSET, VALIDATION_ASSET
from offsetops.coordinator_core.escape import for_log

log = logging.getLogger(__name__)

WATCHED = (AUDIT_ASSET, VALIDATION_ASSET, EXPIRATION_ASSET)


def run_partitions_from_tags(tags: Mapping[str, str]) -> tuple[int, ...]:
    """The offsets partitions a run covered, from its partition (range) tags; () when unpartitioned."""
    try:
        if PARTITION_RANGE_START_TAG in tags and PARTITION_RANGE_END_TAG in tags:
            first, last = int(tags[PARTITION_RANGE_START_TAG]), int(tags[PARTITION_RANGE_END_TAG])
            return tuple(range(first, last + 1))
        if PARTITION_TAG in tags:
            return (int(tags[PARTITION_TAG]),)
    except ValueError:
        pass
    return ()


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
        run.job_name,
        run.run_id,
        run_partitions_from_tags(run.tags),
        reason,
        filter(None, steps),
        slack.run_url(run.run_id),
    )
    state.ensure()
    result = slack.notifier(state).send(alert)
    context.log.info(
        f"run failure of {run.job_name} ({run.run_id}): {result.status.value}: {for_log(result.reason)}"
    )


# -- the alert sensor: evidence -> observations -> lifecycle -> messages ---------------------------


def evaluate_alerts(
    instance: Any, slack: SlackResource, state: StateResource, *, now: float | None = None
) -> list[SendResult]:
    """Move every condition by the latest evidence and deliver the messages (the outbox's first).

    The state change and its messages are made durable together (messages queued inside the state
    lock) before anything is sent.
    """
    now = time.time() if now is None else now

    def evidence(conditions: dict[str, ConditionEntry]) -> list[Observation]:
        return observe(instance, state, conditions, NUM_PARTITIONS * 4)

    return reconcile(slack.notifier(state), slack.links(), evidence, now)


def _cursor(instance: Any) -> str:
    ids = {}
    for asset in WATCHED:
        records = instance.fetch_materializations(AssetKey(asset), limit=1).records
        ids[asset] = records[0].storage_id if records else None
    return json.dumps(ids, sort_keys=True)


@sensor(
    name="offsetops_alerts",
    description="Keeps Slack in line with the latest evidence: Log Cleaner DEGRADED/CRITICAL partitions, "
    "error-level validation failures, groups at risk of losing offsets and groups that lost them. "
    "RESOLVED only on evidence of health; escalations and downgrades are their own messages.",
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
)
def offsetops_alerts(
    context: SensorEvaluationContext, slack: SlackResource, state: StateResource
) -> SkipReason:
    """Re-evaluate when a watched asset has a new materialization; otherwise deliver what is pending."""
    cursor = _cursor(context.instance)
    if cursor == context.cursor:
        pending = slack.notifier(state).flush() if state.outbox_file.exists() else []
        sent = sum(r.sent for r in pending)
        extra = f"; delivered {sent} pending message(s) from the outbox" if sent else ""
        return SkipReason(
            f"no new cleaner audit, validation or expiration plan since the last evaluation{extra}"
        )
    state.ensure()
    results = evaluate_alerts(context.instance, slack, state)
    context.update_cursor(cursor)
    tally: dict[str, int] = {}
    for r in results:
        tally[f"{r.kind} {r.status.value}"] = tally.get(f"{r.kind} {r.status.value}", 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(tally.items())) or "nothing changed"
    return SkipReason(f"alerts reconciled: {summary}")


defs = Definitions(sensors=[slack_on_run_failure, offsetops_alerts])
