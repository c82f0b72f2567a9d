"""Follow domain: the ``offsets_follow`` sensor applies what was appended to ``__consumer_offsets`` since its
last evaluation, so alerts and the UI know the topic as of seconds ago, not as of the last scheduled run.

A thin adapter over :mod:`offsetops.checks.alerting.follow`: one cheap look at the source (segment
sizes, or log end offsets) per evaluation; when something moved, every partition is read on from its
resume state in the state volume (``StateResource.resume_dir``; only the appended bytes), the headline
numbers go to the ``offsets_followed`` asset as an observation, each partition's plan is written as
alert evidence, and when a group's finding changed (lost, at risk, healthy again) the Slack alert
evaluation runs at once. Stopped by default: the first evaluation reads the whole topic inside the
sensor daemon (seed the state with ``offsetops reload PATH --state <state dir>/resume`` on a large one).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

from dagster import (
    AssetObservation,
    AssetSpec,
    DefaultSensorStatus,
    Definitions,
    MetadataValue,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)
from offsetops.assets.alerting.sensors import evaluate_alerts
from offsetops.assets.resources import OffsetsSourceResource, SlackResource, StateResource
from offsetops.checks.alerting.follow import FollowedTopic, follow_topic, source_digest, write_plans
from offsetops.coordinator_core.escape import for_log

GROUP = "follow"
FOLLOWED = "offsets_followed"
#: re-evaluate this often even when nothing was appended: time alone moves offsets toward expiry
REEVALUATE_S = 600.0
#: the cursor holds at most this many findings (a cursor larger than that re-evaluates the alerts)
MAX_CURSOR_FINDINGS = 10_000

offsets_followed = AssetSpec(
    FOLLOWED,
    group_name=GROUP,
    kinds={"python"},
    description="What the offsets_follow sensor sees of __consumer_offsets between scheduled runs: groups, "
    "committed offsets, groups lost and at risk, offsets at risk, decode errors, and what each evaluation "
    "read (bytes, partitions resumed or read fresh). Observed, never materialized.",
)


@dataclass(frozen=True)
class FollowCursor:
    """The sensor's cursor: the source's digest at the last evaluation, the findings then, and when."""

    source: str = ""
    findings: tuple[tuple[str, str], ...] = ()
    evaluated_at: float = 0.0

    @classmethod
    def parse(cls, text: str | None) -> FollowCursor:
        """The stored cursor; an empty one when missing or not in this shape (the next tick re-reads)."""
        try:
            doc = json.loads(text or "{}")
            findings = tuple((str(k), str(v)) for k, v in doc.get("findings", ())[:MAX_CURSOR_FINDINGS])
            return cls(str(doc.get("source", "")), findings, float(doc.get("evaluated_at", 0.0)))
        except (ValueError, TypeError, AttributeError):
            return cls()

    def dump(self) -> str:
        return json.dumps(
            {
                "source": self.source,
                "findings": [list(f) for f in self.findings],
                "evaluated_at": self.evaluated_at,
            }
        )


def observation(followed: FollowedTopic, as_of: str) -> AssetObservation:
    """The headline numbers as typed metadata (the UI plots them across evaluations)."""
    metadata: dict[str, Any] = {k: MetadataValue.int(v) for k, v in followed.headline.items()}
    metadata["as_of"] = MetadataValue.text(as_of)
    if followed.step.fresh:
        metadata["read_fresh"] = MetadataValue.json(
            [{"partition": f.partition, "reason": f.reason, "detail": f.detail} for f in followed.step.fresh]
        )
    return AssetObservation(asset_key=FOLLOWED, metadata=metadata)


@sensor(
    name="offsets_follow",
    description="Applies what was appended to __consumer_offsets since the last evaluation (from the resume "
    "state in the state volume), observes offsets_followed with the fresh numbers, and re-evaluates the "
    "Slack alerts when a group is newly lost, at risk, or healthy again. Stopped by default.",
    default_status=DefaultSensorStatus.STOPPED,
    minimum_interval_seconds=30,
)
def offsets_follow(
    context: SensorEvaluationContext,
    offsets_source: OffsetsSourceResource,
    state: StateResource,
    slack: SlackResource,
) -> SensorResult | SkipReason:
    """One look; when the topic moved (or :data:`REEVALUATE_S` passed), read on and report."""
    cursor = FollowCursor.parse(context.cursor)
    source = replace(offsets_source.source(), state_dir=str(state.resume_dir))
    digest = source_digest(source)
    now = time.time()
    if digest == cursor.source and now - cursor.evaluated_at < REEVALUATE_S:
        return SkipReason("nothing appended to __consumer_offsets since the last evaluation")
    state.ensure()
    clock = offsets_source.clock()
    followed = follow_topic(source, offsets_source.settings(), now_ms=clock.as_of_ms)
    write_plans(state.follow_plans_dir, followed.plans)
    for f in followed.step.fresh:
        context.log.warning(
            f"__consumer_offsets-{f.partition} read from its start ({f.reason}): {for_log(f.detail)}"
        )
    for part, why in followed.step.unsaved:
        context.log.warning(f"__consumer_offsets-{part}: resume state not saved: {for_log(why)}")
    alerts = "findings unchanged"
    if followed.findings != cursor.findings:
        results = evaluate_alerts(context.instance, slack, state, now=now)
        alerts = f"alerts re-evaluated: {len(results)} message(s)"
    h = followed.headline
    context.log.info(
        f"read {h['bytes_read']} bytes ({h['partitions_resumed']} of {h['partitions']} partitions resumed); "
        f"{h['groups']} groups, {h['groups_lost']} lost, {h['groups_at_risk']} at risk; {alerts}"
    )
    return SensorResult(
        asset_events=[observation(followed, clock.iso)],
        cursor=FollowCursor(digest, followed.findings, now).dump(),
    )


defs = Definitions(assets=[offsets_followed], sensors=[offsets_follow])
