"""Following ``__consumer_offsets`` between scheduled runs, for the alerts: what the topic shows now.

A scheduled ``expiration_plan`` knows the topic as of its run. :func:`follow_topic` reads every partition
through the source's resume state (:mod:`offsetops.coordinator_core.resume`: only the bytes appended
since the last evaluation; a partition whose state does not hold is read whole, and says why), plans
expiration as of ``now_ms`` (``GroupMetadataManager.cleanupGroupMetadata``'s rules) and gives the
headline numbers and each partition's plan document in the ``expiration_plan`` asset's shape
(:func:`~offsetops.checks.alerting.evidence.partition_plan_doc`). Written under :data:`FOLLOW_PLANS`
in the state dir, the documents are evidence for the alert evaluation beside the asset's: for each
partition the plan made at the later instant wins (``evidence.load_partition_plans``).
The tombstone execution never reads them: it replays only the ``expiration_plan`` asset's plans.

No orchestrator here: the Dagster sensor ``offsets_follow`` is a thin adapter over it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offsetops.checks.alerting.evidence import offsets_observations, partition_plan_doc
from offsetops.coordinator_core.atomic import write_json_atomic
from offsetops.coordinator_core.errors import count_errors
from offsetops.coordinator_core.expiration import ExpirationPlan, plan_for_run
from offsetops.coordinator_core.expiry_risk import group_risks
from offsetops.coordinator_core.findings import CRITICAL
from offsetops.coordinator_core.follow import Follower, FollowStep, source_marks
from offsetops.coordinator_core.run import RunSettings
from offsetops.coordinator_core.sources.source import Source

__all__ = ["FOLLOW_PLANS", "FollowedTopic", "follow_topic", "source_digest", "write_plans"]

#: where the followed plans live, under the state dir
FOLLOW_PLANS = Path("follow") / "expiration"


@dataclass(frozen=True)
class FollowedTopic:
    """One evaluation: the headline numbers, each partition's plan document, the findings the plans
    support (``(observation key, level)`` of every group lost or at risk, sorted) and how it was read."""

    headline: dict[str, int]
    plans: dict[int, dict[str, Any]]
    findings: tuple[tuple[str, str], ...]
    step: FollowStep


def source_digest(source: Source) -> str:
    """One cheap look at the source (segment list and sizes, or log end offsets) as a digest: the same
    digest, nothing was appended, removed or rewritten since."""
    if source.client is not None:
        with source.live() as live:
            marks = source_marks(source, live)
    else:
        marks = source_marks(source)
    text = json.dumps(sorted(marks.items()), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def follow_topic(source: Source, run: RunSettings, *, now_ms: int) -> FollowedTopic:
    """Read what was appended (every partition checked against its resume state), plan expiration as of
    ``now_ms`` with the run's retention, coordinator and forecast window, and sum it up."""
    follower = Follower(source, num_partitions=run["num_partitions"], semantics=run["semantics"])
    try:
        step = follower.refresh()
    finally:
        follower.close()
    caches = follower.caches
    plan = plan_for_run(caches, run, now_ms=now_ms)
    settings = run.to_json()
    plans = {
        c.partition: {**partition_plan_doc(plan, c, run_id=None), "settings": settings}
        for c in caches
        if c.partition is not None
    }
    findings = tuple(sorted((o.key, o.level) for o in offsets_observations(plans, {}, {}) if o.level != "ok"))
    headline = {
        "partitions": len(caches),
        "groups": sum(len(c.groups) for c in caches),
        "offsets": sum(c.offset_count for c in caches),
        "decode_errors": sum(count_errors(c.stats.errors) for c in caches),
        **_risk_counts(plan),
        "bytes_read": step.bytes_read,
        "partitions_resumed": step.resumed,
        "partitions_read_fresh": len(step.fresh),
    }
    return FollowedTopic(headline, plans, findings, step)


def _risk_counts(plan: ExpirationPlan) -> dict[str, int]:
    risks = group_risks(plan)
    return {
        "groups_lost": sum(r.severity == CRITICAL for r in risks),
        "groups_at_risk": sum(r.severity != CRITICAL for r in risks),
        "offsets_at_risk": len(plan.forecast),
        "tombstones_due": len(plan.tombstones),
    }


def write_plans(folder: Path, plans: dict[int, dict[str, Any]]) -> None:
    """Each partition's plan document as ``partition-N.json`` (atomically), and none for a partition gone."""
    folder.mkdir(parents=True, exist_ok=True)
    for partition, doc in plans.items():
        write_json_atomic(folder / f"partition-{partition}.json", doc, default=str)
    for path in folder.glob("partition-*.json"):
        stem = path.stem.removeprefix("partition-")
        if stem.isdigit() and int(stem) not in plans:
            path.unlink(missing_ok=True)
