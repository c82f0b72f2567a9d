"""Summary domain: the topic-wide picture of ``__consumer_offsets``, in one unpartitioned asset.

Per-partition assets carry only their partition's facts; the figures about the whole topic (how many
partitions are CRITICAL, which ones first, total bytes, groups about to lose offsets) live here. It is
rebuilt from the merged reports the partitioned assets keep in the output dir, so a run over one
partition updates the summary without losing the others.
"""

import json
import os
from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext, Definitions, MaterializeResult, MetadataValue, asset
from offsetops.assets.cleaner_audit import AUDIT_REPORT, cleaner_audit
from offsetops.assets.expiration import PLAN_REPORT, expiration_plan
from offsetops.assets.metadata import run_bytes_read
from offsetops.assets.reload import INVENTORY_FILE
from offsetops.assets.resources import StateResource
from offsetops.assets.validation import cache_validation
from offsetops.checks.dagster_checks import (
    GROUPS_AT_RISK_COLUMNS,
    failing_partitions_table_from_json,
    findings_table,
    groups_at_risk,
    is_selected,
    table,
)
from offsetops.checks.report_verdicts import NOT_RUN, plan_verdict, worst_verdict
from offsetops.checks.topic_checks import (
    SUMMARY_ASSET,
    TOPIC_CLEANER_CHECK,
    TOPIC_EXPIRATION_CHECK,
    VERDICT_TAG,
    not_evaluated,
    topic_check_specs,
    topic_cleaner_result,
    topic_expiration_result,
)
from offsetops.coordinator_core.cleaner.model import CRITICAL, DEGRADED, Reason, format_bytes
from offsetops.coordinator_core.escape import for_log
from offsetops.coordinator_core.expiration import ForecastEntry
from offsetops.coordinator_core.timefmt import iso_utc
from offsetops.coordinator_core.untrusted import read_regular_file

GROUP = "summary"


def _read(path: Path) -> dict[str, Any]:
    return json.loads(read_regular_file(path, kind="report")) if os.path.lexists(path) else {}


def audit_summary_metadata(audit: dict[str, Any]) -> dict[str, Any]:
    summary = audit.get("summary") or {}
    partitions = audit.get("partitions") or []
    return {
        "cleaner_verdict": audit.get("verdict", "not audited yet"),
        "partitions_audited": MetadataValue.int(len(partitions)),
        "critical_partitions": MetadataValue.int(sum(d["verdict"] == CRITICAL for d in partitions)),
        "degraded_partitions": MetadataValue.int(sum(d["verdict"] == DEGRADED for d in partitions)),
        "worst_partitions": failing_partitions_table_from_json(partitions),
        "topic_findings": findings_table(Reason(**r) for r in audit.get("reasons") or []),
        "max_dirty_ratio": MetadataValue.float(float(summary.get("max_dirty_ratio", 0.0))),
        "size_bytes": MetadataValue.int(int(summary.get("size_bytes", 0))),
        "size": format_bytes(int(summary.get("size_bytes", 0))),
        "reclaimable_bytes": MetadataValue.int(int(summary.get("reclaimable_bytes", 0))),
        "reclaimable": format_bytes(int(summary.get("reclaimable_bytes", 0))),
        "open_transactions": MetadataValue.int(int(summary.get("open_transactions", 0))),
        "audit_clock": audit.get("clock") or "not audited yet",
        **failover_summary_metadata(audit.get("failover")),
    }


def failover_summary_metadata(failover: dict[str, Any] | None) -> dict[str, Any]:
    """The coordinator failover forecast of the merged audit: how many partitions would stall their
    groups longer than the threshold, and the worst load."""
    if not failover or not failover.get("partitions"):
        return {}  # not audited yet: no forecast, rather than a healthy-looking zero
    worst = failover["partitions"][0]
    worst_ms = max(int(worst["estimated_load_ms"]), int(worst.get("observed_load_ms") or 0))
    return {
        "failover_slow_partitions": MetadataValue.int(len(failover.get("slow_partitions") or [])),
        "failover_worst_partition": MetadataValue.int(int(worst["partition"])),
        "failover_worst_load_ms": MetadataValue.int(worst_ms),
    }


def read_summary_metadata(reports: Path, run_id: str) -> dict[str, Any]:
    """The run's reads beside the topic's size: each asset's segment bytes read in this run, their
    total, and the topic's bytes in the segment inventory, so "the topic once" is a ratio near 1.0."""
    inventory = _read(reports / INVENTORY_FILE).get("partitions") or {}
    topic = sum(int(e.get("bytes") or 0) for e in inventory.values() if isinstance(e, dict))
    try:
        by_asset = run_bytes_read(reports, run_id)
    except ValueError as exc:
        return {"run_bytes_read": f"not known: {for_log(exc)}"}
    total = sum(by_asset.values())
    return {
        "run_bytes_read": MetadataValue.int(total),
        "run_read": format_bytes(total),
        "run_bytes_read_by_asset": MetadataValue.json(by_asset),
        "topic_size_bytes": MetadataValue.int(topic),
        "topic_size": format_bytes(topic),
        "run_reads_of_topic": MetadataValue.float(round(total / topic, 3) if topic else 0.0),
    }


