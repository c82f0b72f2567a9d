"""A tiny builder of ``__consumer_offsets`` partitions for the expiration tests.

Records are encoded with the project's schema encoders and batch builders, so what the tests load is
byte-for-byte what a broker would have written (magic 2 by default, magic 1 on request).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records.builder import (
    build_control_batch,
    build_legacy_message_set,
    build_record_batch,
)
from offsetops.coordinator_core.schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    Subscription,
    encode_key,
    encode_subscription,
    encode_value,
)

HOUR = 3_600_000
DAY = 24 * HOUR


def offset_key(group: str, topic: str, partition: int, record_type: int = 1) -> bytes:
    return encode_key(OffsetCommitKey(group, topic, partition, record_type))


def group_key(group: str) -> bytes:
    return encode_key(GroupMetadataKey(group))


@dataclass
class ScenarioLog:
    """Batches for one ``__consumer_offsets`` partition, appended in log order."""

    partition: int
    next_offset: int = 0
    chunks: list[tuple[str, list, dict]] = field(default_factory=list)

    def _plain(self, records: list[tuple[bytes, bytes | None, int]]) -> None:
        self.chunks.append(("plain", records, {}))

    def commit(
        self,
        group: str,
        topic: str,
        partition: int,
        offset: int,
        ts: int,
        *,
        expire_ts: int | None = None,
        key_type: int = 1,
    ) -> ScenarioLog:
        """One offset commit; ``expire_ts`` writes a v1 value (explicit expireTimestamp)."""
        if expire_ts is not None:
            value = OffsetCommitValue(1, offset, metadata="", commit_timestamp=ts, expire_timestamp=expire_ts)
        else:
            value = OffsetCommitValue(3, offset, leader_epoch=0, metadata="", commit_timestamp=ts)
        self._plain([(offset_key(group, topic, partition, key_type), encode_value(value), ts)])
        return self

    def group(
        self,
        group: str,
        *,
        protocol_type: str = "consumer",
        generation: int = 1,
        members: Sequence[tuple[str, Sequence[str]]] = (),
        state_ts: int | None = None,
        ts: int = 0,
        version: int = 3,
    ) -> ScenarioLog:
        """A GroupMetadata record; ``members`` are ``(member_id, subscribed topics)``."""
        ms = tuple(
            MemberMetadata(
                member_id=mid,
                group_instance_id=None,
                client_id="c",
                client_host="/127.0.0.1",
                rebalance_timeout=300000,
                session_timeout=45000,
                subscription=encode_subscription(Subscription(0, tuple(topics))),
                assignment=b"",
            )
            for mid, topics in members
        )
        value = GroupMetadataValue(
            version=version,
            protocol_type=protocol_type,
            generation=generation,
            protocol="range" if members else None,
            leader=members[0][0] if members else None,
            current_state_timestamp=state_ts if state_ts is not None else -1,
            members=ms,
        )
        self._plain([(group_key(group), encode_value(value), ts)])
        return self

    def tombstone(self, key: bytes, ts: int) -> ScenarioLog:
        self._plain([(key, None, ts)])
        return self

    def txn_commit(
        self, pid: int, group: str, topic: str, partition: int, offset: int, ts: int
    ) -> ScenarioLog:
        value = OffsetCommitValue(3, offset, leader_epoch=0, metadata="", commit_timestamp=ts)
        self.chunks.append(
            ("txn", [(offset_key(group, topic, partition), encode_value(value), ts)], {"pid": pid})
        )
        return self

    def marker(self, pid: int, commit: bool, ts: int) -> ScenarioLog:
        self.chunks.append(("marker", [], {"pid": pid, "commit": commit, "ts": ts}))
        return self

    def to_bytes(self, magic: int = 2) -> bytes:
        out = bytearray()
        off = self.next_offset
        for kind, records, opts in self.chunks:
            if kind == "plain" and magic < 2:
                out += build_legacy_message_set(records, magic=magic, base_offset=off)
                off += len(records)
            elif kind == "plain":
                out += build_record_batch(records, base_offset=off, partition_leader_epoch=3)
                off += len(records)
            elif kind == "txn":
                out += build_record_batch(
                    records,
                    base_offset=off,
                    producer_id=opts["pid"],
                    producer_epoch=0,
                    base_sequence=0,
                    is_transactional=True,
                    partition_leader_epoch=3,
                )
                off += len(records)
            else:
                out += build_control_batch(
                    opts["commit"],
                    base_offset=off,
                    producer_id=opts["pid"],
                    producer_epoch=0,
                    coordinator_epoch=1,
                    timestamp=opts["ts"],
                    partition_leader_epoch=3,
                )
                off += 1
        return bytes(out)

    def write(self, logdir: Path, *, magic: int = 2) -> Path:
        """Write ``<logdir>/__consumer_offsets-N/00000000000000000000.log``; returns the partition dir."""
        pdir = logdir / f"__consumer_offsets-{self.partition}"
        pdir.mkdir(parents=True, exist_ok=True)
        (pdir / f"{self.next_offset:020d}.log").write_bytes(self.to_bytes(magic))
        return pdir


def group_in(partition: int, prefix: str, num_partitions: int = 50) -> str:
    """A group id that ``partition_for`` maps to ``partition`` (so the loader sees it where Kafka would)."""
    for i in range(100000):
        gid = f"{prefix}-{i}"
        if partition_for(gid, num_partitions) == partition:
            return gid
    raise AssertionError("no group id found")
