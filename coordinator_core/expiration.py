"""Offset expiration over a reloaded cache (``GroupMetadataManager.cleanupGroupMetadata``).

Mirrors the legacy Scala coordinator (``GroupMetadata.removeExpiredOffsets`` + ``cleanupGroupMetadata``,
Kafka up to 3.x) and the Java coordinator of Kafka 4.x (``OffsetMetadataManager.cleanupExpiredOffsets``
+ ``GroupMetadataManager.maybeDeleteGroup``), following the KIP-211 rules (format doc §3):

* an explicit v1 ``expireTimestamp`` wins: expired when ``now >= expireTimestamp``;
* otherwise an offset expires when ``now - base >= offsets.retention.ms``, where ``base`` depends on
  the group: ``currentStateTimestamp`` (or the commit time when unknown) for Empty groups with a
  protocol type, the commit time for topics no member of a Stable ``consumer`` group subscribes to,
  the commit time for groups without a protocol type, the commit time for unsubscribed topics of
  a KIP-848 consumer group, and the commit time for the topics a KIP-1071 streams group does not read
  (new coordinator only: ``StreamsGroup.isSubscribedToTopic``, every topic once the group is Empty);
* open transactions: the Java coordinator never expires an offset whose partition has a pending
  transactional commit (``OffsetMetadataManager.cleanupExpiredOffsets``); the legacy one only skips
  in-flight plain commits (``pendingOffsetCommits``, never part of a reloaded state), so it does expire
  such an offset (``GroupMetadata.removeExpiredOffsets``);
* a group that is Empty with no offsets left and no open transaction goes Dead and gets its
  tombstone(s) (legacy: ``GroupMetadata.hasOffsets`` counts pending transactional commits; Java:
  ``cleanupExpiredOffsets`` returns false while the group has an open transaction, also when it has no
  committed offset at all, as in Kafka 4.0.1+ and 4.1, KAFKA-19163): never for generation 0 with the
  legacy coordinator; for KIP-848 and streams groups in the order ``ConsumerGroup`` /
  ``StreamsGroup.createGroupTombstoneRecords`` requires. Share groups never expire here
  (``ShareGroup.shouldExpire``).

The output is a plan (a list of :class:`Tombstone`) plus a forecast of what expires soon.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from offsetops.coordinator_core.cache import CoordinatorCache, GroupMetadata, OffsetAndMetadata
from offsetops.coordinator_core.schema.keys import GroupKey, GroupMetadataKey, OffsetCommitKey, encode_key
from offsetops.coordinator_core.settings import COORDINATORS as COORDINATORS
from offsetops.coordinator_core.settings import DEFAULT_RETENTION_MS as DEFAULT_RETENTION_MS
from offsetops.coordinator_core.settings import KIP848 as KIP848
from offsetops.coordinator_core.settings import LEGACY as LEGACY
from offsetops.coordinator_core.settings import (
    coordinator_for_broker_version as coordinator_for_broker_version,
)

if TYPE_CHECKING:
    from offsetops.coordinator_core.run import RunSettings

KIND_OFFSET = "offset_commit"
KIND_GROUP = "group_metadata"

# Reason codes: which rule made an offset expire (stable tokens for JSON consumers).
R_EXPLICIT = "explicit_expire_timestamp"
R_EMPTY_STATE_TS = "empty_group_current_state_timestamp"
R_EMPTY_COMMIT_TS = "empty_group_commit_timestamp"
R_STABLE_UNSUBSCRIBED = "stable_consumer_group_unsubscribed_topic"
R_STANDALONE = "no_protocol_type_commit_timestamp"
R_KIP848_UNSUBSCRIBED = "consumer_group_unsubscribed_topic"
R_STREAMS_UNSUBSCRIBED = "streams_group_unread_topic"
R_LEGACY_FOREIGN = "legacy_coordinator_ignores_group_records"
R_DEAD_GROUP = "dead_group"

# KIP-848 consumer group tombstones, in ConsumerGroup.createGroupTombstoneRecords order.
_CURRENT_ASSIGNMENT, _TARGET_MEMBER, _TARGET_METADATA = 8, 7, 6
_MEMBER_METADATA, _PARTITION_METADATA, _GROUP_EPOCH = 5, 4, 3
_KIP848_RECORD_NAMES = {
    _CURRENT_ASSIGNMENT: "current_member_assignment",
    _TARGET_MEMBER: "target_assignment_member",
    _TARGET_METADATA: "target_assignment_metadata",
    _MEMBER_METADATA: "member_metadata",
    _PARTITION_METADATA: "partition_metadata",
    _GROUP_EPOCH: "consumer_group_metadata",
}
# KIP-1071 streams group tombstones, in StreamsGroup.createGroupTombstoneRecords order (per member: current
# assignment, then per member: target assignment; the target assignment epoch; per member: member
# metadata; the group epoch; the topology).
_STREAMS_CURRENT, _STREAMS_TARGET_MEMBER, _STREAMS_TARGET_METADATA = 22, 21, 20
_STREAMS_MEMBER, _STREAMS_GROUP, _STREAMS_TOPOLOGY = 19, 17, 23
_STREAMS_RECORD_NAMES = {
    _STREAMS_CURRENT: "streams_current_member_assignment",
    _STREAMS_TARGET_MEMBER: "streams_target_assignment_member",
    _STREAMS_TARGET_METADATA: "streams_target_assignment_metadata",
    _STREAMS_MEMBER: "streams_member_metadata",
    _STREAMS_GROUP: "streams_group_metadata",
    _STREAMS_TOPOLOGY: "streams_group_topology",
}


@dataclass(frozen=True, slots=True)
class Tombstone:
    """One record the coordinator would append with a null value: its key and why."""

    offsets_partition: int | None
    kind: str  # offset_commit | group_metadata (KIP-848 group records count as group_metadata)
    group_id: str
    topic: str | None
    partition: int | None
    key_hex: str
    reason: str
    base_timestamp: int | None
    age_ms: int | None
    # Not part of the CLI document; the executors use them to check the live state before acting.
    record_type: int = 1
    committed_offset: int | None = None
    committed_metadata: str | None = None

    @property
    def key(self) -> bytes:
        return bytes.fromhex(self.key_hex)

    def to_json(self) -> dict[str, Any]:
        """The tombstone as the ``offsetops expire --json`` contract prints it."""
        return {
            "offsets_partition": self.offsets_partition,
            "kind": self.kind,
            "group_id": self.group_id,
            "topic": self.topic,
            "partition": self.partition,
            "key_hex": self.key_hex,
            "reason": self.reason,
            "base_timestamp": self.base_timestamp,
            "age_ms": self.age_ms,
        }

    def to_journal(self) -> dict[str, Any]:
        """The contract fields plus what an executor needs (record type, the planned offset)."""
        return {
            **self.to_json(),
            "record_type": self.record_type,
            "committed_offset": self.committed_offset,
            "committed_metadata": self.committed_metadata,
        }

    @classmethod
    def from_journal(cls, d: dict[str, Any]) -> Tombstone:
        return cls(
            offsets_partition=d["offsets_partition"],
            kind=d["kind"],
            group_id=d["group_id"],
            topic=d["topic"],
            partition=d["partition"],
            key_hex=d["key_hex"],
            reason=d["reason"],
            base_timestamp=d["base_timestamp"],
            age_ms=d["age_ms"],
            record_type=d.get("record_type", 1 if d["kind"] == KIND_OFFSET else 2),
            committed_offset=d.get("committed_offset"),
            committed_metadata=d.get("committed_metadata"),
        )


@dataclass(frozen=True, slots=True)
class DeadGroup:
    """A group that cleanup moves to Dead (Empty, no offsets left, no open transaction)."""

    offsets_partition: int | None
    group_id: str
    group_type: str
    protocol_type: str | None
    generation: int
    tombstones: int  # how many group tombstones are written (0 for generation 0 with legacy)
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "offsets_partition": self.offsets_partition,
            "group_id": self.group_id,
            "group_type": self.group_type,
            "protocol_type": self.protocol_type,
            "generation": self.generation,
            "group_tombstones": self.tombstones,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class ForecastEntry:
    """An offset that is still alive at ``now`` but expires within the forecast horizon."""

    offsets_partition: int | None
    group_id: str
    topic: str
    partition: int
    reason: str
    base_timestamp: int
    expires_at: int
    expires_in_ms: int

    def to_json(self) -> dict[str, Any]:
        return {
            "offsets_partition": self.offsets_partition,
            "group_id": self.group_id,
            "topic": self.topic,
            "partition": self.partition,
            "reason": self.reason,
            "base_timestamp": self.base_timestamp,
            "expires_at": self.expires_at,
            "expires_in_ms": self.expires_in_ms,
        }


@dataclass(frozen=True, slots=True)
class ExpirationCondition:
    """``OffsetExpirationCondition``: how a group's offsets age, and which topics are exempt."""

    rule: str  # the reason code used when an offset expires under this condition
    use_state_timestamp: bool  # base = currentStateTimestamp when known (Empty groups)
    state_timestamp: int | None
    subscribed_topics: frozenset[str] = frozenset()

    def base_timestamp(self, om: OffsetAndMetadata) -> tuple[int, str]:
        if self.use_state_timestamp and self.state_timestamp is not None:
            return self.state_timestamp, R_EMPTY_STATE_TS
        if self.use_state_timestamp:
            return om.commit_timestamp, R_EMPTY_COMMIT_TS
        return om.commit_timestamp, self.rule

    def expires_at(self, om: OffsetAndMetadata, retention_ms: int) -> tuple[int, int, str]:
        """``(expires_at, base_timestamp, reason)`` for one offset (``isOffsetExpired``)."""
        base, reason = self.base_timestamp(om)
        if om.expire_timestamp is not None:
            return om.expire_timestamp, base, R_EXPLICIT
        return base + retention_ms, base, reason


