"""SnapshotPieces: across updates that replace some partitions' caches and move some data partitions'
log offsets, the views equal ``describe_groups`` of every cache and the exposition is byte for byte
``generate_latest`` of ``snapshot_metrics``, while only the partitions that moved are computed again."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.cache import (
    CoordinatorCache,
    GroupMetadata,
    LoadStats,
    MemberMetadata,
    OffsetAndMetadata,
)
from offsetops.coordinator_core.data_offsets import PartitionOffsets
from offsetops.coordinator_core.describe import describe_groups
from offsetops.coordinator_core.failover import forecast_failover, loads_from_caches
from offsetops.coordinator_core.metrics_pieces import SnapshotPieces, render_families
from offsetops.coordinator_core.metrics_snapshot import Snapshot, compute_snapshot, snapshot_metrics

from tests.support.simdirs import sim_share_streams as sim_share_streams

PARTITIONS = 4
NOW_MS = 1_700_000_000_000
#: group ids and topics as hostile as the data can make them: quotes, backslashes, newlines, controls,
#: bidi overrides, non-ASCII, and ids the label policy shows alike
NAMES = st.one_of(
    st.text(alphabet=st.sampled_from('ab"\\\n\x00\u202e\u00e9{}=,'), min_size=1, max_size=4),
    st.sampled_from(["\x00", "\\x00", "\n", "\\n", "g\u202e", "g\\u202e"]),
)
#: where Go's float format switches to an exponent, and integers near float precision
OFFSET = st.one_of(st.integers(0, 10**18), st.sampled_from([999_999, 10**6, 10**15 - 1, 10**15, 2**53 + 1]))
TOPICS = st.sampled_from(["orders", 'we"ird', "t\\1", "x\ny"])


@st.composite
def groups(draw) -> dict[str, GroupMetadata]:
    out = {}
    for gid in draw(st.lists(NAMES, max_size=5, unique=True)):
        offsets = {
            (draw(TOPICS), draw(st.integers(0, 2))): OffsetAndMetadata(
                draw(OFFSET), None, "", NOW_MS - draw(st.integers(0, 10**9)), None, 0
            )
            for _ in range(draw(st.integers(0, 3)))
        }
        members = [
            MemberMetadata(f"m{i}", None, "c", "/h", 10, 10, [t], {t: [0, 1]})
            for i, t in enumerate(draw(st.lists(TOPICS, max_size=2)))
        ]
        out[gid] = GroupMetadata(
            gid, "Stable" if members else "Empty", "consumer", draw(st.integers(0, 9)), members=members,
            offsets=offsets,
        )  # fmt: skip
    return out


def cache(partition: int, gs: dict[str, GroupMetadata], records: int) -> CoordinatorCache:
    return CoordinatorCache(partition, gs, LoadStats(records=records), num_partitions=PARTITIONS)


LOG_OFFSETS = st.dictionaries(
    st.tuples(TOPICS, st.integers(0, 2)),
    st.builds(PartitionOffsets, st.integers(0, 5), st.integers(5, 10**12), st.just("log dir")),
    max_size=6,
)
#: an update: the partitions whose cache is replaced (with their new groups) and the log offsets now
UPDATE = st.tuples(
    st.dictionaries(st.integers(0, PARTITIONS - 1), groups(), max_size=PARTITIONS), LOG_OFFSETS
)


def snapshot(pieces: SnapshotPieces, caches: list[CoordinatorCache], log_offsets) -> Snapshot:
    snap = compute_snapshot(
        caches, log_offsets, log_dir=None, now_ms=NOW_MS, retention_ms=7 * 86_400_000,
        forecast_horizon_ms=86_400_000, taken_at=1.0, views=pieces.views(caches, log_offsets),
    )  # fmt: skip
    snap.failover = forecast_failover(loads_from_caches(caches))
    return snap


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(groups(), min_size=PARTITIONS, max_size=PARTITIONS),
    updates=st.lists(UPDATE, min_size=1, max_size=4),
    granularity=st.sampled_from(["partition", "topic"]),
)
def test_every_update_equals_a_whole_recompute_and_render(first, updates, granularity) -> None:
    pieces = SnapshotPieces(granularity)
    caches = [cache(p, gs, 1) for p, gs in enumerate(first)]
    log_offsets: dict = {}
    for step, (replaced, log_offsets_now) in enumerate([({}, {}), *updates]):
        for p, gs in replaced.items():
            caches[p] = cache(p, gs, step + 2)
        previous, log_offsets = log_offsets, log_offsets_now
        snap = snapshot(pieces, caches, log_offsets)
        assert snap.views == describe_groups(caches, log_offsets)
        whole = render_families(snapshot_metrics(snap, granularity=granularity))
        assert pieces.exposition(snap) == whole
        if step:
            moved = {
                tp for tp in previous.keys() | log_offsets.keys() if previous.get(tp) != log_offsets.get(tp)
            }
            recomputed = {c.partition for c in caches if c.partition in replaced or any(
                (r.topic, r.partition) in moved for v in describe_groups([c], log_offsets) for r in v.rows)
            }  # fmt: skip
            assert set(pieces.recomputed) <= recomputed | set(replaced)


def test_only_the_moved_partition_is_recomputed_and_its_lines_replaced() -> None:
    pieces = SnapshotPieces()
    g = {p: GroupMetadata(f"g{p}", "Empty", "consumer", 1, offsets={("t", p): OffsetAndMetadata(
        5, None, "", NOW_MS, None, 0)}) for p in range(PARTITIONS)}  # fmt: skip
    caches = [cache(p, {g[p].group_id: g[p]}, 1) for p in range(PARTITIONS)]
    offsets = {("t", p): PartitionOffsets(0, 10, "log dir") for p in range(PARTITIONS)}
    pieces.exposition(snapshot(pieces, caches, offsets))
    assert pieces.recomputed == (0, 1, 2, 3)
    moved = GroupMetadata("g2", "Empty", "consumer", 1, offsets={("t", 2): OffsetAndMetadata(
        8, None, "", NOW_MS, None, 0)})  # fmt: skip
    again = GroupMetadata("h2", "Empty", "consumer", 1, offsets={("u", 0): OffsetAndMetadata(
        1, None, "", NOW_MS, None, 0)})  # fmt: skip
    caches[2] = cache(2, {"g2": g[2], "h2": again}, 2)
    pieces.exposition(snapshot(pieces, caches, offsets))
    caches[2] = cache(2, {"g2": moved, "h2": replace(again, offsets=dict(again.offsets))}, 3)
    offsets[("t", 3)] = PartitionOffsets(0, 12, "log dir")
    reused = pieces.reused
    snap = snapshot(pieces, caches, offsets)
    assert pieces.recomputed == (2, 3)  # g2's commit, and the log end of the partition g3 commits to
    assert pieces.reused == reused + 1  # h2: an equal group, read again, keeps its view and lines
    text = pieces.exposition(snap).decode()
    assert 'committed_offset{group_id="g2",partition_id="2",topic_name="t"} 8.0' in text
    assert 'partition_lag{group_id="g3",partition_id="3",topic_name="t"} 7.0' in text
    assert text.encode() == render_families(snapshot_metrics(snap))


def test_a_simulated_kafka_4_2_log_dir_renders_alike_with_share_and_streams_groups(sim_share_streams) -> None:
    """Every group type (classic, consumer, share with its assignment epoch, streams with its tasks) and
    the data partitions' real log offsets, before and after one partition's cache is read again."""
    from offsetops.coordinator_core.data_offsets import offline_offsets
    from offsetops.coordinator_core.describe import GroupFilter, wanted_partitions
    from offsetops.coordinator_core.sources.source import Source

    logdir, _truth = sim_share_streams
    source = Source(log_dir=str(logdir))
    caches = source.load_caches(num_partitions=PARTITIONS, semantics="java")
    log_offsets = offline_offsets([str(logdir)], wanted_partitions(caches, GroupFilter()))
    assert log_offsets and {g.group_type for c in caches for g in c.groups.values()} >= {"share", "streams"}
    pieces = SnapshotPieces()
    for _ in range(2):
        snap = snapshot(pieces, caches, log_offsets)
        assert snap.views == describe_groups(caches, log_offsets)
        text = pieces.exposition(snap)
        assert text == render_families(snapshot_metrics(snap))
        assert b"offsetops_streams_group_tasks{" in text and b"offsetops_group_assignment_epoch{" in text
        caches[1] = source.load_caches(num_partitions=PARTITIONS, semantics="java")[1]
    assert pieces.recomputed == (1,)
