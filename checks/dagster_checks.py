"""Dagster asset checks: per-partition cleaner verdicts, the forecast, and the Great Expectations results.

The cleaner audit and the expiration plan emit their own check results (``check_specs`` on the asset):
one evaluation per ``__consumer_offsets`` partition, so a CRITICAL partition fails its own check with
ERROR severity while a HEALTHY one passes, and ``cleaner_verdict`` judges the run's partitions together,
worst first. ``cache_validation`` emits the two GX checks from the suite's own report (one result per
run, the run's partitions validated together). A check whose asset fails before emitting it is shown
by Dagster as not executed (never as passed), and ``slack_on_run_failure`` pages the failed run.

Everything that lists findings or partitions here orders them by severity, worst first.
"""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    EventLogRecord,
    MetadataValue,
    Output,
    PartitionsDefinition,
    TableColumn,
    TableMetadataValue,
    TableRecord,
    TableSchema,
)

# Ties each partition's evaluation to that partition's materialization. Dagster (1.13) has no public way to
# do so for a run over a range of partitions: AssetCheckResult cannot name a partition, and an evaluation
# without this target is not "current" to the check-state store (AssetCheckPartitionInfo.is_current), so a
# failed partition would read as not evaluated (tests/assets/test_ui_browser.py reads those statuses).
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from offsetops.checks.asset_names import AUDIT_ASSET, EXPIRATION_ASSET, VALIDATION_ASSET
from offsetops.checks.report import ValidationReport
from offsetops.coordinator_core.cleaner.model import (
    CRITICAL,
    DEGRADED,
    HEALTHY,
    PartitionAudit,
    Reason,
    format_bytes,
)
from offsetops.coordinator_core.escape import for_markdown, markdown_code
from offsetops.coordinator_core.expiration import ForecastEntry
from offsetops.coordinator_core.findings import (
    RANK,
    dagster_severity,
    remedy_markdown,
    sorted_reasons,
    worst_first,
)
from offsetops.coordinator_core.timefmt import format_duration, iso_utc

PARTITION_VERDICT = "partition_verdict"
CLEANER_VERDICT = "cleaner_verdict"
FORECAST_CHECK = "no_offsets_expiring_soon"

VERDICT_RANK = RANK
"""Numeric verdicts, for the Plots tab (0 healthy, 1 degraded, 2 critical)."""


# -- typed metadata --------------------------------------------------------------------------------


def table(columns: Sequence[tuple[str, str]], rows: Iterable[Mapping[str, Any]]) -> TableMetadataValue:
    """A ``TableMetadataValue`` with ``columns`` as ``(name, type)``. Every record has every field (Dagster
    refuses records with different fields): the declared columns, then any other key a row has, in the
    order first seen; an empty cell is None."""
    rows = list(rows)
    names = list(dict.fromkeys([name for name, _kind in columns] + [k for row in rows for k in row]))
    return MetadataValue.table(
        records=[TableRecord({k: row.get(k) for k in names}) for row in rows],
        schema=TableSchema(columns=[TableColumn(name, kind) for name, kind in columns]),
    )


def plain_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata values as plain Python: a table becomes a list of dicts (its empty cells left out), the
    rest its ``.value``."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, TableMetadataValue):
            out[key] = [{k: v for k, v in r.data.items() if v is not None} for r in value.records]
        else:
            out[key] = getattr(value, "value", value)
    return out


# -- per-partition evaluations emitted by the assets -----------------------------------------------


@dataclass(frozen=True)
class PartitionCheck:
    """The outcome of one check on one offsets partition, before it is tied to its materialization."""

    partition: int
    passed: bool
    severity: AssetCheckSeverity
    description: str
    rank: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)


def partition_check_spec(
    asset: str, name: str, partitions_def: PartitionsDefinition, description: str
) -> AssetCheckSpec:
    """A check evaluated once per offsets partition (its own result on each partition's page)."""
    return AssetCheckSpec(name, asset=asset, partitions_def=partitions_def, description=description)


