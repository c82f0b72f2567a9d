"""Cleaner audit domain: Log Cleaner health of each ``__consumer_offsets`` partition, hourly.

The verdict (HEALTHY / DEGRADED / CRITICAL) and its reasons come from
:func:`offsetops.coordinator_core.cleaner.audit.audit_log_dir`. Each Dagster partition's materialization
carries that partition's facts only; the asset emits a ``partition_verdict`` check result per partition and a
``cleaner_verdict`` result for the run (``checks/dagster_checks.py``). Topic-wide figures live in the
``offsets_topic_summary`` asset.
"""

import dataclasses
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from dagster import (
    AssetExecutionContext,
    AssetSelection,
    BackfillPolicy,
    Config,
    Definitions,
    Failure,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    ScheduleEvaluationContext,
    asset,
    define_asset_job,
    schedule,
)
from offsetops.assets.metadata import clock_metadata, record_bytes_read, settings_metadata, write_json
from offsetops.assets.partitions import (
    OFFSETS_PARTITIONS,
    all_partitions_tags,
    partitions_label,
    run_partitions,
    scope_metadata,
)
from offsetops.assets.reload import coordinator_cache, raw_segments
from offsetops.assets.reload_scan import (
    FROM_RELOAD,
    OWN_PASS,
    run_cleaner_config,
    scan_metadata,
    scans_from_reload,
)
from offsetops.assets.resources import SCHEDULE_STATUS, OffsetsSourceResource, SparkResource, StateResource
from offsetops.checks.dagster_checks import (
    AUDIT_ASSET,
    CLEANER_VERDICT,
    PARTITION_VERDICT,
    VERDICT_RANK,
    audit_check_specs,
    cleaner_verdict_result,
    findings_table,
    is_selected,
    partition_evaluations,
    partition_verdict,
    restate_worst,
    worst_reason,
)
from offsetops.coordinator_core.cleaner.model import CRITICAL, DEGRADED, HEALTHY, PartitionAudit, format_bytes
from offsetops.coordinator_core.clock import Clock
from offsetops.coordinator_core.escape import for_log
from offsetops.coordinator_core.failover import (
    DEFAULT_SLOW_MS,
    ObservedLoad,
    forecast_failover,
    loads_from_audit,
    read_load_logs,
)
from offsetops.coordinator_core.findings import worst_first
from offsetops.coordinator_core.sources.replicas import ReplicaChoice
from offsetops.coordinator_core.timefmt import format_duration
from offsetops.coordinator_core.untrusted import read_regular_file
from pydantic import Field

GROUP = "cleaner_audit"
AUDIT_REPORT = "cleaner_audit.json"


class CleanerAuditConfig(Config):
    """Broker settings the cleaner runs with, and verdict thresholds (defaults: Kafka's and ours)."""

    cleaner_config: dict[str, str] = Field(
        default_factory=dict,
        description="Kafka config keys, e.g. log.cleaner.dedupe.buffer.size, min.cleanable.dirty.ratio.",
    )
    thresholds: dict[str, str] = Field(
        default_factory=dict, description="Threshold overrides by name, e.g. hanging_transaction_ms."
    )
    record_history: bool = Field(
        default=True, description="Append this audit to the history in the state dir."
    )
    failover_threshold_ms: int = Field(
        default=DEFAULT_SLOW_MS,
        gt=0,
        description="Flag partitions whose replay after a coordinator failover would take longer.",
    )
    broker_logs: list[str] = Field(
        default_factory=list,
        description="Broker server.log files: their 'Finished loading ... __consumer_offsets-N' lines "
        "calibrate the failover forecast (else an assumed 20 MiB/s).",
    )


