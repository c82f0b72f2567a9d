"""The reload asset: a resumed reload reads only what was appended, and publishes what a fresh one does."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.assets.conftest import NUM_PARTITIONS, materialize_assets


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.skip("no Java runtime: Spark tests need one")
    from offsetops.pipelines.session import build_session

    yield build_session("local[1]", app_name="offsetops-tests", quiet=True, ship_code=False)


def _reload_run(log_dir: Any, output_dir: Any, resume_dir: Any = None) -> dict[int, dict[str, Any]]:
    """``raw_segments`` and ``coordinator_cache`` over every partition (resumed from ``resume_dir`` when
    given); each partition's coordinator_cache metadata."""
    from offsetops.assets.reload import coordinator_cache, raw_segments

    ran = materialize_assets(log_dir, output_dir, [raw_segments, coordinator_cache], resume_dir)
    return ran["coordinator_cache"]


def _published(spark: Any, output_dir: Any) -> dict[str, list[Any]]:
    """Every published reload table's rows, comparable (the load's elapsed time left out)."""
    from offsetops.assets.published_tables import read_cache_tables
    from offsetops.assets.resources import StateResource
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.tables import comparable

    tables = read_cache_tables(spark, StateResource(output_dir=str(output_dir)))
    return {
        name: comparable(
            df.collect(), TABLE_SCHEMAS[name], drop=("elapsed_ms",) if name == "load_stats" else ()
        )
        for name, df in tables.items()
    }


@pytest.mark.slow
def test_a_resumed_reload_reads_only_what_was_appended_and_publishes_a_fresh_reloads_tables(
    spark, simulated_log_dir, tmp_path
) -> None:
    """With a resume state, the second run folds only the appended bytes (per partition: resumed, and
    bytes_read the bytes appended there), and its tables equal a fresh Spark reload of the same log."""
    from tests.support.appends import append_commits, groups_for

    log_dir = shutil.copytree(simulated_log_dir, tmp_path / "logdir")
    resume_dir = tmp_path / "resume"
    first = _reload_run(log_dir, tmp_path / "out", resume_dir)
    present = sorted(p for p, m in first.items() if m["bytes"])
    assert present and not any(m["resumed"] for m in first.values())
    assert {first[p]["resume_reason"] for p in present} == {"no_state"}
    assert all(m["bytes_read"] == m["bytes"] for m in first.values())

    appended = {}
    for p in present[:3]:
        commits = [
            (g, "orders", 0, 1000 + i) for i, g in enumerate(groups_for(p, 4, "resumed", NUM_PARTITIONS))
        ]
        appended[p] = append_commits(log_dir / f"__consumer_offsets-{p}", commits, now_ms=1_700_000_000_000)
    second = _reload_run(log_dir, tmp_path / "out", resume_dir)
    assert all(second[p]["resumed"] and second[p]["resume_reason"] is None for p in present)
    assert {p: m["bytes_read"] for p, m in second.items() if m["bytes_read"]} == appended

    fresh = _reload_run(log_dir, tmp_path / "fresh")
    assert not any(m.get("resumed") for m in fresh.values())
    resumed_tables, fresh_tables = _published(spark, tmp_path / "out"), _published(spark, tmp_path / "fresh")
    assert any(r[1].startswith("resumed-") for r in resumed_tables["offsets"])
    assert resumed_tables == fresh_tables
