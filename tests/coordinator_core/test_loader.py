"""doLoadGroupsAndOffsets semantics, on batches built byte for byte as a broker writes them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.loader import PartitionFold, load_partition
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records import build_control_batch, build_record_batch, read_batches
from offsetops.coordinator_core.schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from offsetops.coordinator_core.schema.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)

T0 = 1_700_000_000_000


def okey(group: str, topic: str, partition: int, record_type: int = 1) -> bytes:
    return encode_key(OffsetCommitKey(group=group, topic=topic, partition=partition, record_type=record_type))


def oval(offset: int, ts: int = T0, version: int = 3, expire: int | None = None, metadata: str = "") -> bytes:
    return encode_value(
        OffsetCommitValue(
            version=version,
            offset=offset,
            metadata=metadata,
            commit_timestamp=ts,
            expire_timestamp=expire if version == 1 and expire is not None else -1,
        )
    )


def gkey(group: str) -> bytes:
    return encode_key(GroupMetadataKey(group=group))


def gval(generation: int, members: list[tuple[str, list[str]]], version: int = 3, cst: int = T0) -> bytes:
    return encode_value(
        GroupMetadataValue(
            version=version,
            protocol_type="consumer",
            generation=generation,
            protocol="range",
            leader=members[0][0] if members else None,
            current_state_timestamp=cst if version >= 2 else -1,
            members=tuple(
                MemberMetadata(
                    member_id=mid,
                    group_instance_id=None,
                    client_id="client",
                    client_host="/10.0.0.1",
                    rebalance_timeout=300000,
                    session_timeout=45000,
                    subscription=encode_subscription(Subscription(version=0, topics=topics)),
                    assignment=encode_assignment(Assignment(version=0, partitions={t: [0] for t in topics})),
                )
                for mid, topics in members
            ),
        )
    )


class Log:
    """Appends batches with consecutive offsets, as a partition leader would."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.next = 0

    def data(self, records: list[tuple[bytes, bytes | None]], *, pid: int = -1, txn: bool = False) -> int:
        first = self.next
        self.buf += build_record_batch(
            [(k, v, T0) for k, v in records],
            base_offset=first,
            producer_id=pid,
            producer_epoch=0 if pid >= 0 else -1,
            base_sequence=0 if pid >= 0 else -1,
            is_transactional=txn,
        )
        self.next += len(records)
        return first

    def marker(self, pid: int, commit: bool) -> None:
        self.buf += build_control_batch(
            commit,
            base_offset=self.next,
            producer_id=pid,
            producer_epoch=0,
            coordinator_epoch=1,
            timestamp=T0,
        )
        self.next += 1

    def load(self, partition: int | None = None, semantics: str = "java"):
        errors: list = []
        cache = load_partition(
            read_batches(bytes(self.buf), errors=errors), partition=partition, semantics=semantics
        )
        assert errors == []
        return cache


def offsets_of(cache, group: str) -> dict[tuple[str, int], int]:
    return {tp: o.offset for tp, o in cache.groups[group].offsets.items()}


def test_last_commit_wins_and_offset_only_group_is_empty_without_protocol_type():
    log = Log()
    log.data([(okey("g", "t", 0), oval(5)), (okey("g", "t", 1), oval(7))])
    log.data([(okey("g", "t", 0), oval(9))])
    cache = log.load()
    assert offsets_of(cache, "g") == {("t", 0): 9, ("t", 1): 7}
    g = cache.groups["g"]
    assert (g.state, g.protocol_type, g.generation, g.members) == ("Empty", None, 0, [])
    assert cache.groups["g"].offsets[("t", 0)].record_offset == 2
    assert cache.stats.records == 3 and cache.stats.batches == 2


def test_legacy_type0_key_and_type1_key_are_the_same_partition():
    log = Log()
    log.data([(okey("g", "t", 0, record_type=0), oval(1, version=0))])
    log.data([(okey("g", "t", 0, record_type=1), oval(2))])
    assert offsets_of(log.load(), "g") == {("t", 0): 2}


def test_group_metadata_state_members_and_subscriptions():
    log = Log()
    log.data([(gkey("g"), gval(3, [("m1", ["orders", "pay"]), ("m2", ["orders"])]))])
    log.data([(gkey("empty"), gval(4, []))])
    cache = log.load()
    g = cache.groups["g"]
    assert g.state == "Stable" and g.generation == 3 and g.protocol == "range" and g.leader == "m1"
    assert [m.member_id for m in g.members] == ["m1", "m2"]
    assert g.members[0].subscribed_topics == ["orders", "pay"]
    assert g.members[0].assignment == {"orders": [0], "pay": [0]}
    assert g.subscribed_topics == {"orders", "pay"}
    assert g.current_state_timestamp == T0
    assert cache.groups["empty"].state == "Empty"
    assert cache.groups["empty"].protocol_type == "consumer"


