"""Metrics domain: the numbers ``offsetops exporter`` serves, published by a Dagster asset.

``offsets_metrics`` runs after the topic summary. It computes the exporter's snapshot (lag and
out-of-range offsets, reload stats, cleaner audit, expiration risk, failover forecast) as of the run's
clock from what the run already published, never reading ``__consumer_offsets`` again: the caches
come back from the ``coordinator_cache`` tables, the cleaner figures from the merged cleaner audit
report. Only the data topics' log start and end offsets are looked up (their checkpoints and last
segments, or ListOffsets). Every metric family goes to a Prometheus textfile for node-exporter's
textfile collector (``--collector.textfile.directory``; written to a temporary file and renamed, so a
scrape never reads half a file), and the headline numbers to the asset's metadata under the metric
names, so the Dagster UI plots what Grafana charts.
"""

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from dagster import (
    AssetExecutionContext,
    Config,
    Definitions,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)
from offsetops.assets.cleaner_audit import AUDIT_REPORT, cleaner_audit, worst_copy
from offsetops.assets.metadata import bytes_read_by, run_config_flags, settings_metadata
from offsetops.assets.published_tables import published_caches
from offsetops.assets.reload import coordinator_cache
from offsetops.assets.resources import OffsetsSourceResource, SparkResource, StateResource
from offsetops.assets.summary import offsets_topic_summary
from offsetops.coordinator_core.escape import for_log
from offsetops.coordinator_core.expiration import DEFAULT_RETENTION_MS
from offsetops.coordinator_core.failover import DEFAULT_SLOW_MS
from offsetops.coordinator_core.metrics_snapshot import CleanerFigures, Families
from offsetops.coordinator_core.untrusted import read_regular_file
from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import Metric
from pydantic import Field

GROUP = "metrics"
TEXTFILE = "offsetops.prom"
ENV_TEXTFILE = "OFFSETOPS_METRICS_TEXTFILE"

#: Labelled families summed over their labels in the asset metadata (counts, bytes, lag) ...
SUMMED = (
    "offsetops_consumer_group_topic_partition_lag",
    "offsetops_consumer_group_offsets_out_of_range",
    "offsetops_expiration_offsets_at_risk",
    "offsetops_expiration_tombstones_due",
    "offsetops_reload_records",
    "offsetops_reload_bytes",
    "offsetops_reload_decode_errors",
    "offsetops_reload_groups",
    "offsetops_reload_offsets",
    "offsetops_coordinator_load_slow",
)
#: ... and these by their worst value (ratios, ages, load times, verdicts).
MAXED = (
    "offsetops_cleaner_partition_dirty_ratio",
    "offsetops_cleaner_partition_status",
    "offsetops_cleaner_partition_open_transaction_max_age_seconds",
    "offsetops_coordinator_load_estimated_seconds",
)


class MetricsConfig(Config):
    """Where the textfile goes and the expiration/failover settings the numbers are computed with."""

    textfile: str | None = Field(
        default=None,
        description="The .prom file for node-exporter's textfile collector (default "
        f"${ENV_TEXTFILE}, else reports/{TEXTFILE}).",
    )
    retention_minutes: int | None = Field(
        default=None,
        ge=1,
        description="offsets.retention.minutes (default: the run model: $OFFSETOPS_RETENTION_MINUTES, the "
        f"config file, server.properties, else Kafka's default, {DEFAULT_RETENTION_MS // 60_000}).",
    )
    forecast_horizon_hours: float | None = Field(
        default=None, gt=0, description="Forecast window (default $OFFSETOPS_FORECAST_HOURS, else 24)."
    )
    failover_threshold_ms: int = Field(default=DEFAULT_SLOW_MS, gt=0)
    granularity: Literal["partition", "topic"] = Field(
        default="partition",
        description="partition: lag per group and partition; topic: per group and topic only (fewer series).",
    )


def headline_metadata(families: Iterable[Metric]) -> dict[str, Any]:
    """Unlabelled gauges by name; the families of :data:`SUMMED` / :data:`MAXED` as ``sum(name)`` /
    ``max(name)`` (PromQL's spelling, so the key says what the number is)."""
    out: dict[str, Any] = {}
    for fam in families:
        values = [s.value for s in fam.samples if s.name == fam.name]
        if not values:
            continue
        if fam.name in SUMMED:
            out[f"sum({fam.name})"] = MetadataValue.float(float(sum(values)))
        elif fam.name in MAXED:
            out[f"max({fam.name})"] = MetadataValue.float(float(max(values)))
        elif len(values) == 1 and not fam.samples[0].labels:
            out[fam.name] = MetadataValue.float(float(values[0]))
    return out


