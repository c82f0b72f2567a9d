"""Building the cache from a fold: the cyclic garbage collector is paused while the survivors' objects are
made and resumed after, whatever happens; a caller that paused it keeps it paused."""

from __future__ import annotations

import gc

import pytest
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.materialize import Materializer
from offsetops.coordinator_core.records import build_record_batch
from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value


def _fold() -> PartitionFold:
    fold = PartitionFold(partition=None, semantics="java")
    records = [
        (
            encode_key(OffsetCommitKey("g", "t", p)),
            encode_value(OffsetCommitValue(3, 10 + p, 1, "", 1_700_000)),
            0,
        )
        for p in range(3)
    ]
    fold.add_buffer(build_record_batch(records, base_offset=0))
    return fold


def test_collection_is_paused_while_building_and_resumed_after(monkeypatch) -> None:
    seen: list[bool] = []
    count_types = Materializer._count_types
    monkeypatch.setattr(
        Materializer, "_count_types", lambda self: (seen.append(gc.isenabled()), count_types(self))
    )
    assert gc.isenabled()
    cache = Materializer(_fold(), 50).build()
    assert seen == [False]
    assert gc.isenabled()
    assert sorted(cache.groups["g"].offsets) == [("t", 0), ("t", 1), ("t", 2)]


def test_collection_resumes_when_the_build_fails(monkeypatch) -> None:
    def fail(self: Materializer) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Materializer, "_count_types", fail)
    with pytest.raises(RuntimeError, match="boom"):
        Materializer(_fold(), 50).build()
    assert gc.isenabled()


def test_a_caller_that_paused_collection_keeps_it_paused() -> None:
    gc.disable()
    try:
        Materializer(_fold(), 50).build()
        assert not gc.isenabled()
    finally:
        gc.enable()
