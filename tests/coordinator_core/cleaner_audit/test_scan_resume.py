"""The cleaner scan resumed with the fold (:mod:`...cleaner.scan_resume`) judges as a fresh scan of the
same bytes, with the same clock and checkpoint; what it cannot trust is refused with a reason."""

from __future__ import annotations

import dataclasses
import itertools
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.cleaner.audit import audit_from_scan
from offsetops.coordinator_core.cleaner.config import CleanerConfig
from offsetops.coordinator_core.cleaner.scan import PartitionScan, ScanInputs, dirty_from, scan_partition
from offsetops.coordinator_core.cleaner.scan_resume import ScanOutcome, load_and_scan, scan_state_path
from offsetops.coordinator_core.loader import load_partition_dir
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.resume import StateStore, load_partition_dir_resumable
from offsetops.coordinator_core.sources.logdir import PartitionDir, open_log_dir

from tests.coordinator_core.cleaner_audit.scenarios import (
    DAY_MS,
    T0,
    checkpoints,
    partition_dir,
    write_segment,
)
from tests.coordinator_core.cleaner_audit.test_segment_scan import _batch_records, build_log, log_strategy

RETENTION = DAY_MS


def _layout(batches: list[tuple], rolls: set[int]) -> list[tuple[int, list[bytes]]]:
    """The generated batches as segments (base offset, batch bytes), rolled before each index in
    ``rolls``."""
    raw, _end = build_log(batches)
    bounds = [0, *sorted(r for r in rolls if 0 < r < len(raw)), len(raw)]
    out, offset = [], 0
    for lo, hi in itertools.pairwise(bounds):
        out.append((offset, raw[lo:hi]))
        offset += sum(_batch_records(b) for b in batches[lo:hi])
    return out


def _write(pdir: Path, segments: list[tuple[int, bytes]], mtime: int) -> None:
    for f in pdir.glob("*.log"):
        f.unlink()
    for i, (base, data) in enumerate(segments):
        write_segment(pdir, base, [data], mtime - (len(segments) - i) * DAY_MS // 8)


def _part(root: Path) -> PartitionDir:
    (part,) = open_log_dir(root).partitions
    return part


def _inputs(part: PartitionDir, dirty: int) -> ScanInputs:
    return ScanInputs(part.partition, dirty, part.segments[-1].base_offset, True)


def _judged(part: PartitionDir, scan: PartitionScan, now_ms: int, checkpoint: int | None) -> object:
    audit = audit_from_scan(
        part.partition, scan, config=CleanerConfig(), now_ms=now_ms, checkpoint=checkpoint
    )
    return dataclasses.asdict(audit)


def _fresh(part: PartitionDir, dirty: int, now_ms: int, checkpoint: int | None) -> object:
    return _judged(part, scan_partition(part, dirty_from=dirty, verify_crc=True), now_ms, checkpoint)


def _run(
    root: Path, store: StateStore, checkpoint: int | None, semantics: str = "java"
) -> tuple[PartitionDir, ScanOutcome, object]:
    part = _part(root)
    dirty = dirty_from(checkpoint, None, part.segments[0].base_offset)
    cache, outcome = load_and_scan(part, store, _inputs(part, dirty), num_partitions=50, semantics=semantics)
    return part, outcome, cache


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=log_strategy,
    rolls=st.sets(st.integers(1, 29), max_size=4),
    cut_batch=st.integers(0, 30),
    cut_byte=st.integers(0, 200),
    later_roll=st.booleans(),
    middle=st.one_of(st.none(), st.integers(0, 30)),
    dirty=st.floats(0, 1),
    clocks=st.tuples(st.integers(-2 * DAY_MS, 2 * DAY_MS), st.integers(0, 3 * DAY_MS)),
)
def test_a_resumed_scan_judges_as_a_fresh_scan_of_the_same_bytes(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[tuple],
    rolls: set[int],
    cut_batch: int,
    cut_byte: int,
    later_roll: bool,
    middle: int | None,
    dirty: float,
    clocks: tuple[int, int],
) -> None:
    root = tmp_path_factory.mktemp("log")
    pdir = partition_dir(root, 3)
    store = StateStore.at(tmp_path_factory.mktemp("state"))
    cut = min(cut_batch, len(batches))
    # a roll between the runs: the first run's active segment ends at the cut; else the first run sees
    # the last segment cut at byte ``cut_byte`` of batch ``cut`` (a batch being written)
    final = _layout(batches, rolls | {cut} if later_roll else rolls)
    seen = _prefix(final, cut, 0 if later_roll else cut_byte)
    checkpoint = int(dirty * sum(_batch_records(b) for b in batches))
    checkpoints(root, {3: checkpoint})
    now1, now2 = T0 + clocks[0], T0 + clocks[0] + clocks[1]
    _write(pdir, seen, now1)
    part, first, _ = _run(root, store, checkpoint)
    assert not first.resumed and first.reason == "no_state"
    first_dirty = dirty_from(checkpoint, None, part.segments[0].base_offset)
    assert _judged(part, first.scan, now1, checkpoint) == _fresh(part, first_dirty, now1, checkpoint)

    if middle is not None:
        # a read that saves the fold alone (the follow sensor) goes on in between: the scan catches up
        _write(pdir, _prefix(final, cut + middle % (len(batches) - cut + 1), cut_byte), now1)
        load_partition_dir_resumable(
            _part(root), store, num_partitions=50, max_batch_bytes=DEFAULT_MAX_BATCH_BYTES
        )
    _write(pdir, [(base, b"".join(data)) for base, data in final], now2)
    part, second, cache = _run(root, store, checkpoint)
    assert _judged(part, second.scan, now2, checkpoint) == _fresh(part, first_dirty, now2, checkpoint)
    event(f"scan resumed: {second.resumed}, reason {second.reason}, caught up: {'read on' in second.detail}")
    assert second.resumed == cache.stats.resumed, second.detail
    if not cache.stats.resumed:
        assert second.reason == cache.stats.resume_reason
    # the fold rode along untouched
    fresh_fold = load_partition_dir(part, num_partitions=50, semantics="java")
    assert sorted(cache.groups) == sorted(fresh_fold.groups)


