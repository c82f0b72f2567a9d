"""Expiration domain: the cleanup plan and forecast, and the opt-in tombstone execution.

``expiration_plan`` is what ``GroupMetadataManager.cleanupGroupMetadata`` would do now (the dry run)
plus the offsets that expire within the forecast window. ``tombstone_execution`` is never scheduled:
by default it only reports what it would write; an operator opts in per run with ``mode: segment``
(an offline copy of the log dir) or ``mode: admin`` plus ``confirm: true`` (the live cluster).

Why one module of about 600 lines: the two assets share the per-partition plan documents they write
and read, and the schedule that runs the plan; split, each half would import the other's internals.
"""

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

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
from offsetops.assets.metadata import clock_metadata, run_config_flags, settings_metadata, write_json
from offsetops.assets.partitions import (
    OFFSETS_PARTITIONS,
    all_partitions_tags,
    partitions_label,
    run_partitions,
    scope_metadata,
)
from offsetops.assets.published_tables import published_caches
from offsetops.assets.reload import coordinator_cache
from offsetops.assets.resources import (
    SCHEDULE_STATUS,
    OffsetsSourceResource,
    SparkResource,
    StateResource,
)
from offsetops.checks.alerting.evidence import partition_plan_doc
from offsetops.checks.dagster_checks import (
    EXPIRATION_ASSET,
    FORECAST_CHECK,
    GROUPS_AT_RISK_COLUMNS,
    expiration_check_specs,
    forecast_check,
    groups_at_risk,
    partition_evaluations,
    restate_worst,
    table,
)
from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.clock import Clock
from offsetops.coordinator_core.errors import count_errors
from offsetops.coordinator_core.escape import for_log
from offsetops.coordinator_core.expiration import (
    COORDINATORS,
    DeadGroup,
    ExpirationPlan,
    ForecastEntry,
    Tombstone,
    plan_for_run,
)
from offsetops.coordinator_core.run import RunSettings
from offsetops.coordinator_core.timefmt import format_duration
from offsetops.coordinator_core.tombstones.factory import (
    ExecutorRequest,
    MissingInput,
    apply_plan,
    executor_for,
)
from offsetops.coordinator_core.untrusted import read_regular_file
from pydantic import Field, field_validator, model_validator

GROUP = "expiration"
PLAN_REPORT = "expiration_plan.json"
MS_PER_HOUR = 3_600_000


class ExpirationConfig(Config):
    """The broker settings cleanup follows, and how far ahead to forecast; unset, each comes from the
    run model (``$OFFSETOPS_*``, the config file, the broker's configuration, Kafka's defaults)."""

    retention_minutes: int | None = Field(
        default=None,
        ge=1,
        description="offsets.retention.minutes (default: $OFFSETOPS_RETENTION_MINUTES, the config file, "
        "server.properties, else Kafka's default for the broker version).",
    )
    coordinator: str | None = Field(
        default=None,
        description="kip848: Kafka 4.x Java coordinator; legacy: Scala coordinator (<= 3.x); default from "
        "$OFFSETOPS_COORDINATOR, else the broker version.",
    )
    forecast_horizon_hours: float | None = Field(
        default=None,
        gt=0,
        le=24 * 366,
        description="Forecast window in hours (default $OFFSETOPS_FORECAST_HOURS, else 24).",
    )

    @field_validator("coordinator")
    @classmethod
    def _coordinator(cls, value: str | None) -> str | None:
        if value is not None and value not in COORDINATORS:
            raise ValueError(f"coordinator must be one of {', '.join(COORDINATORS)}, got {value!r}")
        return value

    def flags(self) -> dict[str, tuple[Any, str]]:
        """The values this run config sets, as run-model flags."""
        return run_config_flags(
            self,
            "ExpirationConfig",
            {
                "retention_minutes": "retention_minutes",
                "coordinator": "coordinator",
                "forecast_hours": "forecast_horizon_hours",
            },
        )


def _partition_plan_path(state: StateResource, partition: int) -> Path:
    return state.expiration_plans_dir / f"partition-{partition}.json"