def test_tombstones_remove_offsets_and_groups():
    log = Log()
    log.data([(gkey("g"), gval(1, [("m1", ["t"])])), (okey("g", "t", 0), oval(3))])
    log.data([(okey("g", "t", 0), None)])
    log.data([(gkey("g"), None)])
    log.data([(okey("h", "t", 0), oval(1)), (gkey("h"), gval(1, []))])
    log.data([(gkey("h"), None)])
    cache = log.load()
    assert "g" not in cache.groups
    # Offsets outlive a group tombstone: the group comes back Empty without a protocol type.
    assert cache.groups["h"].protocol_type is None and offsets_of(cache, "h") == {("t", 0): 1}
    assert cache.stats.tombstones == 3


def test_transactional_commit_abort_and_hanging():
    log = Log()
    log.data([(okey("g", "t", 0), oval(1))])
    log.data([(okey("g", "t", 0), oval(10))], pid=100, txn=True)  # committed later
    log.data([(okey("g", "t", 1), oval(20))], pid=200, txn=True)  # aborted
    log.data([(okey("g", "t", 2), oval(30))], pid=300, txn=True)  # hanging
    log.marker(100, commit=True)
    log.marker(200, commit=False)
    cache = log.load()
    g = cache.groups["g"]
    assert offsets_of(cache, "g") == {("t", 0): 10}
    assert {pid: {tp: o.offset for tp, o in offs.items()} for pid, offs in g.pending_offsets.items()} == {
        300: {("t", 2): 30}
    }
    assert cache.open_transactions == {300: {"g"}}
    assert cache.stats.control_records == 2 and cache.stats.transactional_batches == 3


def test_pending_commit_older_than_a_later_plain_commit_does_not_win():
    log = Log()
    log.data([(okey("g", "t", 0), oval(10))], pid=7, txn=True)
    log.data([(okey("g", "t", 0), oval(11))])
    log.marker(7, commit=True)
    assert offsets_of(log.load(), "g") == {("t", 0): 11}


def test_java_and_scala_differ_on_tombstone_during_open_transaction():
    log = Log()
    log.data([(okey("g", "t", 0), oval(1))])
    log.data([(okey("g", "t", 0), oval(5))], pid=9, txn=True)
    log.data([(okey("g", "t", 0), None)])
    log.marker(9, commit=True)
    # Java coordinator: the tombstone drops the partition from open transactions too; the group the
    # commits created stays, with no offsets (OffsetMetadataManager.replay).
    java = log.load(semantics="java")
    assert java.groups["g"].state == "Empty" and offsets_of(java, "g") == {}
    # Scala coordinator: the tombstone removed only the committed offset; the COMMIT re-adds it.
    assert offsets_of(log.load(semantics="scala"), "g") == {("t", 0): 5}


def test_misplaced_groups_are_reported():
    home = partition_for("testgroup")
    assert home == 27
    log = Log()
    log.data([(okey("testgroup", "t", 0), oval(1))])
    assert log.load(partition=27).misplaced_groups == []
    assert log.load(partition=3).misplaced_groups == ["testgroup"]


def test_unknown_record_type_is_counted_not_fatal():
    log = Log()
    log.data([(b"\x03\xe7" + b"\x00\x01g", b"\x00\x00junk"), (okey("g", "t", 0), oval(4))])
    cache = log.load()
    assert cache.stats.unknown_record_types == 1
    assert cache.stats.records_by_type[999] == 1
    assert offsets_of(cache, "g") == {("t", 0): 4}


def test_unknown_value_version_is_an_error_naming_the_offset():
    log = Log()
    log.data([(okey("g", "t", 0), oval(4))])
    log.data([(okey("g", "t", 1), b"\x00\x63" + b"\x00" * 20)])
    errors: list = []
    cache = load_partition(read_batches(bytes(log.buf), errors=errors, file="seg.log"), partition=None)
    assert errors == []
    [err] = cache.stats.errors
    assert err.kind == "unknown_value_version" and err.offset == 1 and err.file == "seg.log"
    assert offsets_of(cache, "g") == {("t", 0): 4}


