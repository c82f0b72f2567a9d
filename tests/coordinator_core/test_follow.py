"""Follower: one cheap look finds the partitions that moved; only those are read again, and the caches it
holds equal a fresh reload of the same bytes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from offsetops.coordinator_core.follow import Follower, source_marks
from offsetops.coordinator_core.resume.memory import MemoryStateStore
from offsetops.coordinator_core.sources.source import Source

from tests.support import appends
from tests.support.appends import FOLLOW_PARTITIONS, append_commits
from tests.support.appends import follow_logdir as follow_logdir
from tests.support.appends import follow_simulated as follow_simulated

PARTITIONS = FOLLOW_PARTITIONS
NOW_MS = 1_700_010_000_000


def groups_for(partition: int, n: int, prefix: str = "follow") -> list[str]:
    return appends.groups_for(partition, n, prefix, PARTITIONS)


def as_dicts(caches) -> dict:
    return {
        c.partition: {g: {k: o.offset for k, o in m.offsets.items()} for g, m in c.groups.items()}
        for c in caches
    }


def follower(logdir: Path, **kw) -> Follower:
    return Follower(Source(log_dir=str(logdir)), num_partitions=PARTITIONS, semantics="java", **kw)


def stateful(logdir: Path, state: Path) -> Follower:
    """A follower whose reads go on from the resume state in ``state``."""
    return Follower(
        Source(log_dir=str(logdir), state_dir=str(state)), num_partitions=PARTITIONS, semantics="java"
    )


def test_nothing_moved_is_an_empty_look(follow_logdir: Path) -> None:
    f = follower(follow_logdir)
    first = f.refresh()
    assert first.read == tuple(range(PARTITIONS))
    assert f.look() == {}


def test_an_append_moves_only_its_partition_and_the_caches_match_a_fresh_reload(follow_logdir: Path) -> None:
    f = follower(follow_logdir)
    f.refresh()
    new = groups_for(2, 3)
    commits = [(g, "orders", p, 500 + p) for g in new for p in range(4)]
    append_commits(follow_logdir / "__consumer_offsets-2", commits, now_ms=NOW_MS)
    moved = f.look()
    assert list(moved) == [2]
    step = f.apply(moved)
    assert step.read == (2,) and step.changed
    held = as_dicts(f.caches)
    assert all(held[2][g] == {("orders", p): 500 + p for p in range(4)} for g in new)
    fresh = Source(log_dir=str(follow_logdir)).load_caches(num_partitions=PARTITIONS, semantics="java")
    assert held == as_dicts(fresh)
    assert f.look() == {}


def test_with_a_state_dir_only_the_appended_bytes_are_read(follow_logdir: Path, tmp_path: Path) -> None:
    f = stateful(follow_logdir, tmp_path / "state")
    first = f.refresh()
    assert first.resumed == 0 and first.fresh == ()  # no state yet is no news
    commits = [(g, "orders", 0, 9) for g in groups_for(1, 2)]
    appended = append_commits(follow_logdir / "__consumer_offsets-1", commits, now_ms=NOW_MS)
    step = f.apply(f.look())
    assert (step.read, step.bytes_read, step.resumed) == ((1,), appended, 1)
    fresh = Source(log_dir=str(follow_logdir)).load_caches(num_partitions=PARTITIONS, semantics="java")
    assert as_dicts(f.caches) == as_dicts(fresh)
    again = f.refresh()  # every partition checked against its state: nothing new to read
    assert (again.bytes_read, again.resumed) == (0, PARTITIONS)


def test_a_truncation_is_a_fresh_read_with_its_reason(follow_logdir: Path, tmp_path: Path) -> None:
    f = stateful(follow_logdir, tmp_path / "state")
    f.refresh()
    seg = sorted((follow_logdir / "__consumer_offsets-0").glob("*.log"))[-1]
    with open(seg, "r+b") as fh:
        fh.truncate(seg.stat().st_size - 1)
    step = f.apply(f.look())
    assert [(x.partition, x.reason) for x in step.fresh] == [(0, "truncated")]
    assert step.resumed == 0


def test_a_partition_gone_is_dropped(follow_logdir: Path) -> None:
    f = follower(follow_logdir)
    f.refresh()
    shutil.rmtree(follow_logdir / "__consumer_offsets-3")
    moved = f.look()
    assert moved == {3: None}
    step = f.apply(moved)
    assert step.removed == (3,)
    assert [c.partition for c in f.caches] == [0, 1, 2]


def test_marks_see_a_rewritten_segment_of_the_same_size(follow_logdir: Path) -> None:
    source = Source(log_dir=str(follow_logdir))
    before = source_marks(source)
    seg = sorted((follow_logdir / "__consumer_offsets-1").glob("*.log"))[-1]
    data = seg.read_bytes()
    seg.unlink()
    seg.write_bytes(data)  # a cleaner swap: same name and size, a new file
    os.utime(seg, ns=(0, 0))
    assert source_marks(source)[1] != before[1]
    assert {p: m for p, m in source_marks(source).items() if p != 1} == {
        p: m for p, m in before.items() if p != 1
    }


def test_a_live_source_is_looked_at_through_an_open_client() -> None:
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig

    with pytest.raises(ValueError, match="open LiveSource"):
        source_marks(Source(client=KafkaClientConfig(bootstrap_servers="127.0.0.1:9")))


@pytest.mark.broker
def test_a_live_partition_moves_when_its_log_end_does(kafka_broker) -> None:
    import uuid

    from offsetops.coordinator_core.kafka_client import KafkaClientConfig

    from tests.support.appends import commit_batches
    from tests.support.broker import BrokerClient

    topic = f"follow-{uuid.uuid4().hex[:8]}"
    first, later = groups_for(0, 2, "live"), groups_for(0, 2, "later")
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic)
        bc.produce_raw(
            topic, 0, commit_batches([(g, "orders", 0, 7) for g in first], base_offset=0, now_ms=NOW_MS)
        )
        config = KafkaClientConfig(bootstrap_servers=kafka_broker.bootstrap)
        source = Source(client=config, topic=topic, state_store=MemoryStateStore())
        f = Follower(source, num_partitions=1, semantics="java")
        try:
            assert f.refresh().read == (0,)
            assert f.look() == {}
            bc.produce_raw(topic, 0, commit_batches([(g, "orders", 0, 9) for g in later], base_offset=0,
                                                    now_ms=NOW_MS))  # fmt: skip
            moved = f.look()
            assert list(moved) == [0]
            f.apply(moved)
        finally:
            f.close()
    (cache,) = f.caches
    assert sorted(cache.groups) == sorted(first + later)
    assert cache.stats.resumed, cache.stats.resume_detail  # fetched from where the last read stopped


def _age(logdir: Path) -> None:
    """The log dir and its partition dirs as a broker's look between rolls: changed an hour ago."""
    old = 1_700_000_000_000_000_000
    for d in [logdir, *logdir.glob("__consumer_offsets-*")]:
        os.utime(d, ns=(old, old))


