"""Per-group, per-partition views in the shape of ``kafka-consumer-groups --describe``.

For every committed offset (and every assigned partition without one) a row with the log start and
end of the data partition, the lag, and the member, client id and host that own the partition in the
group's current assignment (``ConsumerGroupCommand.describeGroups``). Offsets outside the log are
flagged: below the log start the consumer resets by ``auto.offset.reset`` on its next fetch
(OFFSET_OUT_OF_RANGE), above the log end it waits for data that may never come, or resets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.cache import CoordinatorCache, GroupMetadata
from offsetops.coordinator_core.data_offsets import PartitionOffsets
from offsetops.coordinator_core.share_group import ShareGroup
from offsetops.coordinator_core.streams_group import StreamsGroup

TopicPartition = tuple[str, int]

OK = "ok"
BELOW_LOG_START = "below_log_start"
ABOVE_LOG_END = "above_log_end"
NO_COMMIT = "no_commit"  # assigned, but the group never committed an offset for it
LOG_UNKNOWN = "log_unknown"  # the data partition's log start and end are not known here
OUT_OF_RANGE = frozenset({BELOW_LOG_START, ABOVE_LOG_END})


@dataclass(frozen=True, slots=True)
class OffsetRow:
    """One line of ``kafka-consumer-groups --describe``, plus what offsetops knows beyond it."""

    group_id: str
    topic: str
    partition: int
    committed_offset: int | None
    leader_epoch: int | None
    metadata: str | None
    commit_timestamp: int | None
    expire_timestamp: int | None
    log_start_offset: int | None
    log_end_offset: int | None
    lag: int | None
    status: str
    offsets_source: str | None
    offsets_note: str | None
    member_id: str | None
    client_id: str | None
    host: str | None
    group_instance_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "topic": self.topic,
            "partition": self.partition,
            "committed_offset": self.committed_offset,
            "leader_epoch": self.leader_epoch,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_timestamp,
            "expire_timestamp": self.expire_timestamp,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "lag": self.lag,
            "status": self.status,
            "offsets_source": self.offsets_source,
            "offsets_note": self.offsets_note,
            "member_id": self.member_id,
            "client_id": self.client_id,
            "host": self.host,
            "group_instance_id": self.group_instance_id,
        }


@dataclass(slots=True)
class GroupView:
    """A group's state and its rows; the summary fields feed ``offsetops groups``."""

    group_id: str
    group_type: str
    state: str
    protocol_type: str | None
    protocol: str | None
    generation: int
    coordinator_partition: int | None
    members: int
    rows: list[OffsetRow] = field(default_factory=list)
    # Share and streams groups: epochs, assignments or tasks, the topology (``GroupMetadata.detail``).
    detail: ShareGroup | StreamsGroup | None = None

    @property
    def total_lag(self) -> int | None:
        """Sum of the known lags (None when no row has one), as Burrow's ``totallag``."""
        lags = [r.lag for r in self.rows if r.lag is not None and r.lag > 0]
        known = any(r.lag is not None for r in self.rows)
        return sum(lags) if known else None

    @property
    def max_lag(self) -> int | None:
        lags = [r.lag for r in self.rows if r.lag is not None]
        return max(lags) if lags else None

    @property
    def out_of_range(self) -> int:
        return sum(r.status in OUT_OF_RANGE for r in self.rows)

    @property
    def last_commit_timestamp(self) -> int | None:
        return max((r.commit_timestamp for r in self.rows if r.commit_timestamp is not None), default=None)

    def to_json(self) -> dict[str, Any]:
        # The --describe document (lag, owners, status per row); GroupMetadata.to_json is the cache dump.
        return {
            "group_id": self.group_id,
            "group_type": self.group_type,
            "state": self.state,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol,
            "generation": self.generation,
            "coordinator_partition": self.coordinator_partition,
            "members": self.members,
            "partitions": len(self.rows),
            "total_lag": self.total_lag,
            "max_lag": self.max_lag,
            "out_of_range": self.out_of_range,
            "last_commit_timestamp": self.last_commit_timestamp,
            "rows": [r.to_json() for r in self.rows],
            **({} if self.detail is None else {self.detail.group_type: self.detail.to_json()}),
        }


