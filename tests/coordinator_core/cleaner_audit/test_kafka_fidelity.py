"""Cleaner rules ported from Kafka's LogCleanerManagerTest, LogCleanerTest and LogCleanerIntegrationTest
(3.9, ``core/src/test/scala/unit/kafka/log``), on real segment files, checked through ``offsetops audit``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from offsetops.coordinator_core.cleaner import audit as cleaner_audit
from offsetops.coordinator_core.cleaner import model
from offsetops.coordinator_core.records.builder import build_record_batch

from offsetops.cli import main
from tests.coordinator_core.cleaner_audit.scenarios import (
    DAY_MS,
    HOUR_MS,
    T0,
    VALUE,
    checkpoints,
    commits,
    key,
    partition_dir,
    write_segment,
)

RETENTION = 86_400_000  # delete.retention.ms default


def audit(capsys: pytest.CaptureFixture[str], root: Path, *args: str, now: int = T0) -> dict[str, Any]:
    assert main(["audit", str(root), "--json", "--no-record", "--now", str(now), *args]) == 0
    return json.loads(capsys.readouterr().out)


def codes(p: dict[str, Any]) -> list[str]:
    return [r["code"] for r in p["reasons"]]


# -- 6. first dirty offset above the active segment's base ----------------------------------------


def test_dirty_offset_larger_than_active_segment_base_offset(tmp_path, capsys):
    """LogCleanerManagerTest.testDirtyOffsetLargerThanActiveSegmentBaseOffset: one segment (base 0) of
    two appends of 3 records and a checkpoint of 3 (after an unclean leader election): nothing is
    cleanable, grabFilthiestCompactedLog selects no log."""
    pdir = partition_dir(tmp_path, 0)
    write_segment(pdir, 0, [commits(0, ["a", "b", "c"], T0 - HOUR_MS), commits(3, ["a", "b", "c"], T0)], T0)
    checkpoints(tmp_path, {0: 3})
    doc = audit(capsys, tmp_path)
    (p,) = doc["partitions"]
    assert (p["first_dirty_offset"], p["first_uncleanable_offset"], p["cleanable_bytes"]) == (3, 3, 0)
    assert p["dirty_ratio"] == 0.0 and not p["eligible"] and doc["failed_partitions"] == []


def test_log_start_offset_larger_than_active_segment_base_offset(tmp_path, capsys):
    """LogCleanerManagerTest.testLogStartOffsetLargerThanActiveSegmentBaseOffset: DeleteRecords moved the
    log start to 2 inside the only segment; the checkpoint 0 is reset to it and nothing is cleanable."""
    pdir = partition_dir(tmp_path, 0)
    write_segment(pdir, 0, [commits(i * 3, ["a", "b", "c"], T0 - HOUR_MS) for i in range(3)], T0)
    checkpoints(tmp_path, {0: 0}, log_start={0: 2})
    (p,) = audit(capsys, tmp_path)["partitions"]
    assert (p["first_dirty_offset"], p["checkpoint_reset"], p["cleanable_bytes"]) == (2, "below_log_start", 0)
    assert not p["eligible"]


def test_one_failing_partition_does_not_take_the_others_down(tmp_path, capsys, monkeypatch):
    """Fault injection (a stand-in for any input the audit cannot handle; none is known since the case
    above was fixed): partition 1's computation raises, partition 0 is audited and 1 is reported."""
    for part in (0, 1):
        write_segment(partition_dir(tmp_path, part), 0, [commits(0, ["a", "a"], T0)], T0)
    real = cleaner_audit.audit_partition

    def failing_for_partition_1(pdir, **kwargs):
        if pdir.partition == 1:
            raise ValueError("invalid segment range [7, 3)")
        return real(pdir, **kwargs)

    monkeypatch.setattr(cleaner_audit, "audit_partition", failing_for_partition_1)
    doc = audit(capsys, tmp_path)
    assert [p["partition"] for p in doc["partitions"]] == [0]
    [failed] = doc["failed_partitions"]
    assert failed["partition"] == 1 and "invalid segment range" in failed["error"]
    assert doc["summary"]["failed"] == 1 and doc["verdict"] == "DEGRADED"
    assert [r["code"] for r in doc["reasons"]] == ["partition_audit_failed"]
    assert "__consumer_offsets-1" in doc["reasons"][0]["message"]


