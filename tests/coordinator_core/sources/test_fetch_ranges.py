"""Fetch ranges: random cuts of a recorded offsets log read every batch exactly once, and the folds of
the ranges, merged as the Spark job merges them, equal the fold of the uncut log.

The recorded log is a simulated Kafka 4.0 ``__consumer_offsets`` partition with transactions (open and
settled). ``RecordedLog`` stands in for the broker: it answers a range's read as ``LiveSource.iter_range``
does, from the batches a Fetch from the range's start up to its end returns (that Fetch contract is
checked against the loopback broker in ``test_live.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.records.batch import RecordBatch
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.simulator import SimulationConfig, simulate
from offsetops.coordinator_core.sources.live import fold_range
from offsetops.coordinator_core.sources.logdir import open_log_dir
from offsetops.coordinator_core.sources.ranges import FetchRange, cut_range, fetch_on_executors, owned
from offsetops.pipelines.reload import merge_folds
from offsetops.pipelines.schemas import TABLE_SCHEMAS
from offsetops.pipelines.tables import cache_rows, comparable

PARTITION = 0


class RecordedLog:
    """A recorded partition read the way a broker serves Fetch: from the batch holding an offset."""

    def __init__(self, batches: list[RecordBatch]):
        self.batches = batches

    def iter_range(self, rng: FetchRange, errors: list, *, verify_crc: bool = True) -> Iterator[RecordBatch]:
        fetched = (b for b in self.batches if b.last_offset >= rng.start and b.base_offset < rng.end)
        return owned(rng, fetched)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> list[RecordBatch]:
    sim = simulate(
        SimulationConfig(
            out_dir=Path(tmp_path_factory.mktemp("sim")) / "logdir",
            groups=24,
            partitions=3,
            days=0.05,
            seed=1,
            segment_bytes=8 * 1024,
            kafka_version="4.0",
            compression="mixed",
        )
    )
    pdir = open_log_dir(sim.out_dir, partitions=[PARTITION]).partitions[0]
    batches = [b for s in pdir.segments for b in iter_segment_batches(s.path, errors=[])]
    assert any(b.is_control for b in batches)
    assert any(b.is_transactional and not b.is_control for b in batches)
    assert any(b.last_offset > b.base_offset for b in batches), "cuts must be able to fall inside a batch"
    return batches


def _rows(fold) -> dict[str, list]:
    rows = cache_rows(fold.finish(num_partitions=3), partition=PARTITION)
    return {
        t: comparable(rows[t], s, drop=["elapsed_ms"] if t == "load_stats" else [])
        for t, s in TABLE_SCHEMAS.items()
    }


def _check_cut(batches: list[RecordBatch], log_start: int, cuts: list[int]) -> None:
    end = batches[-1].last_offset + 1
    bounds = [log_start, *sorted({c for c in cuts if log_start < c < end}), end]
    ranges = [FetchRange(PARTITION, a, b, i == 0) for i, (a, b) in enumerate(pairwise(bounds))]
    log = RecordedLog(batches)
    read = [b.base_offset for r in ranges for b in log.iter_range(r, [])]
    # Every batch from the one holding the log start on, each exactly once, in log order.
    assert read == [b.base_offset for b in batches if b.last_offset >= log_start]
    whole = fold_range(log, FetchRange(PARTITION, log_start, end, True))  # type: ignore[arg-type]
    parts = [fold_range(log, r) for r in ranges]  # type: ignore[arg-type]
    assert _rows(merge_folds(parts)) == _rows(whole)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_cuts_read_each_batch_once_and_fold_as_the_uncut_log(recorded, data) -> None:
    first, end = recorded[0], recorded[-1].last_offset + 1
    # Anywhere (compaction leaves gaps), and inside multi-record batches, where a cut splits a batch.
    inside = st.sampled_from([b for b in recorded if b.last_offset > b.base_offset]).flatmap(
        lambda b: st.integers(b.base_offset + 1, b.last_offset)
    )
    # The log start may lie inside a batch (DeleteRecords): that batch is still read, whole.
    log_start = data.draw(st.one_of(st.just(first.base_offset), inside), label="log_start")
    cuts = data.draw(st.lists(st.one_of(st.integers(log_start, end - 1), inside), max_size=25), label="cuts")
    _check_cut(recorded, log_start, cuts)


def test_every_transaction_marker_in_another_range_than_its_records(recorded) -> None:
    """A cut at each COMMIT/ABORT marker: every transaction is settled by a later range's fold."""
    markers = [b.base_offset for b in recorded if b.is_control]
    assert len(markers) > 3
    _check_cut(recorded, recorded[0].base_offset, markers)


def test_cut_range() -> None:
    assert cut_range(3, 10, 10, 5) == [FetchRange(3, 10, 10, True)]
    assert cut_range(3, 10, 21, 5) == [
        FetchRange(3, 10, 15, True),
        FetchRange(3, 15, 20, False),
        FetchRange(3, 20, 21, False),
    ]
    with pytest.raises(ValueError, match="at least 1"):
        cut_range(0, 0, 1, 0)


def test_owns_at_the_edges() -> None:
    first, later = FetchRange(0, 10, 20, True), FetchRange(0, 20, 30, False)
    # A batch 18..22 straddles the cut at 20: the range holding its base offset reads it.
    assert first.owns(18, 22) and not later.owns(18, 22)
    # The batch holding the log start (base below it) belongs to the first range only.
    assert first.owns(8, 12) and not first.owns(5, 9)
    assert not first.owns(20, 20) and later.owns(20, 20) and not later.owns(30, 31)


def test_fetch_on_executors() -> None:
    big, small = cut_range(0, 0, 6_000_000, 2_000_000), cut_range(0, 0, 10, 5)
    assert fetch_on_executors("auto", "spark://m:7077", big)
    assert not fetch_on_executors("auto", "spark://m:7077", small)
    assert not fetch_on_executors("auto", "local[*]", big)
    assert fetch_on_executors("executors", "local[2]", small)
    assert not fetch_on_executors("driver", "spark://m:7077", big)
    with pytest.raises(ValueError, match="live reload"):
        fetch_on_executors("sometimes", "local", big)