def _rebuild_report(state: StateResource) -> dict[str, Any]:
    """``reports/expiration_plan.json``: every partition's latest plan, merged."""
    folder = state.expiration_plans_dir
    parts = (
        sorted(folder.glob("partition-*.json"), key=lambda p: int(p.stem.split("-")[1]))
        if folder.exists()
        else []
    )
    docs = [json.loads(read_regular_file(p, kind="report")) for p in parts]
    report: dict[str, Any] = {
        "partitions": [d["partition"] for d in docs],
        "tombstones": [t for d in docs for t in d["tombstones"]],
        "dead_groups": [g for d in docs for g in d["dead_groups"]],
        "forecast": sorted((f for d in docs for f in d["forecast"]), key=lambda f: f["expires_at"]),
        "planned": [
            {
                k: d[k]
                for k in (
                    "partition",
                    "now_ms",
                    "retention_ms",
                    "coordinator",
                    "forecast_horizon_ms",
                    "errors",
                )
            }
            for d in docs
        ],
    }
    report["settings"] = docs[-1].get("settings") if docs else None
    report["summary"] = {
        "offset_tombstones": sum(t["kind"] == "offset_commit" for t in report["tombstones"]),
        "group_tombstones": sum(t["kind"] != "offset_commit" for t in report["tombstones"]),
        "dead_groups": len(report["dead_groups"]),
        "forecast_offsets": len(report["forecast"]),
        "forecast_groups": len({f["group_id"] for f in report["forecast"]}),
    }
    write_json(state.reports_path / PLAN_REPORT, report)
    return report


@asset(
    group_name=GROUP,
    partitions_def=OFFSETS_PARTITIONS,
    backfill_policy=BackfillPolicy.single_run(),
    deps=[coordinator_cache],
    kinds={"python"},
    check_specs=expiration_check_specs(OFFSETS_PARTITIONS),
    description="What offset cleanup (cleanupGroupMetadata) would delete now, and which offsets "
    "expire within the forecast window. A dry run: nothing is written to Kafka.",
)
def expiration_plan(
    context: AssetExecutionContext,
    config: ExpirationConfig,
    offsets_source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
) -> Iterator[Any]:
    """Plan one cleanup pass over this run's partitions, as of the run's clock.

    The plan is made from the cache tables ``coordinator_cache`` wrote, not by reading the log again.
    """
    partitions = run_partitions(context)
    state.ensure()
    clock = offsets_source.clock()
    run = offsets_source.settings(config.flags())
    hours = run["forecast_hours"]
    published = published_caches(
        spark.get_session, state, partitions, offsets_source.settings()["num_partitions"]
    )
    caches = published.caches
    plan = plan_for_run(caches, run, now_ms=clock.as_of_ms)
    report_path = _write_plan(state, plan, caches, partitions, run=run, clock=clock, run_id=context.run_id)
    errors = {c.partition: count_errors(c.stats.errors) for c in caches}  # notices are not errors
    by_partition = _by_partition(plan, partitions)
    caches_by_partition = {c.partition: c for c in caches}
    run_facts = {
        **clock_metadata(clock),
        "retention_minutes": MetadataValue.float(float(run["retention_minutes"])),
        "coordinator": run["coordinator"],
        "forecast_horizon_hours": MetadataValue.float(float(hours)),
        "tables_read_by": published.read_by,
        **settings_metadata(run),
        "plan": MetadataValue.path(str(report_path)),
        "report": MetadataValue.path(str(state.reports_path / PLAN_REPORT)),
    }
    checks = []
    metas: dict[int, dict[str, Any]] = {}
    soonest: dict[int, int] = {}
    for p in partitions:
        cache = caches_by_partition.get(p)
        at_risk = groups_at_risk(by_partition[p].forecast)
        # The partition's own plan first, then how it was made: the UI lists keys in this order.
        metas[p] = {
            **scope_metadata(p),
            **plan_metadata(by_partition[p], at_risk, cache, errors.get(p, 0)),
            **run_facts,
        }
        context.add_asset_metadata(metas[p], partition_key=str(p))
        checks.append(forecast_check(p, at_risk, hours))
        if at_risk:
            soonest[p] = min(int(g["first_expiry_in_ms"]) for g in at_risk)
    offset_tombs = sum(t.kind == "offset_commit" for t in plan.tombstones)
    context.log.info(
        f"plan as of {for_log(clock.describe())}: {offset_tombs} offset tombstones, "
        f"{len(plan.dead_groups)} dead groups, {len(plan.forecast)} offsets of "
        f"{len({f.group_id for f in plan.forecast})} groups expire within {hours}h; "
        f"{for_log(run.summary())}"
    )
    yield MaterializeResult()
    # the partition whose groups lose offsets soonest is "the latest" its pages show
    worst = min(soonest, key=lambda p: (soonest[p], p), default=None)
    if worst is not None and len(partitions) > 1:
        restate_worst(context, EXPIRATION_ASSET, worst, metas[worst])
    yield from partition_evaluations(context, EXPIRATION_ASSET, FORECAST_CHECK, checks)