def test_a_look_between_rolls_stats_the_active_segments_and_sees_what_a_listing_sees(follow_logdir) -> None:
    _age(follow_logdir)
    f = follower(follow_logdir)
    f.refresh()
    look = f._look
    assert look is not None and look.full_looks == 1
    commits = [(g, "orders", 0, 11) for g in groups_for(2, 2)]
    append_commits(follow_logdir / "__consumer_offsets-2", commits, now_ms=NOW_MS)
    moved = f.look()
    assert list(moved) == [2] and look.full_looks == 1  # two stats per partition, no listing
    assert moved[2] == source_marks(Source(log_dir=str(follow_logdir)))[2]
    f.apply(moved)
    assert f.look() == {} and look.full_looks == 1


def test_a_rolled_segment_changes_the_dir_and_the_log_dir_is_listed_again(follow_logdir) -> None:
    _age(follow_logdir)
    f = follower(follow_logdir)
    f.refresh()
    pdir = follow_logdir / "__consumer_offsets-1"
    base = appends.next_offset(pdir)
    (pdir / f"{base:020d}.log").write_bytes(b"")  # the broker rolls a new, empty segment
    append_commits(pdir, [(g, "orders", 0, 12) for g in groups_for(1, 1)], now_ms=NOW_MS)
    moved = f.look()
    assert list(moved) == [1] and f._look is not None and f._look.full_looks == 2
    assert moved[1] == source_marks(Source(log_dir=str(follow_logdir)))[1]
    assert moved[1][1][-1][0] == base


def test_a_dir_changed_right_before_its_listing_is_never_trusted(follow_logdir) -> None:
    """Its next change may carry the same modification time (the file system's granularity)."""
    for d in [follow_logdir, *follow_logdir.glob("__consumer_offsets-*")]:
        os.utime(d)  # every dir changed just now
    f = follower(follow_logdir)
    f.refresh()
    assert f.look() == {}
    assert f._look is not None and f._look.full_looks == 2


def test_a_partition_dir_that_appears_is_seen(follow_logdir: Path, tmp_path: Path) -> None:
    """A replica moved to this log dir (a rename into it: the partition dir keeps its own times)."""
    away = tmp_path / "away"
    shutil.move(follow_logdir / "__consumer_offsets-3", away)
    _age(follow_logdir)
    f = follower(follow_logdir)
    assert f.refresh().read == (0, 1, 2)
    shutil.move(away, follow_logdir / "__consumer_offsets-3")
    assert list(f.look()) == [3]