def offset_expiration_condition(group: GroupMetadata, coordinator: str) -> ExpirationCondition | None:
    """Which offsets of ``group`` can expire, and from when (None: none can, in its current state).

    ``ClassicGroup.offsetExpirationCondition`` / ``ConsumerGroup.offsetExpirationCondition`` (Java) and
    the branches of ``GroupMetadata.removeExpiredOffsets`` (Scala) agree for classic groups.
    """
    if group.group_type != "classic":
        if coordinator == LEGACY:
            # The Scala coordinator skips record types >= 3, so it sees an offsets-only group.
            return ExpirationCondition(R_LEGACY_FOREIGN, False, None)
        if group.group_type == "consumer":
            return ExpirationCondition(
                R_KIP848_UNSUBSCRIBED, False, None, frozenset(group.subscribed_topics or ())
            )
        if group.group_type == "streams":
            return ExpirationCondition(R_STREAMS_UNSUBSCRIBED, False, None, _streams_read_topics(group))
        return None  # share groups: ShareGroup.shouldExpire is false
    if group.protocol_type is None:
        return ExpirationCondition(R_STANDALONE, False, None)
    if group.state == "Empty":
        return ExpirationCondition(R_EMPTY_COMMIT_TS, True, group.current_state_timestamp)
    if group.state == "Stable" and group.protocol_type == "consumer":
        subscribed = group.subscribed_topics
        if subscribed is None:
            return None  # an unparseable subscription leaves subscribedTopics unknown (KAFKA-13636)
        return ExpirationCondition(R_STABLE_UNSUBSCRIBED, False, None, frozenset(subscribed))
    return None


