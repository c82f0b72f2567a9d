"""Coordinator failover forecast: broker log calibration, estimates and the slow flag."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.failover import (
    DEFAULT_BYTES_PER_SECOND,
    PartitionLoad,
    calibrate,
    forecast_failover,
    loads_from_caches,
    parse_load_lines,
)
from offsetops.coordinator_core.loader import load_log_dir

from tests.support.shared import real_kafka_logdirs

MIB = 1024 * 1024
_SCALA = "INFO [GroupMetadataManager brokerId=1] Finished loading offsets and group metadata from"
_JAVA = "INFO [GroupCoordinator id=1] Finished loading of metadata from"
LOG = (
    "\n".join(
        [
            f"[2024-05-01 10:00:00,000] {_SCALA} __consumer_offsets-3 in 2000 milliseconds, "
            "of which 5 milliseconds "
            "was spent in the scheduler. (kafka.coordinator.group.GroupMetadataManager)",
            f"[2024-05-01 10:00:01,000] {_JAVA} __consumer_offsets-7 with epoch 12 in 1000ms "
            "where 2ms was spent in "
            "the scheduler. Loaded 19851 records which total to 31457280 bytes. "
            "(org.apache.kafka.coordinator)",
            f"[2024-05-01 10:00:02,000] {_JAVA} __consumer_offsets-9 with epoch 1 and "
            "LoadSummary=LoadSummary("
            "startTimeMs=1000, endTimeMs=1050, schedulerQueueTimeMs=1, numRecords=10, numBytes=2048).",
            f"[2024-05-01 10:00:03,000] {_SCALA} __transaction_state-3 in 900 milliseconds",
            f"[2024-05-01 09:00:00,000] {_SCALA} __consumer_offsets-3 in 50 milliseconds",
        ]
    )
    + "\n"
)


def test_parse_all_three_forms_and_only_the_offsets_topic():
    got = [(o.partition, o.load_ms, o.records, o.bytes) for o in parse_load_lines(LOG.splitlines())]
    assert got == [(3, 2000, None, None), (7, 1000, 19851, 31457280), (9, 50, 10, 2048), (3, 50, None, None)]


def test_calibration_uses_the_latest_line_and_current_size_as_a_stated_proxy():
    loads = [
        PartitionLoad(3, 10 * MIB, 1, 1, 1),
        PartitionLoad(7, 99 * MIB, 1, 1, 1),
        PartitionLoad(9, MIB, 1, 1, 1),
    ]
    cal = calibrate(loads, parse_load_lines(LOG.splitlines()))
    # Partition 3: its later line (10:00, 2000 ms) with its current 10 MiB; partition 7: 30 MiB (from the
    # line) in 1000 ms; partition 9 is too short to use. (10 + 30) MiB / 3 s.
    assert cal.source == "broker_log" and cal.samples == 2
    assert cal.bytes_per_second == pytest.approx(40 * MIB / 3)
    assert "current size stands in" in cal.note


def test_default_rate_is_stated():
    fc = forecast_failover([PartitionLoad(0, 400 * MIB, 10, 10, 10), PartitionLoad(1, MIB, 1, 1, 1)])
    assert fc.calibration.source == "default"
    assert fc.calibration.bytes_per_second == DEFAULT_BYTES_PER_SECOND
    assert "assumed 20 MiB/s" in fc.calibration.note
    assert [p.load.partition for p in fc.partitions] == [0, 1]  # worst first
    assert fc.partitions[0].estimated_ms == 20_000 and fc.partitions[0].slow
    assert not fc.partitions[1].slow
    assert fc.to_json()["slow_partitions"] == [0]


def test_an_observed_slow_load_is_flagged_even_if_the_estimate_is_small():
    fc = forecast_failover(
        [PartitionLoad(3, 10, 1, 1, 1)], observed=parse_load_lines(LOG.splitlines()), threshold_ms=1500
    )
    assert fc.partitions[0].observed_ms == 2000 and fc.partitions[0].slow


@pytest.mark.parametrize("logdir", real_kafka_logdirs(), ids=lambda p: p.name)
def test_real_fixtures_replay_size_is_the_segment_bytes(logdir):
    caches = load_log_dir(logdir)
    loads = {pl.partition: pl for pl in loads_from_caches(caches)}
    for pdir in logdir.iterdir():
        if not pdir.name.startswith("__consumer_offsets-"):
            continue
        part = int(pdir.name.rsplit("-", 1)[1])
        size = sum(f.stat().st_size for f in pdir.glob("*.log"))
        assert loads[part].bytes == size, pdir
    fc = forecast_failover(loads.values())
    for p in fc.partitions:
        assert p.estimated_ms == round(p.load.bytes / DEFAULT_BYTES_PER_SECOND * 1000)