def is_selected(context: AssetExecutionContext, asset: str, check_name: str) -> bool:
    """Whether this run evaluates ``check_name`` (a run may materialize an asset without its checks)."""
    return AssetCheckKey(AssetKey(asset), check_name) in context.selected_asset_check_keys


def restate_worst(
    context: AssetExecutionContext, asset: str, partition: int | None, metadata: Mapping[str, Any]
) -> None:
    """Log the worst partition's materialization once more, after all the others.

    A run over many partitions materializes them in no particular order, and the asset's page and each
    partitioned check's "Latest execution" show the latest materialization and the evaluation that
    targets it: a healthy partition, picked by chance. Restating the worst one last makes "the latest"
    the worst. Call it after the ``MaterializeResult`` and before :func:`partition_evaluations`, in runs
    over more than one partition.
    """
    if partition is None:
        return
    context.log_event(
        AssetMaterialization(
            asset_key=asset,
            partition=str(partition),
            metadata=dict(metadata),
            description=f"partition {partition} restated last: the worst partition of the run",
        )
    )


def partition_evaluations(
    context: AssetExecutionContext, asset: str, check_name: str, results: Iterable[PartitionCheck]
) -> Iterator[Output | AssetCheckEvaluation]:
    """One ``AssetCheckEvaluation`` per partition, each tied to that partition's new materialization.

    ``AssetCheckResult`` cannot name a partition when a run covers a range of them (a single-run
    backfill), so the asset yields the check's output and then the evaluations itself, healthiest first.
    The emission order does not choose the check's "Latest execution" in the UI: Dagster (1.13) shows the
    newest row of the check's executions, and it creates one row per partition when it plans the run, in
    the order of the run's partition subset (a set), which the evaluations only fill in. Reporting the
    worst again outside the run would add a newest row only once per partition (rows are unique by
    asset, check, run and partition, and such rows have no run), so the topic's own checks on
    ``offsets_topic_summary`` carry the worst partition instead.
    Call it after the asset's ``MaterializeResult``, so each evaluation points at the new materialization.
    """
    key = AssetKey(asset)
    check_key = AssetCheckKey(key, check_name)
    if not is_selected(context, asset, check_name):
        return
    yield Output(None, output_name=context.assets_def.get_output_name_for_asset_check_key(check_key))
    results = sorted(results, key=lambda r: (r.rank, -r.partition))
    latest = latest_materializations(context.instance, key, [str(r.partition) for r in results])
    for r in results:
        record = latest.get(str(r.partition))
        target = (
            AssetCheckEvaluationTargetMaterializationData(
                storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
            )
            if record is not None
            else None
        )
        yield AssetCheckEvaluation(
            asset_key=key,
            check_name=check_name,
            passed=r.passed,
            severity=r.severity,
            description=r.description,
            metadata=r.metadata,
            partition=str(r.partition),
            target_materialization_data=target,
        )


def latest_materializations(
    instance: DagsterInstance, key: AssetKey, partitions: Sequence[str]
) -> dict[str, EventLogRecord]:
    """The newest materialization record of each of ``partitions`` of ``key`` (absent: never
    materialized), in two queries whatever the number of partitions: the newest storage id of each
    partition (``DagsterInstance.get_latest_storage_id_by_partition``), then those records."""
    if not partitions:
        return {}
    ids = instance.get_latest_storage_id_by_partition(
        key, DagsterEventType.ASSET_MATERIALIZATION, set(partitions)
    )
    if not ids:
        return {}
    wanted = sorted(ids.values())
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, storage_ids=wanted), limit=len(wanted)
    ).records
    by_id = {r.storage_id: r for r in records}
    return {p: by_id[i] for p, i in ids.items() if i in by_id}


# -- cleaner audit ---------------------------------------------------------------------------------

FINDING_COLUMNS = (("severity", "string"), ("code", "string"), ("message", "string"), ("remedy", "string"))