# -- 7. tombstones without a delete horizon (KIP-534) ----------------------------------------------


def test_tombstone_without_horizon_survives_a_pass_then_goes_after_its_horizon(tmp_path, capsys):
    """LogCleanerTest.testCleanTombstone: a tombstone whose record timestamp is far older than
    delete.retention.ms is retained by a clean (no delete horizon yet); runTwoPassClean: the pass stamps
    deleteHorizonMs = now + delete.retention.ms (MemoryRecords.filterTo) and a pass at or after it
    removes the tombstone (LogCleaner.shouldRetainRecord)."""
    pdir = partition_dir(tmp_path, 0)
    old = T0 - RETENTION - 10_000
    write_segment(pdir, 0, [build_record_batch([(key("0"), VALUE, T0 + RETENTION)], base_offset=0)], old)
    tomb = write_segment(pdir, 1, [build_record_batch([(key("0"), None, old)], base_offset=1)], old)
    write_segment(pdir, 2, [commits(2, ["x"], T0)], T0)
    checkpoints(tmp_path, {0: 1})
    (p,) = audit(capsys, tmp_path)["partitions"]
    assert (p["tombstones"], p["expired_tombstones"], p["tombstones_without_horizon_cleanable"]) == (1, 0, 1)
    assert "expired_tombstones" not in codes(p)

    # First pass at T0: the batch now carries a delete horizon; the checkpoint moved past it.
    horizon = T0 + RETENTION
    tomb.write_bytes(build_record_batch([(key("0"), None, old)], base_offset=1, delete_horizon_ms=horizon))
    checkpoints(tmp_path, {0: 2})
    (p,) = audit(capsys, tmp_path, now=horizon - 1)["partitions"]
    assert (p["expired_tombstones"], p["tombstones_without_horizon"]) == (0, 0)
    (p,) = audit(capsys, tmp_path, now=horizon)["partitions"]
    assert (p["expired_tombstones"], p["expired_tombstones_cleanable"]) == (1, 1)


# -- 8. max_dirty_ratio is max-dirty-percent --------------------------------------------------------


def _increasingly_filthy(root: Path) -> None:
    """LogCleanerManagerTest.setupIncreasinglyFilthyLogs: partitions 0-2 with cleanable ranges of growing
    size after the same clean head (checkpoint at the first dirty segment)."""
    for part, dirty in enumerate((1, 3, 6)):
        pdir = partition_dir(root, part)
        write_segment(pdir, 0, [commits(0, ["h0", "h1", "h2", "h3"], T0 - DAY_MS)], T0 - DAY_MS)
        write_segment(pdir, 4, [commits(4, ["a", "b"] * dirty, T0 - HOUR_MS)], T0 - HOUR_MS)
        write_segment(pdir, 4 + 2 * dirty, [commits(4 + 2 * dirty, ["z"], T0)], T0)
    checkpoints(root, {0: 4, 1: 4, 2: 4})


def _broker_log(path: Path, lines: list[str]) -> str:
    path.write_text("".join(f"[2024-05-29 10:00:0{i},000] {line}\n" for i, line in enumerate(lines)))
    return str(path)


BEGIN_2 = "INFO Cleaner 0: Beginning cleaning of log __consumer_offsets-2. (kafka.log.LogCleaner)"
MARK_1 = (
    "WARN [kafka-log-cleaner-thread-1]: Unexpected exception thrown when cleaning log Log(dir=/d, "
    "topic=__consumer_offsets, partition=1). Marking its partition (__consumer_offsets-1) as uncleanable "
    "(kafka.log.LogCleaner)"
)


@pytest.mark.parametrize(
    ("lines", "dirtiest"),
    [
        ([], 2),  # testGrabFilthiestCompactedLogReturnsLogWithDirtiestRatio
        ([BEGIN_2], 1),  # testGrabFilthiestCompactedLogIgnoresInProgressPartitions
        ([MARK_1, BEGIN_2], 0),  # ...IgnoresBothInProgressPartitionsAndUncleanablePartitions
    ],
)
def test_max_dirty_ratio_skips_uncleanable_and_in_progress_partitions(tmp_path, capsys, lines, dirtiest):
    _increasingly_filthy(tmp_path)
    args = ["--broker-log", _broker_log(tmp_path / "log-cleaner.log", lines)] if lines else []
    doc = audit(capsys, tmp_path, *args)
    ratios = {p["partition"]: p["dirty_ratio"] for p in doc["partitions"]}
    assert ratios[0] < ratios[1] < ratios[2]
    assert doc["summary"]["max_dirty_ratio"] == ratios[dirtiest]
    assert doc["summary"]["max_dirty_percent"] == int(100 * ratios[dirtiest])
    in_progress = [p["partition"] for p in doc["partitions"] if p["cleaning_in_progress"]]
    assert in_progress == ([2] if lines else [])