def partition_metadata(partition: int, pa: PartitionAudit | None) -> dict[str, Any]:
    """This partition's own facts, and nothing else: the same keys for every partition and every run,
    numbers as numbers (the Plots tab draws them per partition over runs) with a human twin beside
    them."""
    if pa is None:
        return {
            "verdict": HEALTHY,
            "verdict_rank": MetadataValue.int(0),
            "worst_finding": "none: no segment files for this partition in the log dir",
            "remedy": "none",
            "findings": findings_table([]),
            "present": False,
            **{key: MetadataValue.int(0) for key in _INT_FACTS},
            **{key: MetadataValue.float(0.0) for key in _FLOAT_FACTS},
            "size": format_bytes(0),
            "reclaimable": format_bytes(0),
            "oldest_open_transaction": "none",
            "oldest_dirty_segment_age": "none",
            "eligible": False,
        }
    reason = worst_reason(pa)
    oldest_txn = max((t.age_ms for t in pa.open_transactions), default=0)
    dirty_age = pa.oldest_dirty_segment_age_ms or 0
    return {
        "verdict": pa.verdict,
        "verdict_rank": MetadataValue.int(VERDICT_RANK[pa.verdict]),
        "worst_finding": f"{reason.severity} {reason.code}: {reason.message}" if reason else "none",
        "remedy": reason.remedy if reason else "none",
        "findings": findings_table(pa.reasons),
        "present": True,
        "dirty_ratio": MetadataValue.float(round(pa.dirty_ratio, 6)),
        "unpinned_dirty_ratio": MetadataValue.float(round(pa.unpinned_dirty_ratio, 6)),
        "reclaimable_ratio": MetadataValue.float(round(pa.reclaimable_ratio, 6)),
        "size_bytes": MetadataValue.int(pa.size_bytes),
        "size": format_bytes(pa.size_bytes),
        "cleanable_bytes": MetadataValue.int(pa.cleanable_bytes),
        "reclaimable_bytes": MetadataValue.int(pa.reclaimable_bytes),
        "reclaimable": format_bytes(pa.reclaimable_bytes),
        "segments": MetadataValue.int(pa.segments),
        "data_records": MetadataValue.int(pa.records),
        "tombstones": MetadataValue.int(pa.tombstones),
        "expired_tombstones": MetadataValue.int(pa.expired_tombstones),
        "log_start_offset": MetadataValue.int(pa.log_start_offset),
        "log_end_offset": MetadataValue.int(pa.log_end_offset),
        "first_dirty_offset": MetadataValue.int(pa.first_dirty_offset),
        "open_transactions": MetadataValue.int(len(pa.open_transactions)),
        "oldest_open_transaction_ms": MetadataValue.int(oldest_txn),
        "oldest_open_transaction": format_duration(oldest_txn) if pa.open_transactions else "none",
        "oldest_dirty_segment_age_ms": MetadataValue.int(dirty_age),
        "oldest_dirty_segment_age": format_duration(dirty_age) if pa.oldest_dirty_segment_age_ms else "none",
        "decode_errors": MetadataValue.int(len(pa.decode_errors)),
        "eligible": pa.eligible,
    }


_INT_FACTS = (
    "size_bytes",
    "cleanable_bytes",
    "reclaimable_bytes",
    "segments",
    "data_records",
    "tombstones",
    "expired_tombstones",
    "log_start_offset",
    "log_end_offset",
    "first_dirty_offset",
    "open_transactions",
    "oldest_open_transaction_ms",
    "oldest_dirty_segment_age_ms",
    "decode_errors",
)
_FLOAT_FACTS = ("dirty_ratio", "unpinned_dirty_ratio", "reclaimable_ratio")


def _latest_dir(state: StateResource) -> Path:
    return state.audit_history_dir / "latest"


def _record_latest(
    state: StateResource,
    audit: Any,
    partitions: list[int],
    clock: Clock,
    settings: dict[str, Any] | None = None,
) -> None:
    """Keep each partition's latest audit (and the latest topic-wide findings) in the state dir."""
    folder = _latest_dir(state)
    rows: dict[int, list[PartitionAudit]] = {}
    for pa in audit.partitions:
        rows.setdefault(pa.partition, []).append(pa)
    for p in partitions:
        # one file per copy when several brokers are audited (each broker's cleaner acts on its own)
        for old in [folder / f"partition-{p}.json", *folder.glob(f"partition-{p}-broker-*.json")]:
            old.unlink(missing_ok=True)  # no segment files any more, or the layout changed
        for pa in rows.get(p, []):
            name = (
                f"partition-{p}.json" if pa.broker_id is None else f"partition-{p}-broker-{pa.broker_id}.json"
            )
            write_json(folder / name, pa.to_json())
    doc = audit.to_json()
    write_json(
        folder / "topic.json",
        {
            "reasons": doc["reasons"],
            "log_dir": doc["log_dir"],
            "audited_at_ms": doc["audited_at_ms"],
            "clock": clock.describe(),
            "config": doc["config"],
            "thresholds": doc["thresholds"],
            "notes": doc["notes"],
            "settings": settings,
        },
    )


