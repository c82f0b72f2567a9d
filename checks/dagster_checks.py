"""Dagster asset checks over the Great Expectations results, the cleaner verdict and the forecast.

Each check reads the latest materialization of its asset (the facts the asset recorded as metadata),
so it runs right after the asset in the same run and can also be re-run alone from the UI. A failing
check shows on the asset: ERROR for a wrong cache or a CRITICAL cleaner, WARN for the rest.
"""

from collections.abc import Mapping
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetKey,
    MetadataValue,
    asset_check,
)

VALIDATION_ASSET = "cache_validation"
AUDIT_ASSET = "cleaner_audit"
EXPIRATION_ASSET = "expiration_plan"


def latest_metadata(context: AssetCheckExecutionContext, asset: str) -> Mapping[str, Any] | None:
    """The metadata values (plain Python) of ``asset``'s latest materialization, or None."""
    event = context.instance.get_latest_materialization_event(AssetKey(asset))
    if event is None or event.asset_materialization is None:
        return None
    return {k: getattr(v, "value", v) for k, v in event.asset_materialization.metadata.items()}


def _not_materialized(asset: str) -> AssetCheckResult:
    return AssetCheckResult(
        passed=False,
        severity=AssetCheckSeverity.WARN,
        description=f"{asset} has not been materialized yet; nothing to check",
    )


def _docs(meta: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if meta.get("data_docs"):
        out["data_docs"] = MetadataValue.path(str(meta["data_docs"]))
    if meta.get("summary_page"):
        out["summary_page"] = MetadataValue.path(str(meta["summary_page"]))
    return out


def gx_result(meta: Mapping[str, Any] | None, severity: str) -> AssetCheckResult:
    """The check result for the ``severity`` level (``error`` / ``warning``) of a validation run."""
    if meta is None:
        return _not_materialized(VALIDATION_ASSET)
    failed = [f for f in meta.get("failed_checks") or [] if f.get("severity") == severity]
    passed_count = int(meta.get("expectations", 0)) - len(meta.get("failed_checks") or [])
    return AssetCheckResult(
        passed=not failed,
        severity=AssetCheckSeverity.ERROR if severity == "error" else AssetCheckSeverity.WARN,
        description=(
            f"{len(failed)} {severity}-level expectation(s) failed: "
            + ", ".join(f["check_id"] for f in failed)
            if failed
            else f"every {severity}-level expectation passed"
        ),
        metadata={
            "partitions": str(meta.get("partitions", "")),
            "failed": MetadataValue.json(failed),
            "expectations_passed": passed_count,
            **_docs(meta),
        },
    )


@asset_check(
    asset=VALIDATION_ASSET,
    name="gx_error_expectations",
    description="Every error-level expectation of the GX suite passed (the cache is not wrong).",
)
def gx_error_expectations(context: AssetCheckExecutionContext) -> AssetCheckResult:
    return gx_result(latest_metadata(context, VALIDATION_ASSET), "error")


@asset_check(
    asset=VALIDATION_ASSET,
    name="gx_warning_expectations",
    description="Every warning-level expectation passed (nothing suspicious in the cache).",
)
def gx_warning_expectations(context: AssetCheckExecutionContext) -> AssetCheckResult:
    return gx_result(latest_metadata(context, VALIDATION_ASSET), "warning")


def verdict_result(meta: Mapping[str, Any] | None) -> AssetCheckResult:
    """HEALTHY passes; DEGRADED fails with WARN; CRITICAL fails with ERROR."""
    if meta is None:
        return _not_materialized(AUDIT_ASSET)
    verdict = str(meta.get("verdict", "UNKNOWN"))
    critical = list(meta.get("critical_partitions") or [])
    degraded = list(meta.get("degraded_partitions") or [])
    findings = [f for f in meta.get("findings") or [] if f.get("severity") != "HEALTHY"]
    return AssetCheckResult(
        passed=verdict == "HEALTHY",
        severity=AssetCheckSeverity.ERROR if verdict == "CRITICAL" else AssetCheckSeverity.WARN,
        description=(
            f"cleaner verdict {verdict}: {len(critical)} critical, {len(degraded)} degraded partition(s)"
            + (f"; first finding: {findings[0]['code']}: {findings[0]['message']}" if findings else "")
        ),
        metadata={
            "verdict": verdict,
            "critical_partitions": MetadataValue.json(critical),
            "degraded_partitions": MetadataValue.json(degraded),
            "max_dirty_ratio": float(meta.get("max_dirty_ratio") or 0.0),
            "findings": MetadataValue.json(findings[:20]),
        },
    )


@asset_check(
    asset=AUDIT_ASSET,
    name="cleaner_verdict",
    description="The Log Cleaner keeps up: fails (ERROR) on a CRITICAL partition, (WARN) on a DEGRADED one.",
)
def cleaner_verdict(context: AssetCheckExecutionContext) -> AssetCheckResult:
    return verdict_result(latest_metadata(context, AUDIT_ASSET))


def forecast_result(meta: Mapping[str, Any] | None) -> AssetCheckResult:
    """Fails (WARN) when live offsets of any group expire within the forecast window."""
    if meta is None:
        return _not_materialized(EXPIRATION_ASSET)
    groups = int(meta.get("forecast_groups") or 0)
    horizon = meta.get("forecast_horizon_hours")
    return AssetCheckResult(
        passed=groups == 0,
        severity=AssetCheckSeverity.WARN,
        description=(
            f"{groups} group(s) lose {meta.get('forecast_offsets')} offset(s) within {horizon}h"
            if groups
            else f"no offset expires within {horizon}h"
        ),
        metadata={
            "forecast_groups": groups,
            "forecast_offsets": int(meta.get("forecast_offsets") or 0),
            "groups_at_risk": MetadataValue.json(list(meta.get("groups_at_risk") or [])[:20]),
        },
    )


@asset_check(
    asset=EXPIRATION_ASSET,
    name="no_offsets_expiring_soon",
    description="No group loses committed offsets within the forecast window (WARN otherwise).",
)
def no_offsets_expiring_soon(context: AssetCheckExecutionContext) -> AssetCheckResult:
    return forecast_result(latest_metadata(context, EXPIRATION_ASSET))


VALIDATION_CHECKS = [gx_error_expectations, gx_warning_expectations]
AUDIT_CHECKS = [cleaner_verdict]
EXPIRATION_CHECKS = [no_offsets_expiring_soon]
ALL_CHECKS = [*VALIDATION_CHECKS, *AUDIT_CHECKS, *EXPIRATION_CHECKS]
