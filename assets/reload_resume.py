"""The reload on a log dir with a resume state: each partition goes on from the fold the previous run
saved (:mod:`offsetops.coordinator_core.resume`, as ``offsetops reload --state DIR`` does) and reads
only what was appended; ``coordinator_cache`` publishes the same tables a full Spark reload writes.
"""

from typing import TYPE_CHECKING, Any

from dagster import Failure
from offsetops.assets.resources import OffsetsSourceResource

if TYPE_CHECKING:
    from offsetops.coordinator_core.cache import CoordinatorCache
    from offsetops.pipelines.reload_scan import CleanerScanRequest
    from pyspark.sql import DataFrame, SparkSession


def resumed_to_staging(
    spark: "SparkSession",
    source: OffsetsSourceResource,
    partitions: list[int],
    state_dir: str,
    scan: "CleanerScanRequest | None" = None,
) -> tuple[dict[str, "DataFrame"], dict[str, Any]]:
    """:func:`resumed_rows` as DataFrames (for tables Spark publishes)."""
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    rows, read = resumed_rows(source, partitions, state_dir, scan)
    return {t: spark.createDataFrame(rows[t], schema) for t, schema in TABLE_SCHEMAS.items()}, read


def resumed_rows(
    source: OffsetsSourceResource,
    partitions: list[int],
    state_dir: str,
    scan: "CleanerScanRequest | None" = None,
) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """The reload tables' rows of ``partitions`` read on the driver through the one :class:`Source` with the
    resume state in ``state_dir`` (``coordinator_core.resume``, as ``offsetops reload --state``): each
    partition goes on from its saved fold and reads only what was appended, or reads from the start and
    says why (``resume_reason``); either way its next state is saved. A fresh read seeds the state here
    rather than in the Spark job, whose per-segment folds leave none behind.

    ``scan``: the cleaner audit's scan rides along, resumed with each fold (or made from the start with
    its reason, ``scan_resume_reason``), and its audits are written for ``cleaner_audit`` as the Spark
    pass writes them (``assets/reload_scan.py``)."""
    from dataclasses import replace

    from offsetops.assets.reload_scan import resumed_scan_riders
    from offsetops.coordinator_core.sources.logdir import LogDirError
    from offsetops.pipelines.tables import all_cache_rows

    run = source.settings()
    try:
        riding = None if scan is None else resumed_scan_riders(source, partitions, scan)
        caches = replace(
            source.source(), state_dir=state_dir, scan_riders=None if riding is None else riding[0]
        ).load_or_empty(partitions, num_partitions=run["num_partitions"], semantics=run["semantics"])
    except LogDirError as exc:
        raise Failure(f"reload of {source.describe()} failed: {exc}") from None
    scans: dict[int | None, dict[str, Any]] = {} if riding is None else {**riding[1]()}
    return all_cache_rows(caches), {
        "read_by": "driver (resume state)",
        "resume_state_dir": state_dir,
        "bytes_read": {c.partition: c.stats.bytes_read for c in caches},
        "resume": {c.partition: resume_facts(c) | scans.get(c.partition, {}) for c in caches},
    }


def resume_facts(cache: "CoordinatorCache") -> dict[str, Any]:
    """Whether a partition's read went on from its resume state, or why not (``resume.REASONS``)."""
    s = cache.stats
    return {
        "resumed": s.resumed,
        "resume_reason": s.resume_reason,
        "resume_detail": s.resume_detail,
        "state_error": s.state_error,
    }


def resume_summary(resume: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """How many partitions went on from their resume state, and why the others did not (none when
    the run read without one)."""
    if not resume:
        return {}
    why: dict[str, int] = {}
    for facts in resume.values():
        if not facts["resumed"]:
            reason = str(facts["resume_reason"] or "no_log")
            why[reason] = why.get(reason, 0) + 1
    return {
        "partitions_resumed": sum(1 for f in resume.values() if f["resumed"]),
        "not_resumed": dict(sorted(why.items())),
    }