def test_missing_key_is_an_error_and_the_load_goes_on():
    log = Log()
    log.data([(okey("g", "t", 0), oval(4))])
    log.buf += build_record_batch([(None, b"\x00\x03", T0)], base_offset=log.next)
    log.next += 1
    errors: list = []
    cache = load_partition(read_batches(bytes(log.buf), errors=errors), partition=None)
    assert [e.kind for e in cache.stats.errors] == ["missing_key"]
    assert offsets_of(cache, "g") == {("t", 0): 4}


# -- segment-parallel folds merge to the sequential result -------------------------------------------


@dataclass(frozen=True)
class Op:
    kind: str  # commit | tomb | group | gtomb | txn | marker
    group: int
    part: int
    pid: int
    value: int


ops = st.lists(
    st.builds(
        Op,
        kind=st.sampled_from(["commit", "commit", "tomb", "group", "gtomb", "txn", "txn", "marker", "abort"]),
        group=st.integers(0, 2),
        part=st.integers(0, 2),
        pid=st.integers(1, 3),
        value=st.integers(0, 1000),
    ),
    min_size=1,
    max_size=40,
)


def _apply(log: Log, op: Op) -> None:
    g = f"g{op.group}"
    if op.kind == "commit":
        log.data([(okey(g, "t", op.part), oval(op.value))])
    elif op.kind == "tomb":
        log.data([(okey(g, "t", op.part), None)])
    elif op.kind == "group":
        log.data([(gkey(g), gval(op.value, [("m", ["t"])] if op.value % 2 else []))])
    elif op.kind == "gtomb":
        log.data([(gkey(g), None)])
    elif op.kind == "txn":
        log.data([(okey(g, "t", op.part), oval(op.value))], pid=op.pid, txn=True)
    else:
        log.marker(op.pid, commit=op.kind == "marker")


def _summary(cache) -> dict:
    return {
        gid: (
            g.state,
            g.protocol_type,
            g.generation,
            {tp: (o.offset, o.record_offset) for tp, o in g.offsets.items()},
            {pid: {tp: o.offset for tp, o in p.items()} for pid, p in g.pending_offsets.items()},
        )
        for gid, g in cache.groups.items()
    }


@settings(max_examples=150, deadline=None)
@given(ops=ops, cuts=st.lists(st.integers(0, 40), max_size=4))
def test_merged_segment_folds_equal_the_sequential_load(ops, cuts):
    log = Log()
    boundaries = []
    for i, op in enumerate(ops):
        if i in cuts:
            boundaries.append(len(log.buf))
        _apply(log, op)
    errors: list = []
    batches = list(read_batches(bytes(log.buf), errors=errors))
    assert errors == []
    sequential = PartitionFold().add_batches(batches).finish()

    pieces: list[list] = [[]]
    starts = {b for b in boundaries if b > 0}
    for b in batches:
        if b.position in starts and pieces[-1]:
            pieces.append([])
        pieces[-1].append(b)
    folds = [PartitionFold().add_batches(p) for p in pieces]
    merged = folds[0]
    for f in folds[1:]:
        merged.merge(f)
    assert _summary(merged.finish()) == _summary(sequential)


# -- the fast path (whole buffers, mapped segments) equals the general reader --------------------------


def _mixed_log() -> bytes:
    from offsetops.coordinator_core.records import build_legacy_message_set

    log = Log()
    log.data([(okey("g", "t", 0), oval(1)), (gkey("g"), gval(2, [("m", ["t"])]))])
    log.buf += build_record_batch(
        [(okey("g", "t", 1), oval(2), T0), (okey("g", "t", 2), oval(3), T0)],
        base_offset=log.next,
        compression=4,
    )
    log.next += 2
    log.data([(okey("g", "t", 3), oval(4))], pid=5, txn=True)
    log.marker(5, commit=True)
    log.buf += build_legacy_message_set(
        [(okey("h", "u", 0), oval(9, version=1), T0)], magic=1, base_offset=log.next
    )
    log.next += 1
    log.data([(okey("g", "t", 0), None)])
    return bytes(log.buf)


def _fold_view(fold: PartitionFold):
    cache = fold.finish()
    return (
        _summary(cache),
        [(e.kind, e.position, e.offset) for e in cache.stats.errors],
        (cache.stats.batches, cache.stats.records, cache.stats.tombstones, cache.stats.control_records),
    )


