"""The group coordinator's in-memory cache, as rebuilt from ``__consumer_offsets``.

Mirrors ``kafka.coordinator.group.GroupMetadata`` / ``OffsetAndMetadata`` (Scala coordinator) and
``ClassicGroup`` / ``ConsumerGroup`` (the Java coordinator of Kafka 4.x).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from offsetops.coordinator_core.errors import DecodeError, ErrorLog, error_total

if TYPE_CHECKING:  # a cache holds them only when its log has share or streams groups
    from offsetops.coordinator_core.share_group import ShareGroup
    from offsetops.coordinator_core.streams_group import StreamsGroup

EARLY_ACCESS_STATE = "EarlyAccess"
"""Not a Kafka state: the group was written by an early-access coordinator that Kafka 4.1+ cannot upgrade."""

# Kafka's group states (GroupState / ClassicGroupState / ConsumerGroupState), as printed by the tools.
GROUP_STATES = frozenset(
    {
        "Empty",
        "Stable",
        "PreparingRebalance",
        "CompletingRebalance",
        "Dead",
        "Assigning",
        "Reconciling",
        "NotReady",
        EARLY_ACCESS_STATE,
    }
)


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """One committed offset (``OffsetAndMetadata`` / ``CommitRecordMetadataAndOffset``)."""

    offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None
    record_offset: int  # the log offset of the record this came from
    topic_id: str | None = None

    def to_json(self, topic: str, partition: int) -> dict[str, Any]:
        return {
            "topic": topic,
            "partition": partition,
            "offset": self.offset,
            "leader_epoch": self.leader_epoch,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_timestamp,
            "expire_timestamp": self.expire_timestamp,
        }


@dataclass(slots=True)
class MemberMetadata:
    """A group member (``MemberMetadata`` for classic groups, ``ConsumerGroupMember`` for KIP-848)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int | None
    rebalance_timeout_ms: int | None
    subscribed_topics: list[str] | None  # None: unknown (not consumer protocol, or unparseable)
    assignment: dict[str, list[int]] | None  # topic -> partitions; None: unknown
    member_epoch: int | None = None  # KIP-848 only
    rack_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "subscribed_topics": self.subscribed_topics,
            "assignment": self.assignment,
        }


TopicPartition = tuple[str, int]


#: Sorts ``offsets.items()`` by key alone (twice as fast as comparing the items; keys are unique).
_BY_TOPIC_PARTITION = itemgetter(0)


@dataclass(slots=True)
class GroupMetadata:
    """A consumer group as the coordinator holds it after loading its partition."""

    group_id: str
    state: str
    protocol_type: str | None
    generation: int
    protocol: str | None = None
    leader: str | None = None
    current_state_timestamp: int | None = None
    members: list[MemberMetadata] = field(default_factory=list)
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    # producer id -> pending transactional offsets (visible only once a COMMIT marker arrives)
    pending_offsets: dict[int, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    group_type: str = "classic"  # classic | consumer (KIP-848) | share | streams
    metadata_record_offset: int | None = None  # None: no GroupMetadata record (offsets-only group)
    metadata_version: int | None = None
    # Share and streams groups: the coordinator's own view (epochs, target assignment, topology, tasks).
    detail: ShareGroup | StreamsGroup | None = None

    @property
    def is_empty(self) -> bool:
        return not self.members

    @property
    def subscribed_topics(self) -> set[str] | None:
        """Union of the members' subscriptions, or None when any member's is unknown.

        ``GroupMetadata.computeSubscribedTopics``: only known for protocol type ``consumer``.
        """
        if self.group_type == "classic" and self.protocol_type != "consumer":
            return None
        topics: set[str] = set()
        for member in self.members:
            if member.subscribed_topics is None:
                return None
            topics.update(member.subscribed_topics)
        return topics

    def sorted_offsets(self) -> list[tuple[TopicPartition, OffsetAndMetadata]]:
        """The committed offsets in (topic, partition) order, the order every output lists them in."""
        return sorted(self.offsets.items(), key=_BY_TOPIC_PARTITION)

    def to_json(self) -> dict[str, Any]:
        return self.json_with_offsets([o.to_json(t, p) for (t, p), o in self.sorted_offsets()])

    def json_with_offsets(self, offsets: Any) -> dict[str, Any]:
        """``to_json()`` with ``offsets`` as its ``"offsets"`` (:mod:`cache_json` passes them as text)."""
        doc = self._to_json(offsets)
        if self.detail is not None:
            doc[self.detail.group_type] = self.detail.to_json()
        return doc

    def _to_json(self, offsets: Any) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "group_type": self.group_type,
            "state": self.state,
            "protocol_type": self.protocol_type,
            "generation": self.generation,
            "protocol": self.protocol,
            "leader": self.leader,
            "current_state_timestamp": self.current_state_timestamp,
            "members": [m.to_json() for m in self.members],
            "offsets": offsets,
            "pending_offsets": [
                {"producer_id": pid, "topic": t, "partition": p, "offset": o.offset}
                for pid, offs in sorted(self.pending_offsets.items())
                for (t, p), o in sorted(offs.items())
            ],
        }