def _largest_copies(partitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    largest: dict[int, dict[str, Any]] = {}
    for d in partitions:
        if d["partition"] not in largest or d["size_bytes"] > largest[d["partition"]]["size_bytes"]:
            largest[d["partition"]] = d
    return list(largest.values())


def rebuild_audit_report(
    state: StateResource,
    failover_threshold_ms: int = DEFAULT_SLOW_MS,
    observed_loads: list[ObservedLoad] | None = None,
) -> dict[str, Any]:
    """``reports/cleaner_audit.json``: the latest audit of every partition, worst first, merged across
    runs (a one-partition run from the UI replaces only that partition), with the coordinator failover
    forecast of those partitions (from the audit's own scan)."""
    folder = _latest_dir(state)
    topic = (
        json.loads(read_regular_file(folder / "topic.json", kind="report"))
        if (folder / "topic.json").exists()
        else {}
    )
    partitions = [json.loads(read_regular_file(p, kind="report")) for p in folder.glob("partition-*.json")]
    partitions = worst_first(partitions)
    reasons = topic.get("reasons", [])
    verdict = max(
        [r["severity"] for r in reasons] + [d["verdict"] for d in partitions] + [HEALTHY],
        key=lambda v: VERDICT_RANK.get(v, 0),
    )
    total = sum(d["size_bytes"] for d in partitions)
    reclaim = sum(d["reclaimable_bytes"] for d in partitions)
    report = {
        "verdict": verdict,
        "reasons": reasons,
        "log_dir": topic.get("log_dir"),
        "audited_at_ms": topic.get("audited_at_ms"),
        "clock": topic.get("clock"),
        "summary": {
            "partitions": len(partitions),
            "healthy": sum(d["verdict"] == HEALTHY for d in partitions),
            "degraded": sum(d["verdict"] == DEGRADED for d in partitions),
            "critical": sum(d["verdict"] == CRITICAL for d in partitions),
            "size_bytes": total,
            "reclaimable_bytes": reclaim,
            "reclaimable_ratio": round(reclaim / total, 6) if total else 0.0,
            "max_dirty_ratio": max((d["dirty_ratio"] for d in partitions), default=0.0),
            "open_transactions": sum(len(d["open_transactions"]) for d in partitions),
        },
        "partitions": partitions,
        "config": topic.get("config"),
        "thresholds": topic.get("thresholds"),
        "notes": topic.get("notes", []),
        "settings": topic.get("settings"),
        # With several brokers each partition has a copy per broker: a new leader replays its own, so
        # the forecast takes the largest copy (the slowest load the failover can meet).
        "failover": forecast_failover(
            loads_from_audit(_largest_copies(partitions)),
            observed=observed_loads or [],
            threshold_ms=failover_threshold_ms,
        ).to_json(),
    }
    write_json(state.reports_path / AUDIT_REPORT, report)
    return report


def replica_metadata(choice: ReplicaChoice | None) -> dict[str, Any]:
    """With several brokers: which broker's copy a reload reads and why, each copy's verdict row being
    in the report; the partition's facts above are its worst copy's."""
    if choice is None:
        return {}
    return {
        "read_from_broker": MetadataValue.int(choice.chosen.broker_id),
        "replica_choice": choice.reason,
        "copies_on_brokers": ", ".join(str(c.broker_id) for c in choice.copies),
        "divergent_copies": MetadataValue.int(len(choice.divergences)),
    }


class _Copy(Protocol):
    @property
    def partition(self) -> int: ...
    @property
    def verdict(self) -> str: ...
    @property
    def broker_id(self) -> int | None: ...


_C = TypeVar("_C", bound=_Copy)


def worst_copy(rows: Iterable[_C]) -> dict[int, _C]:
    """Each partition's row, or with several brokers its worst copy (ties: the lowest broker id): a
    partition is as healthy as the least healthy cleaner acting on it."""
    out: dict[int, _C] = {}
    for pa in sorted(rows, key=lambda r: (-VERDICT_RANK[r.verdict], r.broker_id or 0)):
        out.setdefault(pa.partition, pa)
    return out


def _cleaner_inputs(offsets_source: OffsetsSourceResource, config: CleanerAuditConfig) -> tuple[Any, Any]:
    """The cleaner config (the broker's and the config file's under this run's values) and the verdict
    thresholds."""
    from offsetops.coordinator_core.cleaner.model import Thresholds

    try:
        cleaner = run_cleaner_config(offsets_source).with_values(config.cleaner_config, source="user")
        return cleaner, Thresholds().with_overrides(config.thresholds)
    except ValueError as exc:
        raise Failure(f"CleanerAuditConfig: {exc}") from exc


def _audit(
    offsets_source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
    config: CleanerAuditConfig,
    partitions: list[int],
    clock: Clock,
    run_id: str,
) -> tuple[Any, dict[str, Any]]:
    """The audit of this run's partitions: from the broker scans when a scans dir is configured, else of
    the one log dir mounted here; and where its record scans came from (:func:`scan_metadata`)."""
    from offsetops.coordinator_core.cleaner.collect import audit_broker_scans, read_broker_scans
    from offsetops.coordinator_core.sources.logdir import LogDirError
    from offsetops.pipelines.source import InputPathError

    scans_dir = offsets_source.broker_scans_dir
    if not offsets_source.log_dir and not scans_dir:
        raise Failure(
            "the cleaner audit reads segment files: set OffsetsSourceResource.broker_scans_dir (where the "
            "per-broker `offsetops broker-scan` collectors write) or log_dir (a broker's data volume)"
        )
    cleaner, thresholds = _cleaner_inputs(offsets_source, config)
    try:
        if scans_dir:
            audit = audit_broker_scans(
                read_broker_scans(scans_dir),
                config=cleaner,
                thresholds=thresholds,
                now_ms=clock.as_of_ms,
                state_dir=state.audit_history_dir,
                record_history=config.record_history,
                partitions=partitions,
            )
            return audit, scan_metadata("broker scans", f"the collectors' scans in {scans_dir}")
        judging = (cleaner, thresholds, clock, run_id)
        return _audit_log_dir(offsets_source, spark, state, config, partitions, judging)
    except (LogDirError, InputPathError) as exc:
        raise Failure(str(exc)) from exc


def _audit_log_dir(
    offsets_source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
    config: CleanerAuditConfig,
    partitions: list[int],
    judging: tuple[Any, Any, Clock, str],
) -> tuple[Any, dict[str, Any]]:
    """The audit of the one log dir mounted here: the record scans this run's reload made of the same
    files (``assets/reload_scan.py``), else its own, as a Spark job; and which it was, and why."""
    from offsetops.coordinator_core.cleaner.audit import audit_log_dir
    from offsetops.pipelines.audit import partition_audits
    from offsetops.pipelines.source import list_log_dir

    logdir = offsets_source.open_log_dir()
    wanted = set(partitions)
    logdir = dataclasses.replace(
        logdir, partitions=tuple(pd for pd in logdir.partitions if pd.partition in wanted)
    )
    present = [pd.partition for pd in logdir.partitions if pd.segments]
    cleaner, thresholds, clock, run_id = judging
    scans: Any = {}
    how = scan_metadata("none", "no partition of this run has segment files")
    if present:
        session = spark.get_session()
        listing = list_log_dir(session, str(offsets_source.log_dir), partitions=present)
        scans, why = scans_from_reload(
            session, listing, state, run_id=run_id, config=cleaner, now_ms=clock.as_of_ms
        )
        how = scan_metadata(FROM_RELOAD, why)
        if scans is None:
            scans = partition_audits(session, listing, now_ms=clock.as_of_ms, config=cleaner)
            how = scan_metadata(OWN_PASS, why)
    audit = audit_log_dir(
        logdir,
        config=cleaner,
        thresholds=thresholds,
        now_ms=clock.as_of_ms,
        state_dir=state.audit_history_dir,
        record_history=config.record_history,
        partition_audits=scans,
    )
    return audit, how


@asset(
    group_name=GROUP,
    partitions_def=OFFSETS_PARTITIONS,
    backfill_policy=BackfillPolicy.single_run(),
    # after the reload: in a run of both, its pass scans the segments for this audit too
    deps=[raw_segments, coordinator_cache],
    kinds={"kafka", "spark"},
    check_specs=audit_check_specs(OFFSETS_PARTITIONS),
    description="Per partition (the topic's verdict is on offsets_topic_summary; the latest "
    "materialization shown here is the run's worst partition): Log Cleaner health of each partition: "
    "dirty ratio, what blocks cleaning, what a clean "
    "would reclaim, progress since the previous audit; verdict HEALTHY, DEGRADED or CRITICAL, with the "
    "worst finding and its remedy. Each partition fails its own partition_verdict check when it is not "
    "HEALTHY.",
)
def cleaner_audit(
    context: AssetExecutionContext,
    config: CleanerAuditConfig,
    offsets_source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
) -> Iterator[Any]:
    """Audit this run's partitions of the log dir; partitions absent from it are HEALTHY and empty.

    The record scans (the costly part: every record is read) run as a Spark job, one task per group of
    partitions; history, broker-log marks and verdicts are applied here.
    """
    partitions = run_partitions(context)
    state.ensure()
    clock = offsets_source.clock()
    audit, how = _audit(offsets_source, spark, state, config, partitions, clock, context.run.run_id)
    run = offsets_source.settings()
    doc = {
        **audit.to_json(),
        "run_partitions": partitions,
        "clock": clock.describe(),
        "settings": run.to_json(),
    }
    run_report = write_json(
        state.reports_path / "cleaner_audit" / f"audit-{partitions_label(partitions)}.json", doc
    )
    _record_latest(state, audit, partitions, clock, run.to_json())
    try:
        observed = read_load_logs(config.broker_logs)
    except OSError as exc:
        raise Failure(f"CleanerAuditConfig.broker_logs: {exc}") from exc
    report = rebuild_audit_report(state, config.failover_threshold_ms, observed)
    by_partition = worst_copy(audit.partitions)
    # The record scans read every segment file of the log dir whole; broker scans were read elsewhere,
    # and the reload's pass read them for this audit.
    bytes_read = {p: 0 for p in partitions}
    if how["scan"] == OWN_PASS:
        for pa in audit.partitions:
            bytes_read[pa.partition] = bytes_read.get(pa.partition, 0) + pa.size_bytes
    read_meta = record_bytes_read(state.reports_path, "cleaner_audit", context.run.run_id, bytes_read)
    run_facts = {
        **clock_metadata(clock),
        **settings_metadata(run),
        "run_report": MetadataValue.path(str(run_report)),
        "report": MetadataValue.path(str(state.reports_path / AUDIT_REPORT)),
        **read_meta,
        **how,
    }
    choices = {c.partition: c for c in audit.replicas or []}
    metas = {}
    for p in partitions:
        # The partition's verdict first, then how it was evaluated: the UI lists keys in this order.
        metas[p] = {
            **scope_metadata(p),
            **partition_metadata(p, by_partition.get(p)),
            **replica_metadata(choices.get(p)),
            "bytes_read": MetadataValue.int(bytes_read.get(p, 0)),
            **run_facts,
        }
        context.add_asset_metadata(metas[p], partition_key=str(p))
    summary = doc["summary"]
    context.log.info(
        f"cleaner audit as of {for_log(clock.describe())}: {audit.verdict}, {summary['critical']} critical, "
        f"{summary['degraded']} degraded of {len(partitions)} partitions"
    )
    yield MaterializeResult(
        check_results=[cleaner_verdict_result(audit.partitions, audit.reasons, partitions, audit.verdict)]
        if is_selected(context, AUDIT_ASSET, CLEANER_VERDICT)
        else [],
    )
    worst = next((pa.partition for pa in worst_first(by_partition.values()) if pa.verdict != HEALTHY), None)
    if worst is not None and len(partitions) > 1:
        restate_worst(context, AUDIT_ASSET, worst, metas[worst])
    yield from partition_evaluations(
        context,
        AUDIT_ASSET,
        PARTITION_VERDICT,
        (partition_verdict(p, by_partition.get(p)) for p in partitions),
    )
    context.log.debug(f"merged audit report: {report['summary']}")


cleaner_audit_job = define_asset_job(
    "cleaner_audit_job",
    # The topic summary and the published metrics are rebuilt after every audit, so neither lags it.
    selection=AssetSelection.assets(cleaner_audit)
    | AssetSelection.assets("offsets_topic_summary")
    | AssetSelection.assets("offsets_metrics"),
    partitions_def=OFFSETS_PARTITIONS,
    description="The Log Cleaner audit of every partition (read-only).",
)


@schedule(
    job=cleaner_audit_job,
    cron_schedule="15 * * * *",
    execution_timezone="UTC",
    default_status=SCHEDULE_STATUS,
    description="Hourly at :15: the cleaner audit of every partition in one run.",
)
def hourly_cleaner_audit(context: ScheduleEvaluationContext) -> RunRequest:
    """One run over every partition."""
    when = context.scheduled_execution_time
    return RunRequest(run_key=f"cleaner-audit-{when:%Y%m%d%H}" if when else None, tags=all_partitions_tags())


defs = Definitions(
    assets=[cleaner_audit],
    jobs=[cleaner_audit_job],
    schedules=[hourly_cleaner_audit],
)
