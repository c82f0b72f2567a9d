"""A hand-built ``__consumer_offsets`` partition whose commit history is known by construction.

Group ``payments`` (partition_for 50 -> ``PARTITION``): member m1 owns t-0; it commits 100, 150; a commit
for t-1 arrives that no member owns; the group goes Empty; a reset rewinds t-0 to 20; a transactional
commit of 500 is aborted; 30 is committed; then 5000, past t-0's log end of 1000; then an offset
tombstone. Another group's commits are interleaved and must not appear.
"""

from __future__ import annotations

from pathlib import Path

from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records.builder import build_control_batch, build_record_batch
from offsetops.coordinator_core.schema import (
    GroupMetadataKey,
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
from offsetops.coordinator_core.schema.values import GroupMetadataValue, MemberMetadata

GROUP = "payments"
PARTITION = partition_for(GROUP, 50)
T0 = 1_700_000_000_000
MIN = 60_000
DATA_LOG_END = 1000  # t-0's log end in the data partition written next to it


def _commit(group: str, topic: str, part: int, offset: int | None, ts: int) -> tuple:
    key = encode_key(OffsetCommitKey(group=group, topic=topic, partition=part))
    value = (
        None
        if offset is None
        else encode_value(OffsetCommitValue(version=3, offset=offset, leader_epoch=4, commit_timestamp=ts))
    )
    return key, value, ts


def _group(generation: int, members: list[tuple[str, str, dict[str, list[int]]]], ts: int):
    mm = tuple(
        MemberMetadata(
            member_id=mid,
            group_instance_id=None,
            client_id=mid.split("-")[0],
            client_host=host,
            rebalance_timeout=300_000,
            session_timeout=45_000,
            subscription=encode_subscription(Subscription(version=0, topics=sorted(asg))),
            assignment=encode_assignment(Assignment(version=0, partitions=asg)),
        )
        for mid, host, asg in members
    )
    value = GroupMetadataValue(
        version=3,
        protocol_type="consumer",
        generation=generation,
        protocol="range" if mm else None,
        leader=mm[0].member_id if mm else None,
        current_state_timestamp=ts,
        members=mm,
    )
    return encode_key(GroupMetadataKey(group=GROUP)), encode_value(value), ts


def forensics_batches(topic: str = "t") -> list[bytes]:
    """The batches of the offsets partition, in log order."""
    batches = []
    off = 0

    def plain(*records):
        nonlocal off
        batches.append(build_record_batch(list(records), base_offset=off))
        off += len(records)

    plain(_group(1, [("c1-aaa", "/10.0.0.1", {topic: [0]})], T0))  # 0
    plain(_commit(GROUP, topic, 0, 100, T0 + 1 * MIN))  # 1
    plain(_commit("other", topic, 0, 999_999, T0 + 1 * MIN))  # 2 (another group)
    plain(_commit(GROUP, topic, 0, 150, T0 + 2 * MIN))  # 3
    plain(_commit(GROUP, topic, 1, 7, T0 + 3 * MIN))  # 4 not assigned
    plain(_group(2, [], T0 + 4 * MIN))  # 5 Empty
    plain(_commit(GROUP, topic, 0, 20, T0 + 5 * MIN))  # 6 rewind
    batches.append(
        build_record_batch(
            [_commit(GROUP, topic, 0, 500, T0 + 6 * MIN)],
            base_offset=off,
            producer_id=9,
            producer_epoch=0,
            is_transactional=True,
        )
    )  # 7
    off += 1
    batches.append(
        build_control_batch(
            False,
            base_offset=off,
            producer_id=9,
            producer_epoch=0,
            coordinator_epoch=1,
            timestamp=T0 + 7 * MIN,
        )
    )  # 8 abort
    off += 1
    plain(_commit(GROUP, topic, 0, 30, T0 + 8 * MIN))  # 9
    plain(_commit(GROUP, topic, 0, 5000, T0 + 9 * MIN))  # 10 past log end
    plain(_commit(GROUP, topic, 0, 6000, T0 + 10 * MIN))  # 11 not flagged again
    plain(_commit(GROUP, topic, 0, None, T0 + 11 * MIN))  # 12 tombstone
    return batches


def write_forensics_log(root: Path) -> Path:
    """Write the partition and the data partition ``t-0`` (log end 1000) into ``root``; return root."""
    batches = forensics_batches()
    pdir = root / f"__consumer_offsets-{PARTITION}"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"".join(batches))
    data = root / "t-0"
    data.mkdir()
    (data / "00000000000000000000.log").write_bytes(
        build_record_batch([(b"k", b"v", T0)], base_offset=0)
        + build_record_batch([(b"k", b"v", T0)], base_offset=DATA_LOG_END - 1)
    )
    return root