@pytest.mark.parametrize("damage", ["none", "crc", "truncate", "garbage_tail", "zero_padding"])
def test_fast_path_equals_general_reader(tmp_path, damage):
    data = bytearray(_mixed_log())
    if damage == "crc":
        data[70] ^= 0xFF
    elif damage == "truncate":
        del data[-7:]
    elif damage == "garbage_tail":
        data += b"\x00\x00\x00\x00\x00\x00\x00\x63\xff\xff\xff\xf0" + b"\x01" * 40
    elif damage == "zero_padding":
        data += b"\x00" * 4096
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    general = PartitionFold()
    general.add_batches(read_batches(bytes(data), errors=general.stats.errors, file=str(path)))
    fast = PartitionFold()
    fast.add_segment(path)
    buffered = PartitionFold()
    buffered.add_buffer(bytes(data), file=str(path))
    assert _fold_view(fast) == _fold_view(general) == _fold_view(buffered)
    if damage in ("crc", "truncate", "garbage_tail"):
        assert _fold_view(fast)[1], "the damage must be reported"


# -- KIP-848 consumer groups ----------------------------------------------------------------------


def _kip848_log(*, with_topic_id: bool) -> Log:
    import uuid

    from offsetops.coordinator_core.schema import GenericValue, GroupKey

    tid = uuid.UUID("5b4a3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d")

    def k(rtype: int, member: str | None = None) -> bytes:
        fields = {"groupId": "g848"} | ({"memberId": member} if member else {})
        return encode_key(GroupKey(rtype, "g848", fields))

    def v(rtype: int, fields: dict) -> bytes:
        return encode_value(GenericValue(rtype, 0, fields))

    assigned = [{"topicId": tid, "partitions": [1, 0]}]
    log = Log()
    log.data(
        [
            (k(3), v(3, {"epoch": 5})),
            (
                k(5, "m1"),
                v(
                    5,
                    {
                        "instanceId": None,
                        "rackId": None,
                        "clientId": "c",
                        "clientHost": "/h",
                        "subscribedTopicNames": ["orders"],
                        "subscribedTopicRegex": None,
                        "rebalanceTimeoutMs": 30000,
                        "serverAssignor": "uniform",
                    },
                ),
            ),
            (k(6), v(6, {"assignmentEpoch": 5})),
            (k(7, "m1"), v(7, {"topicPartitions": assigned})),
            (
                k(8, "m1"),
                v(
                    8,
                    {
                        "memberEpoch": 5,
                        "previousMemberEpoch": 4,
                        "state": 0,
                        "assignedPartitions": assigned,
                        "partitionsPendingRevocation": [],
                    },
                ),
            ),
        ]
    )
    # Kafka 4.1 writes OffsetCommitValue v4 with the TopicId tag, and no partition metadata record.
    value = OffsetCommitValue(
        version=4, offset=7, commit_timestamp=T0, topic_id=tid if with_topic_id else None
    )
    log.data([(okey("g848", "orders", 0), encode_value(value))])
    return log


def test_kip848_group_state_members_and_assignment_named_by_offset_topic_ids():
    g = _kip848_log(with_topic_id=True).load().groups["g848"]
    assert (g.group_type, g.state, g.protocol_type, g.generation) == ("consumer", "Stable", "consumer", 5)
    [m] = g.members
    assert m.subscribed_topics == ["orders"] and m.assignment == {"orders": [0, 1]}
    assert {tp: o.offset for tp, o in g.offsets.items()} == {("orders", 0): 7}


def test_kip848_topic_ids_without_a_name_stay_ids():
    [m] = _kip848_log(with_topic_id=False).load().groups["g848"].members
    assert list(m.assignment) == ["5b4a3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"]


def test_add_segment_hands_its_one_mapping_to_a_second_reader(tmp_path) -> None:
    """``also`` gets the very bytes the fold walked (the reload's cleaner scan reads no file itself);
    an empty or unopenable file gives it nothing, and the fold's error says why."""
    data = build_record_batch([(b"\x00\x01k", b"v", 5)], base_offset=0)
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(data)
    seen: list[bytes] = []
    fold = PartitionFold(partition=0)
    assert fold.add_segment(seg, also=lambda mm, scan: seen.append(bytes(mm[:]))) == len(data)
    assert seen == [data]
    empty = tmp_path / "00000000000000000001.log"
    empty.write_bytes(b"")
    assert PartitionFold(partition=0).add_segment(empty, also=lambda mm, scan: seen.append(b"x")) == 0
    missing = PartitionFold(partition=0)
    assert missing.add_segment(tmp_path / "absent.log", also=lambda mm, scan: seen.append(b"x")) is None
    assert seen == [data] and [e.kind for e in missing.stats.errors] == ["io"]
