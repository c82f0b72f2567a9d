"""Share and streams group records as Kafka's coordinator writes them for one member joining an empty
group (the record sequences of GroupMetadataManagerTest), for the tests of every layer."""

from __future__ import annotations

import uuid

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.group_replay import group_record, task_ids
from offsetops.coordinator_core.loader import load_partition
from offsetops.coordinator_core.records import build_record_batch, read_batches

T0 = 1_700_000_000_000
FOO_ID = uuid.UUID("6d2d6d7d-0000-4000-8000-000000000001")
BAR_ID = uuid.UUID("6d2d6d7d-0000-4000-8000-000000000002")


def load(*records: tuple[bytes, bytes | None], partition: int | None = None) -> CoordinatorCache:
    """Load records written in one batch, as the coordinator's partition ``partition``; no error allowed."""
    buf = build_record_batch([(k, v, T0) for k, v in records], base_offset=0)
    errors: list = []
    cache = load_partition(read_batches(buf, errors=errors), partition=partition)
    assert errors == [] and cache.stats.errors == []
    return cache


def share_member(gid: str, mid: str, topics: list[str]) -> tuple[bytes, bytes | None]:
    fields = {
        "rackId": None,
        "clientId": "client",
        "clientHost": "/127.0.0.1",
        "subscribedTopicNames": topics,
    }
    return group_record(10, gid, mid, fields)


def share_current(gid: str, mid: str, epoch: int, prev: int, parts: dict[uuid.UUID, list[int]]):
    assigned = [{"topicId": t, "partitions": p} for t, p in parts.items()]
    fields = {"memberEpoch": epoch, "previousMemberEpoch": prev, "state": 0, "assignedPartitions": assigned}
    return group_record(14, gid, mid, fields)


def share_state(gid: str, initialized: dict[uuid.UUID, tuple[str, list[int]]]):
    topics = [{"topicId": t, "topicName": n, "partitions": p} for t, (n, p) in initialized.items()]
    fields = {"initializingTopics": [], "initializedTopics": topics, "deletingTopics": []}
    return group_record(15, gid, None, fields)


def share_join_records(gid: str = "fooup", mid: str = "m1") -> list[tuple[bytes, bytes | None]]:
    """testShareGroupMemberJoinsEmptyGroupWithAssignments: the records of a member joining an empty group."""
    assignment = [{"topicId": FOO_ID, "partitions": [0, 1, 2, 3, 4, 5]}]
    return [
        share_member(gid, mid, ["foo"]),
        group_record(11, gid, None, {"epoch": 1, "metadataHash": 42}),
        group_record(13, gid, mid, {"topicPartitions": assignment}),
        group_record(12, gid, None, {"assignmentEpoch": 1, "assignmentTimestamp": T0}),
        share_current(gid, mid, 1, 0, {FOO_ID: [0, 1, 2, 3, 4, 5]}),
        share_state(gid, {FOO_ID: ("foo", [0, 1, 2, 3, 4, 5])}),
    ]


SUBTOPOLOGY = "subtopology1"


def topology_record(gid: str, epoch: int = 0) -> tuple[bytes, bytes | None]:
    sub = {
        "subtopologyId": SUBTOPOLOGY,
        "sourceTopics": ["foo"],
        "sourceTopicRegex": [],
        "stateChangelogTopics": [
            {"name": "app-store-changelog", "partitions": 0, "replicationFactor": 0, "topicConfigs": []}
        ],
        "repartitionSinkTopics": [],
        "repartitionSourceTopics": [],
        "copartitionGroups": [],
    }
    return group_record(23, gid, None, {"epoch": epoch, "subtopologies": [sub]})


def streams_member(gid: str, mid: str) -> tuple[bytes, bytes | None]:
    fields = {
        "instanceId": None,
        "rackId": None,
        "clientId": "client",
        "clientHost": "/127.0.0.1",
        "rebalanceTimeoutMs": 1500,
        "topologyEpoch": 0,
        "processId": "process-id",
        "userEndpoint": {"host": "localhost", "port": 9090},
        "clientTags": [{"key": "zone", "value": "a"}],
    }
    return group_record(19, gid, mid, fields)


def streams_metadata(gid: str, epoch: int, validated: int) -> tuple[bytes, bytes | None]:
    configs = [{"key": "num.standby.replicas", "value": "0"}]
    fields = {
        "epoch": epoch,
        "metadataHash": 7,
        "validatedTopologyEpoch": validated,
        "lastAssignmentConfigs": configs,
    }
    return group_record(17, gid, None, fields)


def streams_current(gid: str, mid: str, epoch: int, active: dict[str, list[int]], state: int = 0):
    fields = {
        "memberEpoch": epoch,
        "previousMemberEpoch": 0,
        "state": state,
        "activeTasks": task_ids(active),
        "standbyTasks": [],
        "warmupTasks": [],
        "activeTasksPendingRevocation": [],
        "standbyTasksPendingRevocation": [],
        "warmupTasksPendingRevocation": [],
    }
    return group_record(22, gid, mid, fields)


def streams_join(gid: str, mid: str, validated: int, active: dict[str, list[int]]) -> list:
    target = {"activeTasks": task_ids(active), "standbyTasks": [], "warmupTasks": []}
    return [
        streams_member(gid, mid),
        topology_record(gid),
        streams_metadata(gid, 2, validated),
        group_record(21, gid, mid, target),
        group_record(20, gid, None, {"assignmentEpoch": 2, "assignmentTimestamp": T0}),
        streams_current(gid, mid, 2, active),
    ]