def findings_table(reasons: Iterable[Reason]) -> TableMetadataValue:
    return table(
        FINDING_COLUMNS,
        (
            {"severity": r.severity, "code": r.code, "message": r.message, "remedy": r.remedy}
            for r in sorted_reasons(reasons)
            if r.severity != HEALTHY
        ),
    )


def finding_text(reason: Reason) -> str:
    """One finding as Markdown (Dagster renders check descriptions so): code, what, and the remedy with
    its commands as code, so ``<broker>`` and ``<leader>`` survive."""
    return (
        f"{markdown_code(reason.code)}: {for_markdown(reason.message)}. "
        f"Remedy: {remedy_markdown(reason.remedy)}"
    )


def check_severity(verdict: str) -> AssetCheckSeverity:
    """CRITICAL pages (ERROR); DEGRADED is a warning (the one mapping of coordinator_core.findings)."""
    return AssetCheckSeverity[dagster_severity(verdict)]


def worst_reason(pa: PartitionAudit) -> Reason | None:
    bad = [r for r in sorted_reasons(pa.reasons) if r.severity != HEALTHY]
    return bad[0] if bad else None


def partition_verdict(partition: int, pa: PartitionAudit | None) -> PartitionCheck:
    """HEALTHY passes; DEGRADED fails with WARN; CRITICAL fails with ERROR; the worst finding leads."""
    if pa is None:
        return PartitionCheck(
            partition, True, AssetCheckSeverity.WARN, f"partition {partition}: HEALTHY (no segment files)"
        )
    reason = worst_reason(pa)
    text = f"partition {pa.partition}: {pa.verdict}"
    if reason is not None:
        text += f": {finding_text(reason)}"
    return PartitionCheck(
        pa.partition,
        pa.verdict == HEALTHY,
        check_severity(pa.verdict),
        text,
        VERDICT_RANK[pa.verdict],
        {
            "verdict": pa.verdict,
            "dirty_ratio": MetadataValue.float(round(pa.dirty_ratio, 6)),
            "findings": findings_table(pa.reasons),
        },
    )


FAILING_PARTITION_COLUMNS = (
    ("partition", "int"),
    ("verdict", "string"),
    ("code", "string"),
    ("message", "string"),
    ("remedy", "string"),
    ("dirty_ratio", "float"),
    ("size", "string"),
)


def failing_partitions_table(audits: Iterable[PartitionAudit]) -> TableMetadataValue:
    """Every partition that is not HEALTHY, worst first, with its worst finding and remedy."""
    return failing_partitions_table_from_json([pa.to_json() for pa in audits])


def failing_partitions_table_from_json(partitions: Iterable[Mapping[str, Any]]) -> TableMetadataValue:
    """The same table from audit documents (``PartitionAudit.to_json()``, as the reports keep them)."""
    bad = worst_first(d for d in partitions if d["verdict"] != HEALTHY)
    rows = []
    for d in bad:
        reasons = sorted_reasons(r for r in d["reasons"] if r["severity"] != HEALTHY)
        first = reasons[0] if reasons else {}
        rows.append(
            {
                "partition": d["partition"],
                "verdict": d["verdict"],
                "code": first.get("code"),
                "message": first.get("message"),
                "remedy": first.get("remedy"),
                "dirty_ratio": round(d["dirty_ratio"], 4),
                "size": format_bytes(d["size_bytes"]),
            }
        )
    return table(FAILING_PARTITION_COLUMNS, rows)


GROUPS_AT_RISK_COLUMNS = (
    ("group_id", "string"),
    ("partition", "int"),
    ("offsets", "int"),
    ("first_expiry_at", "string"),
    ("first_expiry_in", "string"),
    ("first_expiry_in_ms", "int"),
    ("rule", "string"),
)


