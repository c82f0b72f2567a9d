"""The checkpoint files of a log dir: read directly when local, through Spark elsewhere; the same
entries and the same notes either way."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from offsetops.coordinator_core.sources.logdir import (
    CLEANER_CHECKPOINT,
    LOG_START_CHECKPOINT,
    REPLICATION_CHECKPOINT,
)
from offsetops.pipelines.source import list_log_dir, read_checkpoints

from tests.support.appends import follow_simulated  # noqa: F401 (fixture)


def _log_dir(follow_simulated: Path, tmp_path: Path, files: dict[str, str | None]) -> Path:  # noqa: F811
    import shutil

    log_dir = Path(shutil.copytree(follow_simulated, tmp_path / "logdir"))
    for name, text in files.items():
        (log_dir / name).unlink(missing_ok=True)
        if text is not None:
            (log_dir / name).write_text(text)
    return log_dir


def _read(spark: Any, log_dir: Path, *, local: bool) -> tuple[Any, Any, int]:
    """read_checkpoints of the log dir's listing (as listed, or as a listing Spark must read) and the Spark
    jobs it ran."""
    listing = list_log_dir(spark, str(log_dir))
    assert listing.local
    listing = listing if local else dataclasses.replace(listing, local=False)
    group = f"checkpoints-{local}"
    spark.sparkContext.setJobGroup(group, group)
    try:
        got = read_checkpoints(spark, listing)
        return got[0], got[1], len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)


@pytest.mark.parametrize(
    "files",
    [
        {
            CLEANER_CHECKPOINT: "0\n2\n__consumer_offsets 0 12\norders 0 99\n",
            LOG_START_CHECKPOINT: "0\n1\n__consumer_offsets 1 4\n",
            REPLICATION_CHECKPOINT: None,
        },
        {
            CLEANER_CHECKPOINT: "1\n0\n",  # a version offsetops does not read
            LOG_START_CHECKPOINT: "0\n3\n__consumer_offsets 1 4\n",  # fewer entries than the header says
            REPLICATION_CHECKPOINT: "0\n1\n__consumer_offsets one 4\n",
        },
    ],
)
def test_a_local_log_dir_s_checkpoints_are_read_without_spark_as_spark_reads_them(
    spark,
    follow_simulated,  # noqa: F811
    tmp_path,
    files,
) -> None:
    log_dir = _log_dir(follow_simulated, tmp_path, files)
    local, local_notes, local_jobs = _read(spark, log_dir, local=True)
    remote, remote_notes, remote_jobs = _read(spark, log_dir, local=False)
    assert local_jobs == 0 and remote_jobs > 0
    assert (local, local_notes) == (remote, remote_notes)
    if local_notes:
        assert len(local_notes) == 3 and all(str(log_dir) in n for n in local_notes)
    else:
        assert local[CLEANER_CHECKPOINT] == {0: 12} and local[REPLICATION_CHECKPOINT] == {}
