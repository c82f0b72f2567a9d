"""What the simulated cluster is made of: topics, groups, members, committed offsets, counters."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

TopicPartition = tuple[str, int]
Rec = tuple[bytes, bytes | None, int]

RETENTION_MS = 7 * 24 * 3600 * 1000  # offsets.retention.minutes (2.0+)
CLEANUP_INTERVAL_MS = 10 * 60 * 1000  # offsets.retention.check.interval.ms
MS_PER_DAY = 24 * 3600 * 1000

_WORDS = (
    "orders",
    "payments",
    "billing",
    "clicks",
    "inventory",
    "shipping",
    "search",
    "fraud",
    "ledger",
    "users",
    "sessions",
    "audit",
    "metrics",
    "notifications",
    "pricing",
    "catalog",
    "checkout",
    "events",
)
_KIND_WEIGHTS = (
    ("classic", 40),
    ("simple", 15),
    ("txn", 15),
    ("connect", 5),
    ("consumer", 25),
    ("share", 10),
    ("streams", 10),
)
_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky", "sticky")


@dataclass(slots=True)
class Topic:
    name: str
    partitions: int
    topic_id: uuid.UUID
    leader_epoch: int = 0


@dataclass(slots=True)
class Offset:
    """A committed (or pending) offset as the coordinator caches it (``OffsetAndMetadata``)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_ts: int
    expire_ts: int
    record_offset: int
    batch_base: int

    def truth(self, tp: TopicPartition) -> dict[str, Any]:
        return {
            "topic": tp[0],
            "partition": tp[1],
            "offset": self.offset,
            "leader_epoch": self.leader_epoch if self.leader_epoch >= 0 else None,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_ts,
            "expire_timestamp": self.expire_ts if self.expire_ts >= 0 else None,
        }


@dataclass(slots=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout: int
    rebalance_timeout: int
    topics: list[str]
    assignment: dict[str, list[int]] = field(default_factory=dict)
    target: dict[str, list[int]] = field(default_factory=dict)  # KIP-848 target assignment
    member_epoch: int = 0
    producer_id: int = -1  # EOS: this member's transactional producer
    producer_epoch: int = 0
    # Share and streams members (KIP-932, KIP-1071)
    previous_epoch: int = 0
    state: int = 0  # MemberState: 0 STABLE, 1 UNREVOKED_TASKS, 2 UNRELEASED_TASKS
    tasks: dict[str, dict[str, set[int]]] = field(default_factory=dict)  # task type -> subtopology -> ids
    target_tasks: dict[str, dict[str, set[int]]] = field(default_factory=dict)
    pending_tasks: dict[str, set[int]] = field(default_factory=dict)  # active tasks pending revocation
    process_id: str = ""
    endpoint: tuple[str, int] | None = None


@dataclass(slots=True)
class Group:
    group_id: str
    kind: str  # classic | simple | txn | connect | consumer (KIP-848) | share (KIP-932) | streams (KIP-1071)
    partition: int
    topics: list[str]
    commit_interval: int
    protocol_type: str | None = None
    protocol: str | None = None
    generation: int = 0
    leader: str | None = None
    state_ts: int = -1
    members: list[Member] = field(default_factory=list)
    offsets: dict[TopicPartition, Offset] = field(default_factory=dict)
    pending: dict[int, dict[TopicPartition, Offset]] = field(default_factory=dict)
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    metadata_truth: dict[str, Any] | None = None  # what the last GroupMetadata record says
    subscription_version: int = 1
    assignment_version: int = 0
    alive: bool = False  # has members that commit
    deleted: bool = False
    hang_at: int | None = None  # EOS: the first transaction after this time never completes
    group_epoch: int = 0  # KIP-848
    assignment_epoch: int = 0
    exists848: bool = False
    metadata_topics: tuple[str, ...] = ()
    keys: dict[TopicPartition, bytes] = field(default_factory=dict)
    member_seq: int = 0
    # Share and streams groups
    metadata_hash: int = 0
    ready: bool = True  # streams: the topology's topics are there (ValidatedTopologyEpoch = its epoch)
    standby_replicas: int = 0
    share_topics: dict[str, str] = field(default_factory=dict)  # topic -> initializing | initialized


@dataclass(slots=True)
class SimStats:
    events: int = 0
    batches: int = 0
    records: int = 0
    offset_commits: int = 0
    group_records: int = 0
    kip848_records: int = 0
    tombstones: int = 0
    txn_committed: int = 0
    txn_aborted: int = 0
    txn_hanging: int = 0
    groups_deleted: int = 0
    groups_expired: int = 0
    rebalances: int = 0

    def to_json(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]