def _streams_read_topics(group: GroupMetadata) -> frozenset[str]:
    """The topics a streams group is subscribed to (``StreamsGroup.isSubscribedToTopic``, KAFKA-19372 and
    KAFKA-19779): none while Empty or Dead or without a topology, else every source and repartition
    source topic of its topology (``StreamsTopology.sourceTopicMap``)."""
    from offsetops.coordinator_core.streams_group import StreamsGroup

    detail = group.detail
    if group.state in ("Empty", "Dead") or not isinstance(detail, StreamsGroup) or detail.topology is None:
        return frozenset()
    return frozenset(t for s in detail.topology.subtopologies for t in s.input_topics)


def _pending_partitions(group: GroupMetadata, coordinator: str) -> set[tuple[str, int]]:
    """Partitions cleanup leaves alone because of an open transaction (Java coordinator only)."""
    if coordinator != KIP848:
        return set()
    return {tp for offsets in group.pending_offsets.values() for tp in offsets}


def remove_expired_offsets(
    group: GroupMetadata, *, now_ms: int, retention_ms: int, coordinator: str
) -> list[tuple[tuple[str, int], OffsetAndMetadata, str, int]]:
    """The offsets cleanup removes from ``group``: ``[((topic, partition), offset, reason, base)]``.

    ``GroupMetadata.removeExpiredOffsets`` / ``OffsetMetadataManager.cleanupExpiredOffsets``; sorted by
    topic and partition. The group itself is not modified.
    """
    condition = offset_expiration_condition(group, coordinator)
    if condition is None:
        return []
    pending = _pending_partitions(group, coordinator)
    expired = []
    for tp in sorted(group.offsets):
        if tp[0] in condition.subscribed_topics or tp in pending:
            continue
        om = group.offsets[tp]
        expires_at, base, reason = condition.expires_at(om, retention_ms)
        if now_ms >= expires_at:
            expired.append((tp, om, reason, base))
    return expired