def _lost_groups(plan: dict[str, Any]) -> int:
    lost = {t.get("group_id") for t in plan.get("tombstones") or [] if t.get("kind") == "offset_commit"}
    lost |= {d.get("group_id") for d in plan.get("dead_groups") or []}
    return len(lost)


def _topic_results(context: AssetExecutionContext, audit: dict[str, Any], plan: dict[str, Any]) -> list[Any]:
    """The topic's checks from the merged reports; a report not written yet fails at WARN (no evidence
    is not health)."""
    out = []
    if is_selected(context, SUMMARY_ASSET, TOPIC_CLEANER_CHECK):
        out.append(topic_cleaner_result(audit) if audit else not_evaluated(TOPIC_CLEANER_CHECK, "audit"))
    if is_selected(context, SUMMARY_ASSET, TOPIC_EXPIRATION_CHECK):
        if plan:
            at_risk = groups_at_risk(ForecastEntry(**f) for f in plan.get("forecast") or [])
            out.append(topic_expiration_result(plan_verdict(plan), at_risk, _lost_groups(plan)))
        else:
            out.append(not_evaluated(TOPIC_EXPIRATION_CHECK, "expiration plan"))
    return out


def plan_summary_metadata(plan: dict[str, Any]) -> dict[str, Any]:
    summary = plan.get("summary") or {}
    as_of = {d["now_ms"] for d in plan.get("planned") or []}
    at_risk = groups_at_risk(ForecastEntry(**f) for f in plan.get("forecast") or [])
    return {
        "offset_tombstones": MetadataValue.int(int(summary.get("offset_tombstones", 0))),
        "group_tombstones": MetadataValue.int(int(summary.get("group_tombstones", 0))),
        "dead_groups": MetadataValue.int(int(summary.get("dead_groups", 0))),
        "forecast_offsets": MetadataValue.int(int(summary.get("forecast_offsets", 0))),
        "forecast_groups": MetadataValue.int(int(summary.get("forecast_groups", 0))),
        "groups_at_risk": table(GROUPS_AT_RISK_COLUMNS, at_risk[:100]),
        # Partitions planned in different runs may have different clocks: say so rather than pick one.
        "plan_as_of": ", ".join(str(iso_utc(ms)) for ms in sorted(as_of)) or "not planned yet",
    }


@asset(
    group_name=GROUP,
    # After validation too: the operator report it writes must show this run's audit, plan and checks.
    deps=[cleaner_audit, expiration_plan, cache_validation],
    kinds={"python"},
    check_specs=topic_check_specs(),
    description="The topic's verdict first: __consumer_offsets is as healthy as its worst partition "
    "(checks topic_cleaner_verdict and topic_offsets_expiration). Topic-wide figures: the cleaner verdict "
    "with the worst partitions first, total and reclaimable bytes, planned tombstones and the groups about "
    "to lose offsets, from every partition's latest audit and plan. Writes the operator report "
    "(reports/report.html).",
)
def offsets_topic_summary(context: AssetExecutionContext, state: StateResource) -> MaterializeResult:
    """Merge the latest per-partition audit and plan reports into topic-wide metadata."""
    audit = _read(state.reports_path / AUDIT_REPORT)
    plan = _read(state.reports_path / PLAN_REPORT)
    meta = {
        **audit_summary_metadata(audit),
        **plan_summary_metadata(plan),
        **read_summary_metadata(state.reports_path, context.run.run_id),
    }
    from offsetops.checks.operator_report import ReportInputError, write_operator_report

    try:
        operator = write_operator_report(state.reports_path, run_id=context.run.run_id)
    except ReportInputError as exc:  # a report file that is not what it should be: say which, go on
        context.log.error(f"operator report not written: {for_log(exc)}")
        meta["operator_verdict"] = "not written"
    else:
        meta["operator_verdict"] = operator.verdict
        meta["operator_report_url"] = MetadataValue.url(operator.url)
    context.log.info(
        f"topic: cleaner {meta['cleaner_verdict']}, {meta['critical_partitions'].value} critical and "
        f"{meta['degraded_partitions'].value} degraded partitions, {meta['forecast_groups'].value} groups "
        "at risk"
    )
    verdict = worst_verdict(str(meta["cleaner_verdict"]), plan_verdict(plan) if plan else NOT_RUN)
    # The Runs list shows tags beside the run's status: a green "Success" run still says CRITICAL.
    context.instance.add_run_tags(context.run.run_id, {VERDICT_TAG: verdict})
    return MaterializeResult(
        check_results=_topic_results(context, audit, plan),
        metadata={
            "topic_verdict": verdict,
            **meta,
            "audit_report": MetadataValue.path(str(state.reports_path / AUDIT_REPORT)),
            "plan_report": MetadataValue.path(str(state.reports_path / PLAN_REPORT)),
            **({"settings": MetadataValue.json(plan["settings"])} if plan.get("settings") else {}),
        },
    )


defs = Definitions(assets=[offsets_topic_summary])
