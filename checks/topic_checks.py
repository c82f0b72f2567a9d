"""The topic's own checks, on the unpartitioned ``offsets_topic_summary``: what an operator sees first.

``topic_cleaner_verdict`` fails at ERROR when any partition (or a topic-wide finding) is CRITICAL, at
WARN when DEGRADED, naming the partitions in the one worst-first order of
:mod:`offsetops.coordinator_core.findings`; ``topic_offsets_expiration`` fails at ERROR when groups lost
committed offsets and at WARN when some expire within the forecast window. Both are judged from the
merged reports, so a run over one partition still shows the whole topic.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, MetadataValue
from offsetops.checks.asset_names import SUMMARY_ASSET
from offsetops.checks.dagster_checks import check_severity, failing_partitions_table_from_json, finding_text
from offsetops.coordinator_core.cleaner.model import Reason
from offsetops.coordinator_core.escape import markdown_code
from offsetops.coordinator_core.findings import (
    CRITICAL,
    DEGRADED,
    HEALTHY,
    and_more,
    sorted_reasons,
    worst_first,
)

TOPIC_CLEANER_CHECK = "topic_cleaner_verdict"
TOPIC_EXPIRATION_CHECK = "topic_offsets_expiration"
VERDICT_TAG = "offsetops/verdict"
"""The run tag that carries the topic's verdict (the Runs list shows it beside the run status)."""
_NAMED = 10


def topic_check_specs() -> list[AssetCheckSpec]:
    """The topic's own checks: what an operator should see first on the asset catalog."""
    return [
        AssetCheckSpec(
            TOPIC_CLEANER_CHECK,
            asset=SUMMARY_ASSET,
            description="__consumer_offsets as a whole: fails (ERROR) when any partition or topic-wide "
            "finding is CRITICAL, (WARN) when DEGRADED; the partitions are named worst first.",
        ),
        AssetCheckSpec(
            TOPIC_EXPIRATION_CHECK,
            asset=SUMMARY_ASSET,
            description="No group lost committed offsets (ERROR otherwise) and none loses any within the "
            "forecast window (WARN otherwise).",
        ),
    ]


def topic_cleaner_result(audit: Mapping[str, Any]) -> AssetCheckResult:
    """The merged audit (``cleaner_audit.json``) judged as one topic, partitions worst first."""
    verdict = str(audit.get("verdict") or HEALTHY)
    bad = worst_first(d for d in audit.get("partitions") or [] if d["verdict"] != HEALTHY)
    critical = [d["partition"] for d in bad if d["verdict"] == CRITICAL]
    degraded = [d["partition"] for d in bad if d["verdict"] == DEGRADED]
    lines = [
        f"**__consumer_offsets is {verdict}**: {len(critical)} critical, {len(degraded)} degraded of "
        f"{len(audit.get('partitions') or [])} partition(s)."
    ]
    for r in sorted_reasons(audit.get("reasons") or []):
        if r["severity"] != HEALTHY:
            lines.append(f"- topic {r['severity']}: {finding_text(Reason(**r))}")

    def line(d: Mapping[str, Any]) -> str:
        first = next(iter(sorted_reasons(r for r in d["reasons"] if r["severity"] != HEALTHY)), None)
        what = f": {finding_text(Reason(**first))}" if first else ""
        return f"- partition {d['partition']} {d['verdict']}{what}"

    lines.extend(line(d) for d in bad[:_NAMED])
    if len(bad) > _NAMED:
        lines.append(f"- and {len(bad) - _NAMED} more (cleaner_audit.json lists them all)")
    return AssetCheckResult(
        check_name=TOPIC_CLEANER_CHECK,
        passed=verdict == HEALTHY,
        severity=check_severity(verdict if verdict != HEALTHY else DEGRADED),
        description="\n".join(lines)[:4000],
        metadata={
            "verdict": verdict,
            "worst_first": and_more([str(p) for p in [*critical, *degraded]], 50) or "none",
            "critical": MetadataValue.int(len(critical)),
            "degraded": MetadataValue.int(len(degraded)),
            "failing_partitions": failing_partitions_table_from_json(bad),
        },
    )


def topic_expiration_result(
    plan_verdict: str, at_risk: Sequence[Mapping[str, Any]], lost: int
) -> AssetCheckResult:
    """The merged expiration plan as one topic: lost offsets fail at ERROR, offsets at risk at WARN."""
    names = and_more(
        at_risk,
        _NAMED,
        lambda g: (
            f"{markdown_code(g['group_id'])} (partition {g['partition']}, {g['offsets']} offsets, "
            f"first in {g['first_expiry_in']})"
        ),
    )
    text = (
        f"**Expiration is {plan_verdict}**: {lost} group(s) lost committed offsets; {len(at_risk)} group(s) "
    )
    text += "lose offsets within the forecast window" + (f": {names}" if at_risk else "") + "."
    return AssetCheckResult(
        check_name=TOPIC_EXPIRATION_CHECK,
        passed=plan_verdict == HEALTHY,
        severity=check_severity(plan_verdict if plan_verdict != HEALTHY else DEGRADED),
        description=text[:4000],
        metadata={
            "verdict": plan_verdict,
            "groups_lost": MetadataValue.int(lost),
            "groups_at_risk": MetadataValue.int(len(at_risk)),
        },
    )


def not_evaluated(check_name: str, what: str) -> AssetCheckResult:
    """A topic check with no report to judge yet: failed at WARN, never passed."""
    return AssetCheckResult(
        check_name=check_name,
        passed=False,
        severity=AssetCheckSeverity.WARN,
        description=f"no {what} report yet: nothing to judge the topic by",
    )