def _prefix(final: list[tuple[int, list[bytes]]], cut: int, extra: int) -> list[tuple[int, bytes]]:
    """The segments holding the first ``cut`` batches of ``final``, and ``extra`` bytes of the next
    batch at the end of the last one."""
    seen, done = [], 0
    for base, data in final:
        if done + len(data) <= cut:
            seen.append((base, b"".join(data)))
            done += len(data)
            if done == cut:
                break
            continue
        partial = data[cut - done][:extra]
        seen.append((base, b"".join(data[: cut - done]) + partial))
        break
    return seen


def _small_log(root: Path, *, appended: int = 0, now: int = T0) -> None:
    """Segment 0 rolled (commits and tombstones), segment 6 active, ``appended`` more commit batches."""
    from offsetops.coordinator_core.records.builder import build_record_batch

    from tests.coordinator_core.cleaner_audit.scenarios import commits, key

    pdir = partition_dir(root, 0)
    tomb = build_record_batch([(key("g1"), None, now - 3 * DAY_MS)], base_offset=3)
    horizon = build_record_batch([(key("g2"), None, now - DAY_MS)], base_offset=4, delete_horizon_ms=now)
    write_segment(pdir, 0, [commits(0, ["g0", "g1", "g2"], now - 4 * DAY_MS), tomb, horizon,
                            commits(5, ["g0"], now - 2 * DAY_MS)], now - 2 * DAY_MS)  # fmt: skip
    groups = ["g0", "g3", "g4"] + [f"n{i}" for i in range(appended)]
    write_segment(pdir, 6, [commits(6, groups, now - DAY_MS)], now - DAY_MS + appended)


def _twice(
    tmp_path: Path, between=None, *, checkpoint: int = 2, semantics: str = "java"
) -> tuple[ScanOutcome, object, object]:
    """Run, append, let ``between`` change something, run again: (second outcome, judged, fresh)."""
    root, store = tmp_path / "log", StateStore.at(tmp_path / "state")
    _small_log(root)
    checkpoints(root, {0: checkpoint})
    _run(root, store, checkpoint, semantics)
    _small_log(root, appended=3)
    if between is not None:
        checkpoint = between(root, store) or checkpoint
    part, outcome, _cache = _run(root, store, checkpoint, semantics)
    dirty = dirty_from(checkpoint, None, 0)
    now = T0 + DAY_MS
    return outcome, _judged(part, outcome.scan, now, checkpoint), _fresh(part, dirty, now, checkpoint)


def test_the_second_run_resumes_and_reads_only_what_was_appended(tmp_path: Path) -> None:
    outcome, judged, fresh = _twice(tmp_path)
    assert outcome.resumed and outcome.reason is None and outcome.own_bytes == 0
    assert judged == fresh


def _move_checkpoint(root: Path, _store: StateStore) -> int:
    checkpoints(root, {0: 5})
    return 5


def _corrupt(root: Path, store: StateStore) -> None:
    path = scan_state_path(store, "__consumer_offsets", 0)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))


def _version(root: Path, store: StateStore) -> None:
    path = scan_state_path(store, "__consumer_offsets", 0)
    data = bytearray(path.read_bytes())
    data[8:10] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(data))


def _foreign(root: Path, store: StateStore) -> None:
    scan_state_path(store, "__consumer_offsets", 0).write_bytes(b"PK\x03\x04" + os.urandom(200))