@dataclass(frozen=True, slots=True)
class GroupFilter:
    """``--group``/``--group-regex``/``--topic``/``--topic-regex``/``--state``; empty means all."""

    groups: frozenset[str] = frozenset()
    group_regex: re.Pattern[str] | None = None
    topics: frozenset[str] = frozenset()
    topic_regex: re.Pattern[str] | None = None
    states: frozenset[str] = frozenset()

    def wants_group(self, group: GroupMetadata) -> bool:
        if self.groups or self.group_regex:
            named = group.group_id in self.groups
            matched = self.group_regex is not None and self.group_regex.fullmatch(group.group_id)
            if not (named or matched):
                return False
        return not self.states or group.state.lower() in {s.lower() for s in self.states}

    def wants_topic(self, topic: str) -> bool:
        if not self.topics and self.topic_regex is None:
            return True
        return topic in self.topics or bool(self.topic_regex and self.topic_regex.fullmatch(topic))


def owners(group: GroupMetadata) -> dict[TopicPartition, Any]:
    """Partition -> the member that owns it in the current assignment (classic and KIP-848)."""
    out: dict[TopicPartition, Any] = {}
    for member in group.members:
        for topic, parts in (member.assignment or {}).items():
            for p in parts:
                out[(topic, p)] = member
    return out


def range_status(committed: int | None, offsets: PartitionOffsets | None) -> str:
    if committed is None:
        return NO_COMMIT
    if offsets is None or offsets.log_end_offset is None:
        return LOG_UNKNOWN
    if offsets.log_start_offset is not None and committed < offsets.log_start_offset:
        return BELOW_LOG_START
    if committed > offsets.log_end_offset:
        return ABOVE_LOG_END
    return OK


def wanted_partitions(caches: Iterable[CoordinatorCache], flt: GroupFilter) -> set[TopicPartition]:
    """The data partitions whose log start/end the selected groups need."""
    out: set[TopicPartition] = set()
    for cache in caches:
        for group in cache.groups.values():
            if flt.wants_group(group):
                out.update(tp for tp in group.offsets if flt.wants_topic(tp[0]))
                out.update(tp for tp in owners(group) if flt.wants_topic(tp[0]))
    return out


def describe_groups(
    caches: Iterable[CoordinatorCache],
    log_offsets: dict[TopicPartition, PartitionOffsets],
    flt: GroupFilter | None = None,
) -> list[GroupView]:
    """One :class:`GroupView` per selected group, sorted by group id; rows sorted by topic-partition."""
    flt = flt or GroupFilter()
    views: list[GroupView] = []
    for cache in caches:
        for group in cache.groups.values():
            if flt.wants_group(group):
                views.append(describe_group(group, cache.partition, log_offsets, flt))
    views.sort(key=lambda v: v.group_id)
    return views


def describe_group(
    group: GroupMetadata,
    partition: int | None,
    log_offsets: dict[TopicPartition, PartitionOffsets],
    flt: GroupFilter | None = None,
) -> GroupView:
    """The :class:`GroupView` of one group of offsets partition ``partition``: its rows sorted by
    topic-partition (``ConsumerGroupCommand.describeGroups``)."""
    flt = flt or GroupFilter()
    owner = owners(group)
    tps = sorted(tp for tp in set(group.offsets) | set(owner) if flt.wants_topic(tp[0]))
    view = GroupView(
        group_id=group.group_id,
        group_type=group.group_type,
        state=group.state,
        protocol_type=group.protocol_type,
        protocol=group.protocol,
        generation=group.generation,
        coordinator_partition=partition,
        members=len(group.members),
        detail=group.detail,
    )
    for tp in tps:
        om = group.offsets.get(tp)
        lo = log_offsets.get(tp)
        committed = om.offset if om is not None else None
        end = lo.log_end_offset if lo is not None else None
        member = owner.get(tp)
        view.rows.append(
            OffsetRow(
                group_id=group.group_id,
                topic=tp[0],
                partition=tp[1],
                committed_offset=committed,
                leader_epoch=om.leader_epoch if om is not None else None,
                metadata=om.metadata if om is not None else None,
                commit_timestamp=om.commit_timestamp if om is not None else None,
                expire_timestamp=om.expire_timestamp if om is not None else None,
                log_start_offset=lo.log_start_offset if lo is not None else None,
                log_end_offset=end,
                lag=end - committed if end is not None and committed is not None else None,
                status=range_status(committed, lo),
                offsets_source=lo.source if lo is not None else None,
                offsets_note=lo.note if lo is not None else None,
                member_id=member.member_id if member is not None else None,
                client_id=member.client_id if member is not None else None,
                host=member.client_host if member is not None else None,
                group_instance_id=member.group_instance_id if member is not None else None,
            )
        )
    return view