def _group_tombstone_keys(group: GroupMetadata, coordinator: str) -> list[tuple[int, bytes, str]]:
    """``(record_type, key, record name)`` for the tombstones a Dead group gets, in write order."""
    gid = group.group_id
    if group.group_type == "classic":
        if coordinator == LEGACY and group.generation <= 0:
            return []  # cleanupGroupMetadata: `generationId > 0` guards the GroupMetadata tombstone
        return [(2, encode_key(GroupMetadataKey(gid)), "group_metadata")]
    if coordinator == LEGACY or group.group_type not in ("consumer", "streams"):
        return []
    member_ids = sorted(m.member_id for m in group.members)
    if group.group_type == "streams":
        return _keys(gid, _streams_tombstone_order(member_ids), _STREAMS_RECORD_NAMES)
    order: list[tuple[int, str | None]] = []
    order += [(_CURRENT_ASSIGNMENT, m) for m in member_ids]
    order += [(_TARGET_MEMBER, m) for m in member_ids]
    order.append((_TARGET_METADATA, None))
    order += [(_MEMBER_METADATA, m) for m in member_ids]
    order.append((_PARTITION_METADATA, None))
    order.append((_GROUP_EPOCH, None))
    return _keys(gid, order, _KIP848_RECORD_NAMES)


def _streams_tombstone_order(member_ids: list[str]) -> list[tuple[int, str | None]]:
    """``StreamsGroup.createGroupTombstoneRecords``: which record of which member, in write order."""
    order: list[tuple[int, str | None]] = []
    order += [(_STREAMS_CURRENT, m) for m in member_ids]
    order += [(_STREAMS_TARGET_MEMBER, m) for m in member_ids]
    order.append((_STREAMS_TARGET_METADATA, None))
    order += [(_STREAMS_MEMBER, m) for m in member_ids]
    order.append((_STREAMS_GROUP, None))
    order.append((_STREAMS_TOPOLOGY, None))
    return order


def _keys(
    gid: str, order: list[tuple[int, str | None]], names: dict[int, str]
) -> list[tuple[int, bytes, str]]:
    """The encoded keys of ``order``'s records of group ``gid``."""
    keys = []
    for rtype, member in order:
        fields: dict[str, Any] = {"groupId": gid}
        if member is not None:
            fields["memberId"] = member
        keys.append((rtype, encode_key(GroupKey(rtype, gid, fields)), names[rtype]))
    return keys


def _is_empty(group: GroupMetadata, coordinator: str) -> bool:
    if group.group_type != "classic" and coordinator == LEGACY:
        return True  # an offsets-only group to the Scala coordinator
    return group.state == "Empty"


def cleanup_group_metadata(
    cache: CoordinatorCache, *, now_ms: int, retention_ms: int, coordinator: str
) -> tuple[list[Tombstone], list[DeadGroup]]:
    """One cleanup pass over a partition's groups (``cleanupGroupMetadata``), groups in id order."""
    if coordinator not in COORDINATORS:
        raise ValueError(f"coordinator must be one of {COORDINATORS}, got {coordinator!r}")
    tombstones: list[Tombstone] = []
    dead: list[DeadGroup] = []
    part = cache.partition
    for gid in sorted(cache.groups):
        group = cache.groups[gid]
        expired = remove_expired_offsets(
            group, now_ms=now_ms, retention_ms=retention_ms, coordinator=coordinator
        )
        for (topic, partition), om, reason, base in expired:
            key = encode_key(OffsetCommitKey(gid, topic, partition, 1))
            tombstones.append(
                Tombstone(
                    part,
                    KIND_OFFSET,
                    gid,
                    topic,
                    partition,
                    key.hex(),
                    reason,
                    base,
                    now_ms - base,
                    record_type=1,
                    committed_offset=om.offset,
                    committed_metadata=om.metadata,
                )
            )
        if group.group_type == "share" and coordinator == KIP848:
            continue
        offsets_left = len(group.offsets) - len(expired)
        if offsets_left or group.pending_offsets or not _is_empty(group, coordinator):
            continue
        keys = _group_tombstone_keys(group, coordinator)
        base = group.current_state_timestamp
        age = now_ms - base if base is not None else None
        for rtype, key, name in keys:
            reason = R_DEAD_GROUP if rtype == 2 else f"{R_DEAD_GROUP}:{name}"
            tombstones.append(
                Tombstone(part, KIND_GROUP, gid, None, None, key.hex(), reason, base, age, record_type=rtype)
            )
        if group.group_type != "classic" and coordinator == LEGACY:
            why = R_LEGACY_FOREIGN
        elif not keys:
            why = "generation_0_no_tombstone"
        else:
            why = "empty_without_offsets"
        dead.append(
            DeadGroup(part, gid, group.group_type, group.protocol_type, group.generation, len(keys), why)
        )
    return tombstones, dead


