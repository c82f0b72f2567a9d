"""The followed topic as alert evidence: headline numbers and plans from the resume state, and the later
plan of a partition winning over the scheduled one."""

from __future__ import annotations

import json
import os
from pathlib import Path

from offsetops.checks.alerting.evidence import load_partition_plans
from offsetops.checks.alerting.follow import follow_topic, source_digest, write_plans
from offsetops.coordinator_core.run import resolve_run
from offsetops.coordinator_core.sources.source import Source

from tests.support.appends import FOLLOW_PARTITIONS, append_commits, groups_for
from tests.support.appends import follow_logdir as follow_logdir
from tests.support.appends import follow_simulated as follow_simulated

DAY_MS = 86_400_000


def _plan(folder: Path, partition: int, now_ms: int, marker: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"partition-{partition}.json"
    path.write_text(json.dumps({"partition": partition, "now_ms": now_ms, "marker": marker}))
    return path


def test_the_later_plan_of_a_partition_wins(tmp_path: Path) -> None:
    scheduled, followed = tmp_path / "expiration", tmp_path / "follow"
    _plan(scheduled, 0, 2_000, "scheduled")
    _plan(followed, 0, 1_000, "followed")
    _plan(followed, 1, 5_000, "followed")
    tie_old = _plan(scheduled, 2, 7_000, "scheduled")
    os.utime(tie_old, ns=(1, 1))
    _plan(followed, 2, 7_000, "followed")  # same instant: the one written last
    (followed / "partition-3.json").write_text("{not json")
    plans = load_partition_plans(scheduled, followed, tmp_path / "missing")
    assert {p: d["marker"] for p, d in plans.items()} == {0: "scheduled", 1: "followed", 2: "followed"}


def test_follow_topic_reads_appends_and_writes_the_plans(follow_logdir: Path, tmp_path: Path) -> None:
    run = resolve_run(flags={"num_partitions": (FOLLOW_PARTITIONS, "test")}, log_dir=str(follow_logdir))
    source = Source(log_dir=str(follow_logdir), state_dir=str(tmp_path / "resume"))
    before = source_digest(source)
    first = follow_topic(source, run, now_ms=run.now_ms)
    assert source_digest(source) == before  # reading changes nothing the look sees
    (stale,) = groups_for(2, 1, "stale", FOLLOW_PARTITIONS)
    appended = append_commits(follow_logdir / "__consumer_offsets-2", [(stale, "t", 0, 1)],
                              now_ms=run.now_ms - 9 * DAY_MS)  # fmt: skip
    assert source_digest(source) != before
    second = follow_topic(source, run, now_ms=run.now_ms)
    assert second.headline["bytes_read"] == appended
    assert second.headline["partitions_resumed"] == FOLLOW_PARTITIONS
    assert second.headline["groups"] == first.headline["groups"] + 1
    assert (f"offsets:2:{stale}", "critical") in second.findings
    write_plans(tmp_path / "plans", second.plans)
    (tmp_path / "plans" / "partition-9.json").write_text("{}")  # a partition no longer there
    write_plans(tmp_path / "plans", second.plans)
    assert sorted(p.name for p in (tmp_path / "plans").iterdir()) == [
        f"partition-{p}.json" for p in range(FOLLOW_PARTITIONS)
    ]
    assert stale in load_partition_plans(tmp_path / "plans")[2]["groups"]
