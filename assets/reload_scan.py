"""The cleaner audit's record scan, handed from ``coordinator_cache`` to ``cleaner_audit`` in one run.

When a run materializes both from the same log dir, the reload scans each segment in the pass that
folds it (:mod:`offsetops.pipelines.reload_scan`) and writes every partition's unjudged audit to
:func:`reload_scan_file`; ``cleaner_audit`` then judges those instead of reading the segments again.
It trusts the file only when it was written by this run from the inputs the audit would read itself
(partitions, segment files, checkpoints, cleaner config, clock), and scans on its own otherwise, saying
why in its metadata. Runs of ``cleaner_audit`` alone (its hourly schedule) and broker scans are
unchanged.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import AssetExecutionContext, AssetKey
from offsetops.assets.resources import OffsetsSourceResource, StateResource

if TYPE_CHECKING:
    from offsetops.coordinator_core.cleaner.config import CleanerConfig
    from offsetops.coordinator_core.cleaner.model import PartitionAudit, PartitionFailure
    from offsetops.pipelines.reload_scan import CleanerScanRequest
    from offsetops.pipelines.source import LogDirListing
    from pyspark.sql import SparkSession

AUDIT_KEY = AssetKey("cleaner_audit")
FROM_RELOAD = "from the reload"
OWN_PASS = "own pass"


def run_cleaner_config(source: OffsetsSourceResource) -> "CleanerConfig":
    """The cleaner settings of the run model: the broker's, then the config file's (Kafka's defaults
    under them); the audit's own run config goes on top of these."""
    from offsetops.coordinator_core.cleaner.config import CleanerConfig

    run = source.settings()
    return CleanerConfig().layered(
        (run.broker_config, run.broker_config_source), (run.config_file_values, run.config_file_source)
    )


def reload_scan_file(state: StateResource) -> Path:
    """Where the reload writes the scan for the audit (the state dir: a shared volume, read back as
    untrusted input)."""
    return state.state_path / "reload-scan" / "cleaner-scan.json"


def _audits_log_dir(source: OffsetsSourceResource) -> bool:
    """Whether ``cleaner_audit`` reads this source's segment files on this machine."""
    return (
        bool(source.log_dir)
        and not source.is_live
        and not source.broker_scans_dir
        and "://" not in str(source.log_dir)
    )


def cleaner_scan_request(
    context: AssetExecutionContext, source: OffsetsSourceResource, state: StateResource
) -> "CleanerScanRequest | None":
    """The reload's scan request, when ``cleaner_audit`` runs after it in this run on the same files."""
    from offsetops.pipelines.reload_scan import CleanerScanRequest

    if not _audits_log_dir(source) or AUDIT_KEY not in context.job_def.asset_layer.selected_asset_keys:
        return None
    return CleanerScanRequest(
        run_id=context.run.run_id,
        config=run_cleaner_config(source),
        now_ms=source.clock().as_of_ms,
        output=reload_scan_file(state),
    )


def scans_from_reload(
    session: "SparkSession",
    listing: "LogDirListing",
    state: StateResource,
    *,
    run_id: str,
    config: "CleanerConfig",
    now_ms: int,
) -> tuple["dict[int, PartitionAudit | PartitionFailure] | None", str]:
    """The audits the reload of run ``run_id`` wrote for exactly these inputs, or None; and why."""
    from offsetops.pipelines.reload_scan import read_reload_scan, scan_identity
    from offsetops.pipelines.source import read_checkpoints

    checkpoints, _notes = read_checkpoints(session, listing)
    identity = scan_identity(run_id, listing, checkpoints, config, now_ms)
    return read_reload_scan(reload_scan_file(state), identity)


def scan_metadata(source: str, why: str) -> dict[str, Any]:
    """How ``cleaner_audit`` got its record scans: ``scan`` and ``scan_reason``."""
    return {"scan": source, "scan_reason": why}
