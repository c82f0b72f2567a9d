"""The reload tables' rows of a log dir with every group type and decode errors, built on the driver
(the rows a resumed read publishes): shared by the driver-publish and facts tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.appends import append_commits
from tests.support.error_storm import error_storm_cache

#: offsets.topic.num.partitions of the simulated log dir (``sim_share_streams_small``)
PARTITIONS = 3
#: a group id whose last byte is not UTF-8: decoded with surrogateescape, stored by Spark as U+FFFD
UNDECODABLE_GROUP = "orders-\udcff"


@pytest.fixture(scope="session")
def all_kinds_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """A simulated log dir (Kafka 4.2: classic, consumer, share and streams groups) with a commit of
    :data:`UNDECODABLE_GROUP` and a torn batch appended to partition 0, loaded on the driver; plus an
    error storm's rows (a summary standing for six problems, a notice) in partition 2. Read-only."""
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate
    from offsetops.coordinator_core.sources.source import Source
    from offsetops.pipelines.tables import all_cache_rows, cache_rows

    log_dir = Path(tmp_path_factory.mktemp("all-kinds")) / "logdir"
    simulate(
        SimulationConfig(
            out_dir=log_dir, groups=30, partitions=PARTITIONS, days=0.15, seed=11, segment_bytes=8 * 1024,
            kafka_version="4.2",
        )
    )  # fmt: skip
    pdir = log_dir / "__consumer_offsets-0"
    append_commits(pdir, [(UNDECODABLE_GROUP, "orders", 0, 7)], now_ms=1_700_000_000_000)
    segment = sorted(pdir.glob("*.log"))[-1]
    with segment.open("ab") as fh:
        fh.write(b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x01\x00\x00")  # a batch header cut short
    caches = Source(log_dir=str(log_dir)).load_or_empty(
        range(PARTITIONS), num_partitions=PARTITIONS, semantics="java"
    )
    rows = all_cache_rows(caches)
    rows["decode_errors"] += cache_rows(error_storm_cache(2))["decode_errors"]
    return rows