@dataclass(slots=True)
class LoadStats:
    """What a reload read, and what went wrong (every error is kept, none are swallowed)."""

    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    tombstones: int = 0
    control_records: int = 0
    transactional_batches: int = 0
    unknown_record_types: int = 0
    records_by_type: dict[int, int] = field(default_factory=dict)
    first_offset: int | None = None
    last_offset: int | None = None
    elapsed_ms: float = 0.0
    errors: list[DecodeError] = field(default_factory=ErrorLog)
    # This run only (the counters above are cumulative over a resumed fold): the segment bytes read,
    # whether the fold went on from a saved resume point, and if not why (a code of
    # ``resume.REASONS``, None when resumed) with a sentence for people.
    bytes_read: int = 0
    resumed: bool = False
    resume_reason: str | None = None
    resume_detail: str | None = None
    state_error: str | None = None  # why the next resume point could not be saved, if it was not

    def to_json(self) -> dict[str, Any]:
        return {
            "segments": self.segments,
            "batches": self.batches,
            "records": self.records,
            "bytes": self.bytes,
            "tombstones": self.tombstones,
            "control_records": self.control_records,
            "transactional_batches": self.transactional_batches,
            "unknown_record_types": self.unknown_record_types,
            "records_by_type": {str(k): v for k, v in sorted(self.records_by_type.items())},
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "bytes_read": self.bytes_read,
            "resumed": self.resumed,
            "resume_reason": self.resume_reason,
            "resume_detail": self.resume_detail,
            "state_error": self.state_error,
            "error_count": error_total(self.errors),
            "errors": [
                {
                    "file": e.file,
                    "position": e.position,
                    "offset": e.offset,
                    "kind": e.kind,
                    "reason": e.reason,
                    "count": e.count,
                }
                for e in self.errors
            ],
        }


@dataclass(slots=True)
class CoordinatorCache:
    """Everything the coordinator would hold for one ``__consumer_offsets`` partition."""

    partition: int | None
    groups: dict[str, GroupMetadata]
    stats: LoadStats
    misplaced_groups: list[str] = field(default_factory=list)
    num_partitions: int = 50
    # producer id -> group ids with an open (hanging or in-flight) transaction
    open_transactions: dict[int, set[str]] = field(default_factory=dict)

    @property
    def offset_count(self) -> int:
        return sum(len(g.offsets) for g in self.groups.values())

    def to_json(self) -> dict[str, Any]:
        return self.json_with_groups([self.groups[g].to_json() for g in sorted(self.groups)])

    def json_with_groups(self, groups: Any) -> dict[str, Any]:
        """``to_json()`` with ``groups`` as its ``"groups"`` (:mod:`cache_json` passes them as text)."""
        return {
            "partition": self.partition,
            "groups": groups,
            "misplaced_groups": sorted(self.misplaced_groups),
            "stats": self.stats.to_json(),
        }