def _fold_alone(root: Path, store: StateStore) -> None:
    """A read that saves the fold alone (``groups --resume-state``, the follow sensor) goes on, then
    more is appended."""
    load_partition_dir_resumable(
        _part(root), store, num_partitions=50, max_batch_bytes=DEFAULT_MAX_BATCH_BYTES
    )
    _small_log(root, appended=5)


def test_a_scan_behind_the_fold_reads_up_to_the_folds_point_and_resumes(tmp_path: Path) -> None:
    outcome, judged, fresh = _twice(tmp_path, _fold_alone)
    assert outcome.resumed and "read on to the fold's offset" in outcome.detail, outcome.detail
    # only what the fold alone read since the scan was saved (3 commits of one batch each)
    assert 0 < outcome.own_bytes < 3 * 150
    assert judged == fresh
    # caught up and saved at the fold's point: the next run with nothing appended reads nothing
    _part, again, cache = _run(tmp_path / "log", StateStore.at(tmp_path / "state"), 2)
    assert again.resumed and again.own_bytes == 0 and cache.stats.bytes_read == 0, again.detail


def test_a_scan_behind_a_fold_that_reads_nothing_more_is_saved_at_the_folds_point(tmp_path: Path) -> None:
    root, store = tmp_path / "log", StateStore.at(tmp_path / "state")
    _small_log(root)
    checkpoints(root, {0: 2})
    _run(root, store, 2)
    _small_log(root, appended=3)
    _fold_alone(root, store)  # the fold reads everything appended; nothing is appended after it
    _small_log(root, appended=5)
    from offsetops.coordinator_core.resume import load_partition_dir_resumable as fold_only

    fold_only(_part(root), store, num_partitions=50, max_batch_bytes=DEFAULT_MAX_BATCH_BYTES)
    _part1, caught_up, _ = _run(root, store, 2)
    assert caught_up.resumed and caught_up.own_bytes > 0
    _part2, again, _ = _run(root, store, 2)
    assert again.resumed and again.own_bytes == 0, again.detail


def _older_fold(root: Path, store: StateStore) -> None:
    """The fold's state is put back to an older copy, behind the scan's (a restored backup)."""
    state = store.path("__consumer_offsets", 0)
    older = state.read_bytes()
    _run(root, store, 2)
    state.write_bytes(older)
    _small_log(root, appended=5)


@pytest.mark.parametrize(
    ("between", "reason"),
    [
        (_move_checkpoint, "scan_inputs_changed"),
        (_corrupt, "state_corrupt"),
        (_version, "state_version"),
        (_foreign, "state_foreign"),
        (_older_fold, "scan_stale"),
    ],
)
def test_a_scan_state_it_cannot_trust_gives_the_fresh_result_and_the_reason(
    tmp_path: Path, between, reason: str
) -> None:
    outcome, judged, fresh = _twice(tmp_path, between)
    assert not outcome.resumed and outcome.reason == reason, outcome.detail
    assert judged == fresh
    # the fold went on from its own state: the scan read the bytes before its point itself
    assert outcome.own_bytes > 0


def test_after_a_refusal_the_next_run_resumes_again(tmp_path: Path) -> None:
    _twice(tmp_path, _corrupt)
    root, store = tmp_path / "log", StateStore.at(tmp_path / "state")
    _small_log(root, appended=6)
    part, outcome, _ = _run(root, store, 2)
    assert outcome.resumed, outcome.detail
    assert _judged(part, outcome.scan, T0, 2) == _fresh(part, dirty_from(2, None, 0), T0, 2)


def test_a_segment_the_cleaner_rewrote_is_scanned_again(tmp_path: Path) -> None:
    from offsetops.coordinator_core.records.builder import build_record_batch

    from tests.coordinator_core.cleaner_audit.scenarios import commits, key

    def compact(root: Path, _store: StateStore) -> int:
        # the cleaner drops the superseded commit of g0 at offset 0 and keeps every other offset
        pdir = partition_dir(root, 0)
        tomb = build_record_batch([(key("g1"), None, T0 - 3 * DAY_MS)], base_offset=3)
        horizon = build_record_batch([(key("g2"), None, T0 - DAY_MS)], base_offset=4, delete_horizon_ms=T0)
        write_segment(pdir, 0, [commits(1, ["g1", "g2"], T0 - 4 * DAY_MS), tomb, horizon,
                                commits(5, ["g0"], T0 - 2 * DAY_MS)], T0 - 2 * DAY_MS)  # fmt: skip
        checkpoints(root, {0: 6})
        return 6

    # the Scala rules: no group exists only through a commit, so the fold finds its place again by offset
    outcome, judged, fresh = _twice(tmp_path, compact, semantics="scala")
    assert not outcome.resumed and outcome.reason == "segment_rewritten", outcome.detail
    assert judged == fresh
