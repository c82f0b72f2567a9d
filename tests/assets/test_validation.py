"""cache_validation after a publish from the driver: what the run has on the driver is not asked of Spark."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.assets.conftest import NUM_PARTITIONS

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.skip("no Java runtime: Spark tests need one")
    from offsetops.pipelines.session import build_session

    yield build_session("local[1]", app_name="offsetops-tests", quiet=True, ship_code=False)


def test_validation_takes_counts_and_data_partitions_from_the_published_rows(
    spark: Any, simulated_log_dir: Path, tmp_path: Path
) -> None:
    """Right after coordinator_cache published from the driver, the validation counts no rows and looks
    for no data partitions through Spark; once a table's file changed it does, with the same report."""
    from dagster import DagsterInstance, materialize
    from offsetops.assets.partitions import all_partitions_tags
    from offsetops.assets.reload import coordinator_cache, raw_segments
    from offsetops.assets.resources import OffsetsSourceResource, SparkResource, StateResource
    from offsetops.assets.validation import VALIDATION_REPORT, cache_validation

    state = StateResource(output_dir=str(tmp_path / "out"))
    resources = {
        "offsets_source": OffsetsSourceResource(
            log_dir=str(simulated_log_dir), resume_state_dir=str(tmp_path / "resume")
        ),
        "spark": SparkResource(master="local[1]"),
        "state": state,
    }

    def jobs() -> int:
        return len(spark.sparkContext.statusTracker().getJobIdsForGroup())

    def validate(assets: list[Any]) -> tuple[dict[str, Any], int]:
        before = jobs()
        result = materialize(
            assets, resources=resources, instance=DagsterInstance.ephemeral(), tags=all_partitions_tags()
        )
        assert result.success
        report = json.loads((state.reports_path / VALIDATION_REPORT).read_text())
        return {k: report[k] for k in ("counts", "outcomes", "success")}, jobs() - before

    published, jobs_published = validate([raw_segments, coordinator_cache, cache_validation])
    table_file = next(p for p in Path(state.table_location("offsets")).rglob("*.parquet"))
    os.utime(table_file, ns=(1, 1))  # a file of the tables changed: the kept rows no longer stand for it
    read, jobs_read = validate([cache_validation])

    assert read == published
    assert published["counts"]["offsets"] > 0 and len(published["counts"]) >= 7
    assert published["counts"]["load_stats"] == NUM_PARTITIONS
    # the row count (a job and its shuffle) and the offsets' distinct data partitions (at least one)
    assert jobs_published <= jobs_read - 3, (jobs_published, jobs_read)
