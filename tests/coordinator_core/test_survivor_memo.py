"""A resumed load that reuses the previous materialization's decoded survivors (``SurvivorMemo``, kept
by the in-memory resume store of a following exporter) equals a fresh load of the same bytes, whatever
was appended between the loads: commits, group metadata, offset and group tombstones (what expiration
writes), transactions committed and aborted across loads, values the validation refuses."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.resume.memory import MemoryStateStore
from offsetops.coordinator_core.sources.source import Source

from tests.coordinator_core.resume.logs import OPS, TOPIC, History, segments_of, view, write_partition
from tests.coordinator_core.test_loader import gkey, gval, okey, oval

SEGMENT = 700
HYPO = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: values a coordinator could not have written: the validation refuses them, the decode reports them
BAD_VALUES = (b"\x00\x03\xff", b"\x00\x09", b"\x00\x03" + b"\x00" * 30)


def _load(root: Path, store: MemoryStateStore | None, semantics: str):
    source = Source(log_dir=str(root), state_store=store)
    return source.load_caches(semantics=semantics, num_partitions=4)[0]


def _corrupt(history: History, picks: list[tuple[int, int]]) -> None:
    """Append refused values for keys the histories also write (they survive or get overwritten)."""
    for gi, which in picks:
        group = f"g{gi}"
        bad = BAD_VALUES[which % len(BAD_VALUES)]
        history.data([(okey(group, "t", which % 3), bad), (gkey(group), bad[:2] + b"\x7f")])


STEPS = st.lists(st.tuples(OPS, st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=2)),
                 min_size=1, max_size=4)  # fmt: skip


@HYPO
@given(first=OPS, steps=STEPS, semantics=st.sampled_from(["java", "scala"]))
def test_every_update_equals_a_fresh_load_of_the_same_bytes(first, steps, semantics) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "logdir"
        store = MemoryStateStore()
        history = History().play(first)
        history.data([(okey("g0", "t", 0), oval(1))])  # never empty
        for ops, picks in [([], []), *steps]:
            history.play(ops)
            _corrupt(history, picks)
            write_partition(root, segments_of(history.batches, SEGMENT))
            updated = _load(root, store, semantics)
            assert view(updated) == view(_load(root, None, semantics))
            assert {pid: sorted(g) for pid, g in updated.open_transactions.items()} == {
                pid: sorted(g) for pid, g in _load(root, None, semantics).open_transactions.items()
            }


def test_unchanged_survivors_are_taken_from_the_last_load_and_changed_ones_decoded(tmp_path: Path) -> None:
    root = tmp_path / "logdir"
    history = History()
    history.data([(okey("g0", "t", 0), oval(5)), (okey("g1", "t", 0), oval(6))])
    history.data([(gkey("g1"), gval(3, [("m1", ["t"])]))])
    write_partition(root, segments_of(history.batches, SEGMENT))
    store = MemoryStateStore()
    before = _load(root, store, "java")
    history.data([(okey("g0", "t", 0), oval(9))])
    write_partition(root, segments_of(history.batches, SEGMENT))
    after = _load(root, store, "java")
    # g1's offset and metadata records did not change: the same decoded objects, never decoded again
    assert after.groups["g1"].offsets[("t", 0)] is before.groups["g1"].offsets[("t", 0)]
    assert store.survivors(TOPIC, 0).reused == 2
    # g0's commit changed: decoded anew
    assert after.groups["g0"].offsets[("t", 0)].offset == 9
    # the group objects are each cache's own: attaching offsets to one never changes the other
    assert after.groups["g1"] is not before.groups["g1"]
    assert after.groups["g1"].members[0] is not before.groups["g1"].members[0]
    assert view(after) == view(_load(root, None, "java"))
    history.data([(okey("g1", "t", 0), oval(11))])
    write_partition(root, segments_of(history.batches, SEGMENT))
    third = _load(root, store, "java")
    assert third.groups["g1"].offsets[("t", 0)].offset == 11
    assert after.groups["g1"].offsets[("t", 0)].offset == 6  # a served cache never changes under a reader


def test_a_rewritten_record_at_the_same_offset_is_decoded_again(tmp_path: Path) -> None:
    """A new leader's log may hold other bytes at an offset read before: the memo matches the bytes too."""
    root = tmp_path / "logdir"
    store = MemoryStateStore()
    for value in (oval(5), oval(7, metadata="other")):
        history = History()
        history.data([(okey("g0", "t", 0), value)])
        write_partition(root, segments_of(history.batches, SEGMENT))
        cache = _load(root, store, "java")
        fresh = _load(root, None, "java")
        assert cache.groups["g0"].offsets[("t", 0)] == fresh.groups["g0"].offsets[("t", 0)]
    assert cache.groups["g0"].offsets[("t", 0)].offset == 7


def test_state_files_kept_by_a_following_process_reuse_survivors_and_others_do_not(tmp_path: Path) -> None:
    from offsetops.coordinator_core.resume.store import StateStore

    root = tmp_path / "logdir"
    history = History()
    history.data([(okey("g0", "t", 0), oval(5)), (okey("g1", "t", 0), oval(6))])
    write_partition(root, segments_of(history.batches, SEGMENT))
    kept, plain = StateStore.kept(tmp_path / "kept"), StateStore.at(tmp_path / "plain")
    for store in (kept, plain):
        Source(log_dir=str(root), state_store=store).load_caches(num_partitions=4)
    history.data([(okey("g0", "t", 0), oval(9))])
    write_partition(root, segments_of(history.batches, SEGMENT))
    caches = {}
    for name, store in (("kept", kept), ("plain", plain)):
        (caches[name],) = Source(log_dir=str(root), state_store=store).load_caches(num_partitions=4)
        assert caches[name].stats.resumed
    memo = kept.survivors(TOPIC, 0)
    assert memo is not None and memo.reused == 1 and plain.survivors(TOPIC, 0) is None
    assert view(caches["kept"]) == view(caches["plain"]) == view(_load(root, None, "java"))
