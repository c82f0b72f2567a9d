"""The segment-parallel Spark reload equals the sequential coordinator_core reload."""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path

import pytest
from offsetops.coordinator_core.loader import load_log_dir, load_partition_dir
from offsetops.coordinator_core.sources.logdir import open_log_dir
from offsetops.pipelines.reload import (
    ReloadOptions,
    fold_segment,
    merge_folds,
    read_tables,
    reload_tables,
    reload_tables_rows,
    run_reload,
)
from offsetops.pipelines.schemas import TABLE_SCHEMAS
from offsetops.pipelines.source import InputPathError, list_log_dir
from offsetops.pipelines.tables import all_cache_rows, comparable

from tests.support.shared import REAL_KAFKA_DIR

REAL_DIRS = sorted(p for p in REAL_KAFKA_DIR.iterdir() if p.is_dir()) if REAL_KAFKA_DIR.is_dir() else []


def _drop(table: str) -> list[str]:
    return ["elapsed_ms"] if table == "load_stats" else []


def assert_tables_equal(tables: dict, path: Path | str) -> dict[str, int]:
    """Every table, sorted, equals the sequential reload of ``path``; returns the row counts."""
    ref = all_cache_rows(load_log_dir(path))
    counts = {}
    for name, schema in TABLE_SCHEMAS.items():
        got = comparable([tuple(r) for r in tables[name].collect()], schema, drop=_drop(name))
        want = comparable(ref[name], schema, drop=_drop(name))
        assert got == want, f"{name}: {len(got)} rows from Spark, {len(want)} from load_log_dir"
        counts[name] = len(got)
    return counts


def test_segment_folds_merge_to_the_sequential_cache(sim_txn) -> None:
    """No Spark: per-segment folds merged in log order == load_partition_dir, transactions included."""
    spanning = 0
    for pdir in open_log_dir(sim_txn.out_dir).partitions:
        folds = [
            fold_segment(seg.path.read_bytes(), file=str(seg.path), partition=pdir.partition)
            for seg in pdir.segments
        ]
        spanning += sum(
            1 for a, b in itertools.pairwise(folds) for pid in a.open_txns if pid in b.first_marker
        )
        # the folds travel pickled between Spark stages
        folds = [pickle.loads(pickle.dumps(f)) for f in folds]
        merged = merge_folds(folds).finish()
        expect = load_partition_dir(pdir)
        assert merged.to_json()["groups"] == expect.to_json()["groups"]
        assert merged.open_transactions == expect.open_transactions
    assert spanning > 0, "the simulator data must have transactions that span segment boundaries"


@pytest.mark.spark
def test_spark_reload_equals_sequential_on_simulator_transactions(spark, sim_txn, tmp_path) -> None:
    listing = list_log_dir(spark, str(sim_txn.out_dir))
    assert len(listing.segments) > 3 * len(listing.partitions)  # really split by segment
    result = run_reload(spark, str(sim_txn.out_dir), str(tmp_path / "out"))
    assert (tmp_path / "out" / "offsets").is_dir()
    counts = assert_tables_equal(read_tables(spark, str(tmp_path / "out")), sim_txn.out_dir)
    assert counts == result.counts
    assert counts["pending_offsets"] > 0 and counts["offsets"] > 0 and counts["members"] > 0
    # the written schema is the explicit one, comments included
    offsets = spark.read.parquet(str(tmp_path / "out" / "offsets"))
    assert offsets.schema["offset"].metadata["comment"].startswith("Committed offset")


@pytest.mark.spark
def test_row_path_gives_the_same_tables(spark, sim_txn) -> None:
    listing = list_log_dir(spark, str(sim_txn.out_dir), partitions=[1])
    tables, rdd = reload_tables_rows(spark, listing, ReloadOptions(partitions_per_task=1))
    try:
        got = {
            t: comparable([tuple(r) for r in df.collect()], TABLE_SCHEMAS[t], drop=_drop(t))
            for t, df in tables.items()
        }
    finally:
        rdd.unpersist()
    arrow, _blobs = reload_tables(spark, listing)
    for t, df in arrow.items():
        assert comparable([tuple(r) for r in df.collect()], TABLE_SCHEMAS[t], drop=_drop(t)) == got[t]


@pytest.mark.spark
@pytest.mark.skipif(not REAL_DIRS, reason=f"real Kafka fixtures not found at {REAL_KAFKA_DIR}")
def test_spark_reload_equals_sequential_on_every_real_fixture(spark) -> None:
    total = {t: 0 for t in TABLE_SCHEMAS}
    for d in REAL_DIRS:
        if not any(d.glob("__consumer_offsets-*/*.log")):
            continue
        tables, blobs = reload_tables(spark, list_log_dir(spark, str(d)))
        blobs.cache()
        try:
            for t, n in assert_tables_equal(tables, d).items():
                total[t] += n
        finally:
            blobs.unpersist()
    assert total["offsets"] > 0 and total["groups"] > 0 and total["load_stats"] > 10


@pytest.mark.spark
def test_missing_input_is_named(spark, tmp_path) -> None:
    missing = tmp_path / "no-such-logdir"
    with pytest.raises(InputPathError, match="no-such-logdir: no such file"):
        list_log_dir(spark, str(missing))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputPathError, match="no __consumer_offsets-N"):
        list_log_dir(spark, str(tmp_path / "empty"))


@pytest.mark.spark
def test_spark_reload_equals_sequential_on_share_and_streams_groups(
    spark, sim_share_streams_small, tmp_path
) -> None:
    """Per-segment folds merged on the executors keep what the share/streams replay needs (tombstones
    included): group_assignments and every other table equal the single-process reload."""
    out = tmp_path / "out"
    result = run_reload(spark, str(sim_share_streams_small.out_dir), str(out))
    counts = assert_tables_equal(read_tables(spark, str(out)), sim_share_streams_small.out_dir)
    assert counts == result.counts
    assert counts["group_assignments"] > 0
    kinds = {r["group_type"] for r in read_tables(spark, str(out))["groups"].collect()}
    assert {"share", "streams"} <= kinds
