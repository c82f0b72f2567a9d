"""The clients' consumer-protocol vectors (tests/fixtures/client_vectors.json) and a log dir holding them.

Each vector group (one client's subscription and assignment) becomes a classic ``consumer`` group whose
GroupMetadata value (v3) has one member with exactly those bytes, in the partition ``partition_for``
gives it, followed by commits of the partitions it was assigned; the data partitions have a log end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records.builder import build_record_batch
from offsetops.coordinator_core.schema import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from offsetops.coordinator_core.schema.values import GroupMetadataValue, MemberMetadata

VECTORS_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "client_vectors.json"
VECTORS: list[dict[str, Any]] = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
NUM_PARTITIONS = 50
T0 = 1_750_000_000_000
LOG_END = 100
COMMITTED = 40


def by_group() -> dict[str, dict[str, dict[str, Any]]]:
    """group id -> role -> vector."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for v in VECTORS:
        out.setdefault(v["group"], {})[v["role"]] = v
    return out


def member_id(gid: str) -> str:
    return f"{gid}-member-1"


def _group_record(gid: str, pair: dict[str, dict[str, Any]]) -> tuple[bytes, bytes, int]:
    member = MemberMetadata(
        member_id=member_id(gid),
        group_instance_id=None,
        client_id=f"{gid}-client",
        client_host="/10.0.0.7",
        rebalance_timeout=300_000,
        session_timeout=45_000,
        subscription=bytes.fromhex(pair["subscription"]["hex"]),
        assignment=bytes.fromhex(pair["assignment"]["hex"]),
    )
    value = GroupMetadataValue(
        version=3,
        protocol_type="consumer",
        generation=4,
        protocol="range",
        leader=member.member_id,
        current_state_timestamp=T0,
        members=(member,),
    )
    return encode_key(GroupMetadataKey(group=gid)), encode_value(value), T0


def _commits(gid: str, partitions: dict[str, list[int]]) -> list[tuple[bytes, bytes, int]]:
    return [
        (
            encode_key(OffsetCommitKey(group=gid, topic=t, partition=p)),
            encode_value(OffsetCommitValue(version=3, offset=COMMITTED, leader_epoch=0, commit_timestamp=T0)),
            T0,
        )
        for t, parts in sorted(partitions.items())
        for p in parts
    ]


def write_client_vectors_log(root: Path) -> Path:
    """The log dir described in the module docstring; returns ``root``."""
    records: dict[int, list[tuple[bytes, bytes, int]]] = {}
    topics: set[tuple[str, int]] = set()
    for gid, pair in by_group().items():
        partitions = pair["assignment"]["expect"]["partitions"]
        part = records.setdefault(partition_for(gid, NUM_PARTITIONS), [])
        part.append(_group_record(gid, pair))
        part.extend(_commits(gid, partitions))
        topics |= {(t, p) for t, ps in partitions.items() for p in ps}
    for part, recs in records.items():
        pdir = root / f"__consumer_offsets-{part}"
        pdir.mkdir(parents=True)
        batches = b"".join(build_record_batch([r], base_offset=i) for i, r in enumerate(recs))
        (pdir / "00000000000000000000.log").write_bytes(batches)
    for topic, p in sorted(topics):
        ddir = root / f"{topic}-{p}"
        ddir.mkdir()
        (ddir / "00000000000000000000.log").write_bytes(
            build_record_batch([(b"k", b"v", T0)], base_offset=LOG_END - 1)
        )
    return root
