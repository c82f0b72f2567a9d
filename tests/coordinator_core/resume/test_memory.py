"""MemoryStateStore: the file store's interface in memory; a resumed load from it equals a fresh load."""

from __future__ import annotations

from pathlib import Path

from offsetops.coordinator_core.resume import StateStore
from offsetops.coordinator_core.resume.memory import MemoryStateStore
from offsetops.coordinator_core.sources.source import Source

from tests.support.appends import FOLLOW_PARTITIONS, append_commits, groups_for
from tests.support.appends import follow_logdir as follow_logdir
from tests.support.appends import follow_simulated as follow_simulated


def load(logdir: Path, **state) -> list:
    return Source(log_dir=str(logdir), **state).load_caches(
        num_partitions=FOLLOW_PARTITIONS, semantics="java"
    )


def view(caches) -> dict:
    return {c.partition: {g: sorted(m.offsets.items()) for g, m in c.groups.items()} for c in caches}


def test_a_load_resumes_from_memory_and_matches_a_fresh_one(follow_logdir: Path, tmp_path: Path) -> None:
    store = MemoryStateStore()
    first = load(follow_logdir, state_store=store)
    assert {c.stats.resume_reason for c in first} == {"no_state"} and len(store) == FOLLOW_PARTITIONS
    commits = [(g, "orders", 1, 5) for g in groups_for(0, 2, "mem", FOLLOW_PARTITIONS)]
    appended = append_commits(follow_logdir / "__consumer_offsets-0", commits, now_ms=1_700_010_000_000)
    second = load(follow_logdir, state_store=store)
    assert all(c.stats.resumed for c in second)
    assert sum(c.stats.bytes_read for c in second) == appended
    assert view(second) == view(load(follow_logdir))
    # the bytes kept are those the file store writes
    files = StateStore.at(tmp_path / "state")
    load(follow_logdir, state_dir=str(tmp_path / "state"))
    for c in second:
        assert (
            store.read("__consumer_offsets", c.partition)[0]
            == files.read("__consumer_offsets", c.partition)[0]
        )


def test_a_held_lock_is_refused_and_a_missing_state_says_so() -> None:
    store = MemoryStateStore()
    with store.lock("__consumer_offsets", 3) as held, store.lock("__consumer_offsets", 3) as again:
        assert held and not again
    with store.lock("__consumer_offsets", 3) as held:
        assert held  # released
    refusal = store.read("__consumer_offsets", 3)
    assert getattr(refusal, "code", None) == "no_state"


def test_the_saved_tables_are_a_copy_and_the_meta_reads_as_json_does() -> None:
    """A fold that goes on after its state was saved never changes the saved state."""
    from offsetops.coordinator_core.resume.codec import StateTables

    store = MemoryStateStore()
    latest = {b"k": (5, 5, 0, b"v")}
    pending = {b"t": (6, 6, 40, b"w")}
    tables = StateTables(latest, {7: pending}, {b"g": 5}, {b"x": 3}, frozenset({9}))
    store.write("__consumer_offsets", 1, {"point": {"segments": [(0, 10)]}}, tables)
    latest[b"k2"] = (8, 8, 80, None)
    pending.clear()
    meta, saved = store.read("__consumer_offsets", 1)
    assert saved.latest == {b"k": (5, 5, 0, b"v")} and saved.open_txns == {7: {b"t": (6, 6, 40, b"w")}}
    assert meta == {"point": {"segments": [[0, 10]]}}  # as a state file's JSON reads back