def write_textfile(path: Path, families: list[Metric]) -> None:
    """The families in the text exposition format; ``write_to_textfile`` writes a temporary file in the
    same directory and renames it over ``path``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families(families))  # type: ignore[arg-type]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(path), registry)


def published_cleaner_figures(state: StateResource) -> CleanerFigures | None:
    """The merged cleaner audit report's figures (each partition's worst copy when several brokers'
    copies were audited), or None before any audit."""
    import json

    path = state.reports_path / AUDIT_REPORT
    if not os.path.lexists(path):
        return None
    try:
        figures = CleanerFigures.of_report(json.loads(read_regular_file(path, kind="report")))
    except ValueError as exc:  # JSONDecodeError included
        raise Failure(f"the cleaner audit report {for_log(path)} is not usable: {for_log(exc)}") from None
    return CleanerFigures(
        figures.verdict, tuple(sorted(worst_copy(figures.partitions).values(), key=lambda f: f.partition))
    )


@asset(
    group_name=GROUP,
    # It reads the published cache tables and the cleaner audit's report itself: both are upstream, so a
    # run that selects them and not the summary still writes the textfile after them.
    deps=[offsets_topic_summary, coordinator_cache, cleaner_audit],
    kinds={"python", "prometheus"},
    description="The numbers `offsetops exporter` serves (lag, offsets out of range, reload stats, cleaner "
    "audit, expiration risk, coordinator failover forecast), as a Prometheus textfile for node-exporter's "
    "textfile collector and as this asset's metadata under the metric names. Computed from the run's "
    "published cache tables and cleaner audit report: no segment is read again.",
)
def offsets_metrics(
    context: AssetExecutionContext,
    config: MetricsConfig,
    offsets_source: OffsetsSourceResource,
    spark: SparkResource,
    state: StateResource,
) -> MaterializeResult:
    """One snapshot of what the run published, as of the run's clock, written as ``.prom`` and
    summarised."""
    from offsetops.coordinator_core.data_offsets import live_offsets, offline_offsets
    from offsetops.coordinator_core.describe import GroupFilter, wanted_partitions
    from offsetops.coordinator_core.metrics_snapshot import compute_snapshot, snapshot_metrics
    from offsetops.pipelines.tables import assignment_figures_from_rows

    clock = offsets_source.clock()
    run = offsets_source.settings(
        run_config_flags(
            config,
            "MetricsConfig",
            {"retention_minutes": "retention_minutes", "forecast_hours": "forecast_horizon_hours"},
        )
    )
    num_partitions = offsets_source.settings()["num_partitions"]
    published = published_caches(spark.get_session, state, list(range(num_partitions)), num_partitions)
    caches, rows = published.caches, published.rows
    # offsetops_reload_bytes_read: what this run's reload read of each partition (this asset reads none)
    reads = bytes_read_by(state.reports_path, "coordinator_cache", context.run.run_id)
    for cache in caches:
        cache.stats.bytes_read = reads.get(cache.partition, 0) if cache.partition is not None else 0
    wanted = wanted_partitions(caches, GroupFilter())
    if offsets_source.is_live:
        log_offsets = live_offsets(offsets_source.kafka_config(), wanted)
    else:
        log_offsets = offline_offsets([str(offsets_source.open_log_dir().path)], wanted)
    cleaner = published_cleaner_figures(state)
    snap = compute_snapshot(
        caches,
        log_offsets,
        log_dir=None,
        cleaner=cleaner,
        assignments=assignment_figures_from_rows(rows),
        now_ms=clock.as_of_ms,
        retention_ms=run.retention_ms,
        forecast_horizon_ms=run.forecast_horizon_ms,
        failover_threshold_ms=config.failover_threshold_ms,
        taken_at=time.time(),
        settings=run,
    )
    # Without a report the snapshot's own note speaks of the exporter's --bootstrap: say what to do here.
    notes = snap.notes if cleaner is not None else [f"no {AUDIT_REPORT} yet: materialize cleaner_audit"]
    families = list(snapshot_metrics(snap, granularity=config.granularity))
    target = Path(config.textfile or os.environ.get(ENV_TEXTFILE) or state.reports_path / TEXTFILE)
    write_textfile(target, families)
    series = sum(len(f.samples) for f in families)
    context.log.info(
        f"{series} series of {len(families)} families as of {for_log(clock.describe())} in {for_log(target)}"
    )
    for note in notes:
        context.log.info(for_log(note))
    return MaterializeResult(
        metadata={
            **headline_metadata(families),
            "series": MetadataValue.int(series),
            # what the snapshot read of __consumer_offsets: nothing, the run's tables and reports
            "bytes_read": MetadataValue.int(0),
            "tables_read_by": published.read_by,
            "textfile": MetadataValue.path(str(target)),
            "as_of": clock.describe(),
            **settings_metadata(run),
        }
    )


defs = Definitions(assets=[offsets_metrics])
