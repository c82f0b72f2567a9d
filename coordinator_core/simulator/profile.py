"""What a broker of a given Kafka version writes to ``__consumer_offsets`` (``MetadataVersion``,
``GroupMetadataManager.offsetCommitValue`` / ``groupMetadataValue``, ``GroupCoordinatorRecordHelpers``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from offsetops.coordinator_core.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD

CODECS = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}


@dataclass(frozen=True, slots=True)
class BrokerProfile:
    """The record versions and coordinator rules of one Kafka release.

    ``semantics`` is the loader whose rules the broker follows: ``scala`` (GroupMetadataManager, up to
    3.x) or ``java`` (the 4.x group coordinator).
    """

    kafka_version: str
    major: int
    minor: int
    offset_value_version: int
    group_value_version: int
    semantics: str
    kip848: bool  # ConsumerGroup* records (types 3-8), GA in 4.0
    static_members: bool  # KIP-345 groupInstanceId, GroupMetadataValue v3 (2.3)
    expire_in_value: bool  # <= 2.0: OffsetCommitValue v1 carries commitTs + retention
    explicit_retention_v1: bool  # 2.1+: v1 only when the client sent a retention time
    delete_horizon: bool  # KIP-534 (3.1): tombstone horizon stored in the batch
    java_tombstones: bool  # 4.x: a classic group tombstone does not need generation > 0
    zstd: bool  # KIP-110 (2.1)
    kraft: bool  # meta.properties v1 with node.id (ZooKeeper is gone in 4.0)
    share_groups: bool = False  # KIP-932 share groups (types 10-15), production-ready in 4.2
    streams_groups: bool = False  # KIP-1071 streams groups (types 17-23), production-ready in 4.2

    @property
    def codecs(self) -> tuple[int, ...]:
        base = (NONE, GZIP, SNAPPY, LZ4)
        return (*base, ZSTD) if self.zstd else base

    def at_least(self, major: int, minor: int) -> bool:
        return (self.major, self.minor) >= (major, minor)


def broker_profile(kafka_version: str) -> BrokerProfile:
    """The profile of Kafka ``kafka_version`` ("2.0", "2.3.1", "3.9", "4.1.0"); 2.0 is the oldest."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", kafka_version.strip())
    if not m:
        raise ValueError(f"kafka version must look like 2.0, 3.9 or 4.1.0, got {kafka_version!r}")
    major, minor = int(m.group(1)), int(m.group(2))
    v = (major, minor)
    if v < (2, 0):
        raise ValueError(f"the simulator writes magic-2 logs of Kafka 2.0 and later, not {kafka_version}")
    if v >= (4, 1):
        offset_v = 4
    elif v >= (2, 1):
        offset_v = 3
    else:
        offset_v = 1
    if v >= (2, 3):
        group_v = 3
    elif v >= (2, 1):
        group_v = 2
    else:
        group_v = 1
    return BrokerProfile(
        kafka_version=f"{major}.{minor}",
        major=major,
        minor=minor,
        offset_value_version=offset_v,
        group_value_version=group_v,
        semantics="java" if v >= (4, 0) else "scala",
        kip848=v >= (4, 0),
        static_members=group_v >= 3,
        expire_in_value=offset_v == 1,
        explicit_retention_v1=v >= (2, 1),
        delete_horizon=v >= (3, 1),
        java_tombstones=v >= (4, 0),
        zstd=v >= (2, 1),
        kraft=v >= (4, 0),
        share_groups=v >= (4, 2),
        streams_groups=v >= (4, 2),
    )