@dataclass
class PartitionPlan:
    """The part of a cleanup plan that concerns one offsets partition."""

    tombstones: list[Tombstone] = field(default_factory=list)
    dead_groups: list[DeadGroup] = field(default_factory=list)
    forecast: list[ForecastEntry] = field(default_factory=list)


def _partition_of(item: Any) -> int:
    """The offsets partition of a plan item: planned from caches, every item names it."""
    assert item.offsets_partition is not None
    return int(item.offsets_partition)


def _write_plan(
    state: StateResource,
    plan: ExpirationPlan,
    caches: list[CoordinatorCache],
    partitions: list[int],
    *,
    run: RunSettings,
    clock: Clock,
    run_id: str,
) -> Path:
    """Each partition's share of the plan (what tombstone_execution replays), the merged report, and
    this run's plan report, whose path is returned."""
    for cache in caches:
        if cache.partition in partitions:
            write_json(
                _partition_plan_path(state, cache.partition),
                {**partition_plan_doc(plan, cache, run_id=run_id), "settings": run.to_json()},
            )
    _rebuild_report(state)
    return write_json(
        state.reports_path / "expiration" / f"plan-{partitions_label(partitions)}.json",
        {
            **plan.to_json(),
            "partitions": partitions,
            "as_of": clock.iso,
            "clock": clock.describe(),
            "settings": run.to_json(),
        },
    )


def _by_partition(plan: ExpirationPlan, partitions: list[int]) -> dict[int, PartitionPlan]:
    """The plan cut per offsets partition."""
    out: dict[int, PartitionPlan] = {p: PartitionPlan() for p in partitions}
    for t in plan.tombstones:
        out[_partition_of(t)].tombstones.append(t)
    for d in plan.dead_groups:
        out[_partition_of(d)].dead_groups.append(d)
    for f in plan.forecast:
        out[_partition_of(f)].forecast.append(f)
    return out


def _groups_losing_offsets(part: PartitionPlan) -> list[dict[str, Any]]:
    """Groups whose committed offsets the next cleanup deletes, the most offsets first."""
    dead = {d.group_id: d for d in part.dead_groups}
    groups: dict[str, dict[str, Any]] = {}
    for t in part.tombstones:
        if t.kind != "offset_commit":
            continue
        g = groups.setdefault(
            t.group_id, {"group_id": t.group_id, "offsets": 0, "rule": t.reason, "oldest": 0}
        )
        g["offsets"] += 1
        g["oldest"] = max(g["oldest"], t.age_ms or 0)
    for gid in dead:
        groups.setdefault(gid, {"group_id": gid, "offsets": 0, "rule": dead[gid].reason, "oldest": 0})
    rows = sorted(groups.values(), key=lambda g: (-g["offsets"], g["group_id"]))
    return [
        {
            "group_id": g["group_id"],
            "offsets": g["offsets"],
            "group_goes_dead": g["group_id"] in dead,
            "rule": g["rule"],
            "oldest_commit_age": format_duration(g["oldest"]) if g["oldest"] else None,
        }
        for g in rows
    ]


def plan_metadata(
    part: PartitionPlan, at_risk: list[dict[str, Any]], cache: Any, errors: int
) -> dict[str, Any]:
    """This partition's own plan: the same keys for every partition and run (numbers as numbers)."""
    offset_tombs = [t for t in part.tombstones if t.kind == "offset_commit"]
    losing = _groups_losing_offsets(part)
    return {
        "groups": MetadataValue.int(len(cache.groups) if cache is not None else 0),
        "offsets": MetadataValue.int(cache.offset_count if cache is not None else 0),
        "offset_tombstones": MetadataValue.int(len(offset_tombs)),
        "group_tombstones": MetadataValue.int(len(part.tombstones) - len(offset_tombs)),
        "dead_groups": MetadataValue.int(len(part.dead_groups)),
        "groups_losing_offsets_now": MetadataValue.int(len({t.group_id for t in offset_tombs})),
        "forecast_offsets": MetadataValue.int(len(part.forecast)),
        "forecast_groups": MetadataValue.int(len(at_risk)),
        "next_expiry": f"{at_risk[0]['first_expiry_at']} (in {at_risk[0]['first_expiry_in']})"
        if at_risk
        else "none within the window",
        "groups_at_risk": table(GROUPS_AT_RISK_COLUMNS, at_risk),
        "groups_losing_offsets": table(
            (
                ("group_id", "string"),
                ("offsets", "int"),
                ("group_goes_dead", "bool"),
                ("rule", "string"),
                ("oldest_commit_age", "string"),
            ),
            losing,
        ),
        "errors": MetadataValue.int(errors),
    }