def groups_at_risk(forecast: Iterable[ForecastEntry]) -> list[dict[str, Any]]:
    """Groups whose live offsets expire within the forecast window, soonest first (one row per group)."""
    groups: dict[str, dict[str, Any]] = {}
    for f in sorted(forecast, key=lambda f: (f.expires_at, f.group_id)):
        entry = groups.setdefault(
            f.group_id,
            {
                "group_id": f.group_id,
                "partition": f.offsets_partition,
                "offsets": 0,
                "first_expiry_at": iso_utc(f.expires_at),
                "first_expiry_in": format_duration(f.expires_in_ms),
                "first_expiry_in_ms": f.expires_in_ms,
                "rule": f.reason,
            },
        )
        entry["offsets"] += 1
    return list(groups.values())


def cleaner_verdict_result(
    audits: Sequence[PartitionAudit], topic_reasons: Sequence[Reason], partitions: Sequence[int], verdict: str
) -> AssetCheckResult:
    """The run's partitions judged together: passes only when all are HEALTHY, worst named first."""
    ranked = [p for p in worst_first(audits) if p.verdict != HEALTHY]
    critical = [p.partition for p in ranked if p.verdict == CRITICAL]
    degraded = [p.partition for p in ranked if p.verdict == DEGRADED]
    parts = []
    for r in sorted_reasons(topic_reasons):
        if r.severity != HEALTHY:
            parts.append(f"topic {r.severity}: {finding_text(r)}")
    for pa in ranked[:3]:
        reason = worst_reason(pa)
        if reason is not None:
            parts.append(f"partition {pa.partition} {pa.verdict}: {finding_text(reason)}")
    more = len(ranked) - min(len(ranked), 3)
    head = (
        f"cleaner verdict {verdict}: {len(critical)} critical, {len(degraded)} degraded of "
        f"{len(partitions)} partition(s)"
    )
    description = head + ("; " + "; ".join(parts) if parts else "") + (f"; and {more} more" if more else "")
    return AssetCheckResult(
        check_name=CLEANER_VERDICT,
        passed=verdict == HEALTHY,
        severity=check_severity(verdict),
        description=description[:4000],
        metadata={
            "verdict": verdict,
            "critical": MetadataValue.int(len(critical)),
            "degraded": MetadataValue.int(len(degraded)),
            "critical_partitions": ", ".join(map(str, critical)) or "none",
            "degraded_partitions": ", ".join(map(str, degraded)) or "none",
            "failing_partitions": failing_partitions_table(audits),
            "topic_findings": findings_table(topic_reasons),
        },
    )


def audit_check_specs(partitions_def: PartitionsDefinition) -> list[AssetCheckSpec]:
    return [
        partition_check_spec(
            AUDIT_ASSET,
            PARTITION_VERDICT,
            partitions_def,
            "This partition's Log Cleaner verdict: fails (ERROR) when CRITICAL, (WARN) when DEGRADED.",
        ),
        AssetCheckSpec(
            CLEANER_VERDICT,
            asset=AUDIT_ASSET,
            description="The run's partitions and the topic-wide findings together: fails (ERROR) on a "
            "CRITICAL partition, (WARN) on a DEGRADED one; the worst partitions are named first.",
        ),
    ]


# -- expiration forecast ---------------------------------------------------------------------------


def forecast_check(
    partition: int, groups_at_risk: Sequence[Mapping[str, Any]], horizon_hours: float
) -> PartitionCheck:
    """Fails (WARN) when committed offsets of this partition's groups expire within the window.

    ``groups_at_risk`` is soonest first: ``group_id``, ``offsets``, ``first_expiry_in``.
    """
    if not groups_at_risk:
        return PartitionCheck(
            partition,
            True,
            AssetCheckSeverity.WARN,
            f"partition {partition}: no offset expires within {horizon_hours:g}h",
        )
    offsets = sum(int(g["offsets"]) for g in groups_at_risk)
    names = ", ".join(
        f"{g['group_id']} ({g['offsets']} offsets, first in {g['first_expiry_in']})"
        for g in groups_at_risk[:5]
    )
    more = len(groups_at_risk) - min(len(groups_at_risk), 5)
    return PartitionCheck(
        partition,
        False,
        AssetCheckSeverity.WARN,
        f"partition {partition}: {len(groups_at_risk)} group(s) lose {offsets} committed offset(s) within "
        f"{horizon_hours:g}h: {names}"
        + (f" and {more} more" if more else "")
        + ". Remedy: restart (or commit from) the groups still needed before the offsets expire; otherwise "
        "cleanup deletes them (offsets.retention.minutes).",
        1,
        {
            "forecast_groups": MetadataValue.int(len(groups_at_risk)),
            "forecast_offsets": MetadataValue.int(offsets),
        },
    )