def forecast_expirations(
    cache: CoordinatorCache, *, now_ms: int, retention_ms: int, horizon_ms: int, coordinator: str
) -> list[ForecastEntry]:
    """Offsets alive at ``now_ms`` that expire by ``now_ms + horizon_ms`` if the groups stay as they are.

    Sorted by expiry time. Offsets exempt in the current state (subscribed topics, pending
    transactions, groups rebalancing) are not forecast: nothing would expire them.
    """
    entries = []
    for gid in sorted(cache.groups):
        group = cache.groups[gid]
        condition = offset_expiration_condition(group, coordinator)
        if condition is None:
            continue
        pending = _pending_partitions(group, coordinator)
        for tp in sorted(group.offsets):
            if tp[0] in condition.subscribed_topics or tp in pending:
                continue
            expires_at, base, reason = condition.expires_at(group.offsets[tp], retention_ms)
            if now_ms < expires_at <= now_ms + horizon_ms:
                entries.append(
                    ForecastEntry(
                        cache.partition, gid, tp[0], tp[1], reason, base, expires_at, expires_at - now_ms
                    )
                )
    entries.sort(key=lambda e: (e.expires_at, e.offsets_partition or 0, e.group_id, e.topic, e.partition))
    return entries


@dataclass(slots=True)
class ExpirationPlan:
    """The tombstones one cleanup pass writes over a set of partitions, plus the forecast."""

    now_ms: int
    retention_ms: int
    coordinator: str
    forecast_horizon_ms: int
    tombstones: list[Tombstone] = field(default_factory=list)
    dead_groups: list[DeadGroup] = field(default_factory=list)
    forecast: list[ForecastEntry] = field(default_factory=list)
    partitions: list[int | None] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "now_ms": self.now_ms,
            "retention_ms": self.retention_ms,
            "coordinator": self.coordinator,
            "forecast_horizon_ms": self.forecast_horizon_ms,
            "tombstones": [t.to_json() for t in self.tombstones],
            "dead_groups": [d.to_json() for d in self.dead_groups],
            "forecast": [f.to_json() for f in self.forecast],
        }


def plan_expiration(
    caches: Iterable[CoordinatorCache],
    *,
    now_ms: int,
    retention_ms: int = DEFAULT_RETENTION_MS,
    coordinator: str = KIP848,
    forecast_horizon_ms: int = 24 * 60 * 60 * 1000,
) -> ExpirationPlan:
    """Plan one cleanup pass over every cache (one per ``__consumer_offsets`` partition)."""
    if retention_ms < 0:
        raise ValueError("retention must not be negative")
    plan = ExpirationPlan(now_ms, retention_ms, coordinator, forecast_horizon_ms)
    for cache in sorted(caches, key=lambda c: -1 if c.partition is None else c.partition):
        tombs, dead = cleanup_group_metadata(
            cache, now_ms=now_ms, retention_ms=retention_ms, coordinator=coordinator
        )
        plan.tombstones += tombs
        plan.dead_groups += dead
        plan.forecast += forecast_expirations(
            cache,
            now_ms=now_ms,
            retention_ms=retention_ms,
            horizon_ms=forecast_horizon_ms,
            coordinator=coordinator,
        )
        plan.partitions.append(cache.partition)
    plan.forecast.sort(
        key=lambda e: (e.expires_at, e.offsets_partition or 0, e.group_id, e.topic, e.partition)
    )
    return plan


def plan_for_run(
    caches: Iterable[CoordinatorCache],
    settings: RunSettings,
    *,
    now_ms: int | None = None,
    retention_ms: int | None = None,
) -> ExpirationPlan:
    """:func:`plan_expiration` with the run model's clock, retention, coordinator and forecast window
    (``now_ms``/``retention_ms`` given: an instant or a what-if retention of the caller's instead)."""
    return plan_expiration(
        caches,
        now_ms=settings.now_ms if now_ms is None else now_ms,
        retention_ms=settings.retention_ms if retention_ms is None else retention_ms,
        coordinator=settings["coordinator"],
        forecast_horizon_ms=settings.forecast_horizon_ms,
    )