# -- tombstone execution (opt-in) ------------------------------------------------------------------


class TombstoneExecutionConfig(Config):
    """How (and whether) to write the planned tombstones. The default writes nothing."""

    mode: Literal["dry_run", "segment", "admin"] = Field(
        default="dry_run",
        description="dry_run: report only; segment: write tombstones into a copy of the log dir; "
        "admin: OffsetDelete/DeleteGroups on the live cluster (needs confirm).",
    )
    output_log_dir: str | None = Field(default=None, description="segment mode: where the copy goes.")
    confirm: bool = Field(default=False, description="admin mode: required, the deletes are real.")
    verify: bool = Field(default=True, description="Reload afterwards and report keys that are not gone.")

    @model_validator(mode="after")
    def _confirmed(self) -> "TombstoneExecutionConfig":
        if self.mode == "admin" and not self.confirm:
            raise ValueError("mode 'admin' deletes offsets on the live cluster: set confirm: true to proceed")
        return self


def _load_plan(state: StateResource, partitions: list[int]) -> tuple[ExpirationPlan, int]:
    docs = []
    for p in partitions:
        path = _partition_plan_path(state, p)
        if not path.exists():
            raise Failure(f"no expiration plan for partition {p} ({path}); materialize expiration_plan first")
        docs.append(json.loads(read_regular_file(path, kind="report")))
    heads = {(d["now_ms"], d["retention_ms"], d["coordinator"]) for d in docs}
    if len(heads) > 1:
        raise Failure(
            "the partitions' plans were made at different times or settings; re-plan them in one run"
        )
    now_ms, retention_ms, coordinator = heads.pop()
    plan = ExpirationPlan(now_ms, retention_ms, coordinator, docs[0]["forecast_horizon_ms"])
    plan.tombstones = [Tombstone.from_journal(t) for d in docs for t in d["tombstones"]]
    plan.partitions = list(partitions)
    return plan, sum(d["errors"] for d in docs)


#: how a Dagster deployment gives what an executor lacks (MissingInput.missing)
_HOW = {
    "log_dir": "segment mode writes into a copy of a log dir; OffsetsSourceResource.log_dir is not set",
    "cluster": "admin mode talks to the cluster; set OffsetsSourceResource.bootstrap_servers or "
    "client_config",
}


def _request(
    config: TombstoneExecutionConfig, source: OffsetsSourceResource, state: StateResource
) -> ExecutorRequest:
    """The executor request of this run: the resource's log dir or cluster, the segment copy in the state
    dir unless ``output_log_dir`` says where."""
    return ExecutorRequest(
        config.mode,
        log_dir=source.log_dir or None,
        cluster=lambda _bootstrap: source.kafka_config() if source.is_live else None,
        output_dir=config.output_log_dir or str(state.state_path / "tombstoned-logdir"),
        semantics=source.settings()["semantics"],
    )


def _executor(
    config: TombstoneExecutionConfig, source: OffsetsSourceResource, state: StateResource, coordinator: str
) -> Any:
    """The executor this run's config and resources ask for (the core's factory builds it)."""
    try:
        return executor_for(_request(config, source, state))
    except MissingInput as exc:
        raise Failure(_HOW[exc.missing]) from None