def expiration_check_specs(partitions_def: PartitionsDefinition) -> list[AssetCheckSpec]:
    return [
        partition_check_spec(
            EXPIRATION_ASSET,
            FORECAST_CHECK,
            partitions_def,
            "No group of this partition loses committed offsets within the forecast window (WARN otherwise).",
        )
    ]


# -- Great Expectations ----------------------------------------------------------------------------

GX_ERROR_CHECK = "gx_error_expectations"
GX_WARNING_CHECK = "gx_warning_expectations"
GX_CHECKS = {"error": GX_ERROR_CHECK, "warning": GX_WARNING_CHECK}
"""The check that reports each severity level of the suite."""

GX_FAILED_COLUMNS = (("check_id", "string"), ("severity", "string"), ("unexpected_count", "int"))


def validation_check_specs() -> list[AssetCheckSpec]:
    """The suite's two levels as checks of ``cache_validation``, which emits their results itself.

    Not partitioned: the suite validates the run's partitions together, so one result covers them all.
    """
    return [
        AssetCheckSpec(
            GX_ERROR_CHECK,
            asset=VALIDATION_ASSET,
            description="Every error-level expectation of the GX suite passed (the cache is not wrong).",
        ),
        AssetCheckSpec(
            GX_WARNING_CHECK,
            asset=VALIDATION_ASSET,
            description="Every warning-level expectation passed (nothing suspicious in the cache).",
        ),
    ]


def gx_result(report: ValidationReport, severity: str, partitions: str) -> AssetCheckResult:
    """The result for the ``severity`` level (``error`` / ``warning``) of a validation run.

    An expectation that raised counts as failed (its outcome is not a success), so it never reads as passed.
    """
    failed = [o for o in report.outcomes if not o.success and o.severity == severity]
    failed.sort(key=lambda o: (-(o.unexpected_count or 0), o.check_id))
    passed_count = sum(1 for o in report.outcomes if o.success)
    return AssetCheckResult(
        check_name=GX_CHECKS[severity],
        passed=not failed,
        severity=AssetCheckSeverity.ERROR if severity == "error" else AssetCheckSeverity.WARN,
        description=(
            f"{len(failed)} {severity}-level expectation(s) failed: "
            + ", ".join(
                f"{o.check_id} ({'-' if o.unexpected_count is None else o.unexpected_count} unexpected)"
                for o in failed
            )
            if failed
            else f"every {severity}-level expectation passed"
        )[:4000],
        metadata={
            "partitions": partitions,
            "failed": table(
                GX_FAILED_COLUMNS,
                (
                    {"check_id": o.check_id, "severity": o.severity, "unexpected_count": o.unexpected_count}
                    for o in failed
                ),
            ),
            "expectations_passed": MetadataValue.int(passed_count),
            "data_docs": MetadataValue.path(str(report.data_docs_index)),
            "summary_page": MetadataValue.path(str(report.summary_path)),
        },
    )


def gx_results(
    context: AssetExecutionContext, report: ValidationReport, partitions: str
) -> list[AssetCheckResult]:
    """The results of the GX checks this run selected, error level first."""
    return [
        gx_result(report, severity, partitions)
        for severity, name in GX_CHECKS.items()
        if is_selected(context, VALIDATION_ASSET, name)
    ]