def test_max_dirty_ratio_is_zero_when_the_topic_is_not_compacted(tmp_path, capsys):
    """grabFilthiestCompactedLog only looks at logs with ``compact`` in cleanup.policy."""
    _increasingly_filthy(tmp_path)
    doc = audit(capsys, tmp_path, "--config", "cleanup.policy=delete")
    assert (doc["summary"]["max_dirty_ratio"], doc["summary"]["max_dirty_percent"]) == (0.0, 0)


# -- 9. dirty data stuck in the active segment ------------------------------------------------------


def _quiet_partition(root: Path, started: int) -> None:
    """A clean segment, then an active segment of 40 commits of 4 keys (36 superseded) begun at
    ``started`` and never rolled: no append came since."""
    pdir = partition_dir(root, 0)
    write_segment(pdir, 0, [commits(0, ["a", "b", "c", "d"], started - DAY_MS)], started - DAY_MS)
    write_segment(pdir, 4, [commits(4, ["a", "b", "c", "d"] * 10, started)], started + 60_000)
    checkpoints(root, {0: 4})


@pytest.mark.parametrize(
    ("started", "config", "finding"),
    [
        (T0 - 8 * DAY_MS, [], True),  # past segment.ms (7 d): the next append would have rolled it
        (T0 - 6 * DAY_MS, [], False),  # within segment.ms: a commit will still roll it in time
        # LogConfig.maxSegmentMs = min(segment.ms, max.compaction.lag.ms) for a compacted topic
        (T0 - 6 * DAY_MS, ["--config", "max.compaction.lag.ms=3600000"], True),
        (T0 - 8 * DAY_MS, ["--config", "segment.ms=864000000"], False),
    ],
)
def test_dirty_data_stuck_in_the_active_segment(tmp_path, capsys, started, config, finding):
    """LogSegment.shouldRoll rolls only on append, after maxSegmentMs; LogCleanerIntegrationTest
    .testMaxLogCompactionLag has to roll the active segment itself before the cleaner can clean it."""
    _quiet_partition(tmp_path, started)
    doc = audit(capsys, tmp_path, "--threshold", "dirty_active_segment_bytes=1000", *config)
    (p,) = doc["partitions"]
    assert p["cleanable_bytes"] == 0 and not p["eligible"]  # the cleaner sees nothing to do
    assert p["active_segment_reclaimable_bytes"] > 1000
    assert p["active_segment_age_ms"] == T0 - started
    assert ("dirty_active_segment" in codes(p)) is finding
    if finding:
        [r] = [r for r in p["reasons"] if r["code"] == "dirty_active_segment"]
        assert r["severity"] == "DEGRADED" and "partition-for" in r["remedy"]
    # Below the threshold it is counted, not a finding.
    (small,) = audit(capsys, tmp_path, *config)["partitions"]
    assert "dirty_active_segment" not in codes(small)


def test_failures_from_executors_are_reported_like_local_ones(tmp_path):
    """The Spark job hands its per-partition results to ``audit_log_dir``; a failure it caught there is
    reported exactly as a local one."""
    for part in (0, 1):
        write_segment(partition_dir(tmp_path, part), 0, [commits(0, ["a", "a"], T0)], T0)
    done = cleaner_audit.audit_log_dir(tmp_path, now_ms=T0, record_history=False)
    failure = model.PartitionFailure(1, "/data/__consumer_offsets-1", "ValueError: boom")
    audit = cleaner_audit.audit_log_dir(
        tmp_path, now_ms=T0, partition_audits={0: done.partitions[0], 1: failure}
    )
    assert [p.partition for p in audit.partitions] == [0] and audit.failures == [failure]
    assert audit.to_json()["failed_partitions"] == [failure.to_json()]
    assert audit.verdict == "DEGRADED"