@asset(
    group_name=GROUP,
    partitions_def=OFFSETS_PARTITIONS,
    backfill_policy=BackfillPolicy.single_run(),
    deps=[expiration_plan],
    kinds={"kafka"},
    description="Opt-in: write the planned tombstones (journaled, resumable, verified). "
    "Never scheduled; the default mode only reports what would be written.",
)
def tombstone_execution(
    context: AssetExecutionContext,
    config: TombstoneExecutionConfig,
    offsets_source: OffsetsSourceResource,
    state: StateResource,
) -> MaterializeResult:
    """Apply (or, by default, only count) the latest plan's tombstones for this run's partitions."""
    from offsetops.coordinator_core.kafka_client import KafkaClientError
    from offsetops.coordinator_core.tombstones.journal import JournalError
    from offsetops.coordinator_core.tombstones.runner import ExecutorRefused, RunStopped

    partitions = run_partitions(context)
    plan, errors = _load_plan(state, partitions)
    by_kind = {
        "offset_tombstones": sum(t.kind == "offset_commit" for t in plan.tombstones),
        "group_tombstones": sum(t.kind != "offset_commit" for t in plan.tombstones),
    }
    base = {
        "mode": config.mode,
        "partitions": partitions_label(partitions),
        "planned_as_of": datetime.fromtimestamp(plan.now_ms / 1000, UTC).isoformat(timespec="seconds"),
        "items": len(plan.tombstones),
        "groups": len({t.group_id for t in plan.tombstones}),
        **by_kind,
        **settings_metadata(offsets_source.settings()),
    }
    if config.mode == "dry_run":
        context.log.info(f"dry run: {len(plan.tombstones)} tombstones would be written; set mode to execute")
        return MaterializeResult(metadata={**base, "applied": 0, "note": "dry run: nothing was written"})
    if errors:
        raise Failure(f"the plan was built on a reload with {errors} decode error(s); refusing to execute it")
    started = time.perf_counter()
    try:
        # One run per target at a time, as for `offsetops expire --execute` (a second is refused).
        report = apply_plan(
            plan,
            _request(config, offsets_source, state),
            journal_dir=state.journal_dir,
            source=offsets_source.describe(),
            verify=config.verify,
        )
    except MissingInput as exc:
        raise Failure(_HOW[exc.missing]) from None
    except RunStopped as exc:
        # One line, no traceback: the cluster is gone and the journal is ready to resume.
        raise Failure(f"tombstone execution stopped: {exc}; rematerialize to resume") from None
    except (JournalError, ExecutorRefused, ValueError, KafkaClientError) as exc:
        raise Failure(f"tombstone execution refused: {exc}") from None
    doc = report.to_json()
    path = write_json(state.reports_path / "expiration" / f"execution-{report.plan_id}.json", doc)
    outcomes = report.outcomes
    metadata = {
        **base,
        "plan_id": report.plan_id,
        "resumed": report.resumed,
        "applied": sum(n for s, n in outcomes.items() if s in ("applied", "already_absent")),
        "outcomes": MetadataValue.json(outcomes),
        "verified_not_gone": len(report.not_gone),
        "journal": MetadataValue.path(report.journal),
        "report": MetadataValue.path(str(path)),
        "elapsed_s": round(time.perf_counter() - started, 2),
    }
    if not report.complete or report.not_gone:
        raise Failure(
            f"tombstone execution incomplete: outcomes {outcomes}, {len(report.not_gone)} key(s) "
            f"still present; resume plan {report.plan_id}",
            metadata=metadata,
        )
    return MaterializeResult(metadata=metadata)


expiration_job = define_asset_job(
    "expiration_forecast_job",
    selection=AssetSelection.assets(expiration_plan) | AssetSelection.assets("offsets_topic_summary"),
    partitions_def=OFFSETS_PARTITIONS,
    description="Daily dry run: the expiration plan and forecast of every partition (writes nothing).",
)

tombstone_job = define_asset_job(
    "tombstone_execution_job",
    selection=[tombstone_execution],
    partitions_def=OFFSETS_PARTITIONS,
    description="Opt-in, manual only: write the planned tombstones (configure mode; dry_run by default).",
)


@schedule(
    job=expiration_job,
    cron_schedule="30 5 * * *",
    execution_timezone="UTC",
    default_status=SCHEDULE_STATUS,
    description="Daily at 05:30 UTC, after the reload: expiration dry run and forecast, all partitions "
    "in one run.",
)
def daily_expiration_forecast(context: ScheduleEvaluationContext) -> RunRequest:
    """One run over every partition."""
    return RunRequest(
        run_key=f"expiration-{context.scheduled_execution_time:%Y%m%d}"
        if context.scheduled_execution_time
        else None,
        tags=all_partitions_tags(),
    )


defs = Definitions(
    assets=[expiration_plan, tombstone_execution],
    jobs=[expiration_job, tombstone_job],
    schedules=[daily_expiration_forecast],
)
