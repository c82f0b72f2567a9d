"""The cleaner audit's record scan, handed from ``coordinator_cache`` to ``cleaner_audit`` in one run.

When a run materializes both from the same log dir, the reload scans each segment in the pass that
folds it (:mod:`offsetops.pipelines.reload_scan`) and writes every partition's unjudged audit to
:func:`reload_scan_file`; ``cleaner_audit`` then judges those instead of reading the segments again.
It trusts the file only when it was written by this run from the inputs the audit would read itself
(partitions, segment files, checkpoints, cleaner config, clock), and scans on its own otherwise, saying
why in its metadata. Runs of ``cleaner_audit`` alone (its hourly schedule) and broker scans are
unchanged.
"""

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import AssetExecutionContext, AssetKey
from offsetops.assets.resources import OffsetsSourceResource, StateResource

if TYPE_CHECKING:
    from offsetops.coordinator_core.cleaner.config import CleanerConfig
    from offsetops.coordinator_core.cleaner.model import PartitionAudit, PartitionFailure
    from offsetops.coordinator_core.cleaner.scan_resume import ScanRiders
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


def resumed_scan_riders(
    source: OffsetsSourceResource,
    partitions: list[int],
    request: "CleanerScanRequest",
) -> "tuple[ScanRiders, Callable[[], dict[int, dict[str, Any]]]] | None":
    """The cleaner scan of a reload read through the resume state (``assets/reload_resume.py``): riders
    that go on with each partition's fold (``cleaner.scan_resume``), and what then writes their audits
    to :func:`reload_scan_file`, stamped as the Spark pass stamps its own (``scan_identity`` of the
    same listing and checkpoints the audit reads), and gives each partition's scan facts. None when no
    partition of the run has segments. The log dir is a local one: its listing and checkpoints are read
    on the driver, without Spark."""
    import dataclasses

    from offsetops.coordinator_core.cleaner.scan_resume import ScanRiders
    from offsetops.pipelines.reload_scan import ScanMerger, plan_scan, scan_identity, write_reload_scan
    from offsetops.pipelines.source import list_log_dir, read_checkpoints

    wanted = set(partitions)
    present = [
        pd.partition for pd in source.open_log_dir().partitions if pd.segments and pd.partition in wanted
    ]
    if not present:
        return None
    listing = list_log_dir(None, str(source.log_dir), partitions=present)
    checkpoints, _notes = read_checkpoints(None, listing)  # an unusable file: the audit notes it
    plan = plan_scan(listing, checkpoints, request)
    limit = source.settings()["max_batch_bytes"]
    riders = ScanRiders({p: dataclasses.replace(i, max_batch_bytes=limit) for p, i in plan.inputs.items()})
    identity = scan_identity(
        request.run_id, listing, checkpoints, request.config, request.now_ms, request.verify_crc
    )

    def finish() -> dict[int, dict[str, Any]]:
        merger = ScanMerger(plan)
        outcomes = riders.outcomes()
        write_reload_scan(request.output, identity, {p: merger.entry(p, o.scan) for p, o in outcomes.items()})
        return {p: o.facts() for p, o in outcomes.items()}

    return riders, finish


def scan_metadata(source: str, why: str) -> dict[str, Any]:
    """How ``cleaner_audit`` got its record scans: ``scan`` and ``scan_reason``."""
    return {"scan": source, "scan_reason": why}
