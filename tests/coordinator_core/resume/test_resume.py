"""A resumed load equals a fresh load of the same bytes, and falls back (saying why) when it cannot
be proven safe: appends at any byte, compaction, truncation, removed segments, changed settings or
source, and corrupt state files."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.resume import REASONS, StateStore
from offsetops.coordinator_core.sources.source import ReadLimits, Source

from tests.coordinator_core.resume.logs import (
    OPS,
    TOPIC,
    History,
    compact,
    load,
    segments_of,
    view,
    write_partition,
)
from tests.coordinator_core.test_loader import okey, oval

SEMANTICS = st.sampled_from(["java", "scala"])
SEGMENT = 700  # bytes: a few batches per segment, so histories span several
HYPO = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _dirs() -> tuple[Path, Path, tempfile.TemporaryDirectory]:
    tmp = tempfile.TemporaryDirectory()
    return Path(tmp.name) / "logdir", Path(tmp.name) / "state", tmp


@HYPO
@given(ops=OPS, more=OPS, cut=st.floats(0, 1), semantics=SEMANTICS)
def test_a_run_after_appends_reads_only_them_and_equals_a_fresh_load(ops, more, cut, semantics) -> None:
    root, state, tmp = _dirs()
    with tmp:
        batches = History().play(ops + more).batches
        assume(batches)
        segments = segments_of(batches, SEGMENT)
        total = sum(len(b.data) for b in batches)
        at = int(cut * total)  # anywhere, inside a batch too: a leader in the middle of an append
        write_partition(root, segments, cut=at)
        first = load(root, state, semantics)
        assert (first.stats.resumed, first.stats.resume_reason) == (False, "no_state")
        write_partition(root, segments)
        second = load(root, state, semantics)
        fresh = load(root, None, semantics)
        assert second.stats.resumed, second.stats.resume_detail
        assert view(second) == view(fresh)
        # it read from the last whole batch before the cut on, never the bytes before it again
        assert total - at <= second.stats.bytes_read < total - at + max(len(b.data) for b in batches)
        third = load(root, state, semantics)
        assert third.stats.resumed and third.stats.bytes_read == 0
        assert view(third) == view(fresh)


@HYPO
@given(ops=OPS, more=OPS, cut=st.floats(0.3, 1), semantics=SEMANTICS)
def test_after_compaction_the_position_is_found_again_by_offset(ops, more, cut, semantics) -> None:
    root, state, tmp = _dirs()
    with tmp:
        batches = History().play(ops + more, transactions=False).batches
        assume(batches)
        segments = segments_of(batches, SEGMENT)
        at = int(cut * sum(len(b.data) for b in batches))
        write_partition(root, segments, cut=at, cleaner_offset=0)
        load(root, state, semantics)
        cleaned = compact(segments, merge_bytes=3 * SEGMENT)
        write_partition(root, cleaned, cleaner_offset=cleaned[-1][0])
        resumed = load(root, state, semantics)
        fresh = load(root, None, semantics)
        relocated = "after compaction" in (resumed.stats.resume_detail or "")
        event(f"resume_reason={resumed.stats.resume_reason}, relocated={relocated}")
        if not resumed.stats.resumed:
            # only Java's groups created by commits the cleaner may have removed force a fresh read
            assert (semantics, resumed.stats.resume_reason) == ("java", "compacted_created_groups")
        assert view(resumed, counters=False) == view(fresh, counters=False)


@HYPO
@given(ops=OPS, drop=st.integers(1, 5), semantics=SEMANTICS)
def test_a_truncated_log_is_read_fresh(ops, drop, semantics) -> None:
    root, state, tmp = _dirs()
    with tmp:
        batches = History().play(ops).batches
        segments = segments_of(batches, SEGMENT)
        write_partition(root, segments)
        load(root, state, semantics)
        kept = batches[: max(len(batches) - drop, 0)]
        if not kept:
            return
        write_partition(root, segments_of(kept, SEGMENT))
        resumed = load(root, state, semantics)
        assert (resumed.stats.resumed, resumed.stats.resume_reason) == (False, "truncated")
        assert view(resumed) == view(load(root, None, semantics))


def test_a_new_leader_epoch_below_the_position_forces_a_fresh_read(tmp_path: Path) -> None:
    history = History().play([("commit", 0, 0, 1), ("meta", 1, 0, 2), ("commit", 2, 1, 3)])
    write_partition(tmp_path / "logdir", segments_of(history.batches, 1 << 20))
    load(tmp_path / "logdir", tmp_path / "state")
    # the follower truncated to offset 2 and a new leader (epoch 1) wrote other records from there
    other = History(batches=history.batches[:1], next=history.batches[0].last + 1, epoch=1)
    other.play([("commit", 3, 2, 9), ("commit", 3, 2, 10), ("commit", 3, 2, 11)])
    write_partition(
        tmp_path / "logdir", segments_of(other.batches, 1 << 20), epochs=[(0, 0), (1, other.batches[1].base)]
    )
    resumed = load(tmp_path / "logdir", tmp_path / "state")
    assert (resumed.stats.resumed, resumed.stats.resume_reason) == (False, "leader_epoch_changed")
    assert view(resumed) == view(load(tmp_path / "logdir", None))


def test_a_new_leader_epoch_after_the_position_is_an_append(tmp_path: Path) -> None:
    history = History().play([("commit", 0, 0, 1), ("meta", 1, 0, 2)])
    write_partition(tmp_path / "logdir", segments_of(history.batches, 1 << 20))
    load(tmp_path / "logdir", tmp_path / "state")
    start = history.next
    history.epoch = 1
    history.play([("commit", 3, 2, 9)])
    write_partition(tmp_path / "logdir", segments_of(history.batches, 1 << 20), epochs=[(0, 0), (1, start)])
    resumed = load(tmp_path / "logdir", tmp_path / "state")
    assert resumed.stats.resumed, resumed.stats.resume_detail
    assert view(resumed) == view(load(tmp_path / "logdir", None))


def test_removed_segments_move_the_log_start(tmp_path: Path) -> None:
    batches = History().play([("commit", i % 4, i % 3, i) for i in range(40)]).batches
    segments = segments_of(batches, SEGMENT)
    assert len(segments) > 2
    write_partition(tmp_path / "logdir", segments)
    load(tmp_path / "logdir", tmp_path / "state")
    (tmp_path / "logdir" / f"{TOPIC}-0" / f"{segments[0][0]:020d}.log").unlink()
    resumed = load(tmp_path / "logdir", tmp_path / "state")
    assert (resumed.stats.resumed, resumed.stats.resume_reason) == (False, "log_start_moved")
    assert view(resumed) == view(load(tmp_path / "logdir", None))


def test_changed_settings_and_another_source_are_read_fresh(tmp_path: Path) -> None:
    batches = History().play([("commit", i % 4, i % 3, i) for i in range(10)]).batches
    write_partition(tmp_path / "logdir", segments_of(batches, 1 << 20))
    load(tmp_path / "logdir", tmp_path / "state")
    assert load(tmp_path / "logdir", tmp_path / "state", "scala").stats.resume_reason == "settings_changed"
    limits = {"limits": ReadLimits(max_batch_bytes=1 << 20)}
    source = Source(log_dir=str(tmp_path / "logdir"), state_dir=str(tmp_path / "state"), **limits)
    assert source.load_caches(num_partitions=4)[0].stats.resume_reason == "settings_changed"
    shutil.copytree(tmp_path / "logdir", tmp_path / "copy")
    load(tmp_path / "logdir", tmp_path / "state")
    moved = load(tmp_path / "copy", tmp_path / "state")
    assert (moved.stats.resumed, moved.stats.resume_reason) == (False, "source_changed")
    assert "copy" in (moved.stats.resume_detail or "")


@HYPO
@given(
    ops=OPS,
    flips=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), min_size=1, max_size=4),
    cut=st.none() | st.floats(0, 1),
)
def test_a_corrupt_state_file_is_reported_and_ignored(ops, flips, cut) -> None:
    root, state, tmp = _dirs()
    with tmp:
        write_partition(root, segments_of(History().play(ops).batches, SEGMENT))
        load(root, state)
        path = StateStore.at(state).path(TOPIC, 0)
        data = bytearray(path.read_bytes())
        for where, xor in flips:
            data[min(int(where * len(data)), len(data) - 1)] ^= xor
        if cut is not None:
            data = data[: int(cut * len(data))]
        assume(bytes(data) != path.read_bytes())
        path.write_bytes(bytes(data))
        resumed = load(root, state)
        assert not resumed.stats.resumed
        assert resumed.stats.resume_reason in ("state_corrupt", "state_foreign", "state_version")
        assert str(path) in (resumed.stats.resume_detail or "")
        assert view(resumed) == view(load(root, None))
        assert load(root, state).stats.resumed  # the run saved a good state again


def test_every_reason_has_a_sentence() -> None:
    assert all(code.isidentifier() and text for code, text in REASONS.items())


@pytest.mark.parametrize("semantics", ["java", "scala"])
def test_an_open_transaction_survives_the_resume(tmp_path: Path, semantics: str) -> None:
    history = History().play([("txn", 0, 0, 5), ("commit", 1, 1, 6)])
    write_partition(tmp_path / "logdir", segments_of(history.batches, 1 << 20))
    first = load(tmp_path / "logdir", tmp_path / "state", semantics)
    assert first.open_transactions
    history.play([("end", 0, 0, 0), ("commit", 0, 1, 7)])
    write_partition(tmp_path / "logdir", segments_of(history.batches, 1 << 20))
    resumed = load(tmp_path / "logdir", tmp_path / "state", semantics)
    assert resumed.stats.resumed and not resumed.open_transactions
    assert resumed.groups["g0"].offsets[("t", 0)].offset == 5  # committed by the marker read this run
    assert view(resumed) == view(load(tmp_path / "logdir", None, semantics))


def test_a_group_only_a_removed_commit_created_forces_a_fresh_read_after_compaction(tmp_path: Path) -> None:
    history = History()
    history.data([(okey("lonely", "t", 0), oval(1))])
    history.data([(okey("lonely", "t", 0), None)])  # Java: the group stays, created by that commit
    history.play([("commit", 1, 0, i) for i in range(8)])
    segments = segments_of(history.batches, SEGMENT)
    root = tmp_path / "logdir"
    write_partition(root, segments, cleaner_offset=0)
    assert "lonely" in load(root, tmp_path / "state").groups
    history.play([("commit", 2, 0, i) for i in range(8)])
    cleaned = compact(segments_of(history.batches, SEGMENT), merge_bytes=3 * SEGMENT)
    write_partition(root, cleaned, cleaner_offset=cleaned[-1][0])
    resumed = load(root, tmp_path / "state")
    assert (resumed.stats.resumed, resumed.stats.resume_reason) == (False, "compacted_created_groups")
    assert "lonely" not in resumed.groups  # as a fresh load of the compacted log has it
    assert view(resumed) == view(load(root, None))
    scala = tmp_path / "scala"
    write_partition(root, segments, cleaner_offset=0)
    load(root, scala, "scala")
    write_partition(root, cleaned, cleaner_offset=cleaned[-1][0])
    assert load(root, scala, "scala").stats.resumed  # no group is created by a commit there


def test_a_partition_another_run_holds_is_read_fresh_and_its_state_left_alone(tmp_path: Path) -> None:
    batches = History().play([("commit", i % 4, i % 3, i) for i in range(6)]).batches
    write_partition(tmp_path / "logdir", segments_of(batches, 1 << 20))
    store = StateStore.at(tmp_path / "state")
    with store.lock(TOPIC, 0) as held:
        assert held
        cache = load(tmp_path / "logdir", tmp_path / "state")
    assert (cache.stats.resumed, cache.stats.resume_reason) == (False, "state_locked")
    assert not store.path(TOPIC, 0).exists()
    assert view(cache) == view(load(tmp_path / "logdir", None))


@pytest.mark.parametrize("semantics", ["java", "scala"])
def test_a_preallocated_segment_resumes_where_its_zeros_began(tmp_path: Path, semantics: str) -> None:
    """``log.preallocate``: the active segment is full size, zeros after the last batch; appends
    overwrite the zeros, so the next run goes on from where they began."""
    history = History().play([("commit", i % 4, i % 3, i) for i in range(10)])
    data = b"".join(b.data for b in history.batches)
    half = sum(len(b.data) for b in history.batches[:4])
    log = tmp_path / "logdir" / f"{TOPIC}-0" / f"{0:020d}.log"
    write_partition(tmp_path / "logdir", segments_of(history.batches, 1 << 20))
    log.write_bytes(data[:half] + bytes(len(data) - half + 512))
    first = load(tmp_path / "logdir", tmp_path / "state", semantics)
    assert [e.kind for e in first.stats.errors] == ["zero_tail"]
    log.write_bytes(data + bytes(512))
    resumed = load(tmp_path / "logdir", tmp_path / "state", semantics)
    assert resumed.stats.resumed and resumed.stats.bytes_read == len(data) - half + 512
    assert [e.kind for e in resumed.stats.errors] == ["zero_tail"]
    assert view(resumed) == view(load(tmp_path / "logdir", None, semantics))


def test_a_state_that_had_read_nothing_keeps_no_error_twice(tmp_path: Path) -> None:
    pdir = write_partition(tmp_path / "logdir", [])
    (pdir / f"{0:020d}.log").write_bytes(b"\x07" * 80)  # no batch: an error, nothing folded
    first = load(tmp_path / "logdir", tmp_path / "state")
    again = load(tmp_path / "logdir", tmp_path / "state")
    assert first.stats.errors and again.stats.resumed
    assert view(again) == view(first) == view(load(tmp_path / "logdir", None))


def test_a_state_path_that_is_not_a_regular_file_is_named_once_and_read_fresh(tmp_path: Path) -> None:
    root, state = tmp_path / "logdir", tmp_path / "state"
    write_partition(root, segments_of(History().play([("commit", 0, 1, 5)] * 3).batches, SEGMENT))
    load(root, state)
    path = StateStore.at(state).path(TOPIC, 0)
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.state")
    (tmp_path / "elsewhere.state").write_bytes(b"x")
    resumed = load(root, state)
    assert not resumed.stats.resumed
    assert resumed.stats.resume_reason == "state_unreadable"
    assert (resumed.stats.resume_detail or "").count(str(path)) == 1
    assert view(resumed) == view(load(root, None))
