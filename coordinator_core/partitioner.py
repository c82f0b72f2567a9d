"""``partition_for``: the offsets partition that owns a group (GroupMetadataManager.partitionFor)."""

from __future__ import annotations

import struct

DEFAULT_OFFSETS_PARTITIONS = 50
_INT_MIN = -(2**31)


def java_string_hashcode(value: str) -> int:
    """Java ``String.hashCode``: sum of s[i]*31^(n-1-i) over UTF-16 code units, as a signed int32."""
    data = value.encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack(">H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka ``Utils.abs``: ``Integer.MIN_VALUE`` maps to 0 (unlike ``Math.abs`` or ``n & 0x7fffffff``)."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The offsets partition of ``group_id``: ``Utils.abs(groupId.hashCode) % numPartitions``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return kafka_abs(java_string_hashcode(group_id)) % num_partitions
