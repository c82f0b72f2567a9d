"""Value tables of share groups (KIP-932, types 9-15) and streams groups (KIP-1071, types 17-24).

Transcribed from ``group-coordinator/src/main/resources/common/message/{ShareGroup,StreamsGroup}*Value.json``
in apache/kafka. ``SHARE_STREAMS_VALUE_SCHEMAS`` holds the layouts of the released coordinator (Kafka 4.1+
for share groups, 4.2+ for streams groups, as of 4.3.1); every one is ``validVersions "0"``,
``flexibleVersions "0+"``, so a newer tagged field is skipped by length and kept.

``EARLY_ACCESS_VALUE_SCHEMAS`` holds the layouts written by the early-access coordinators, which share the
same type ids and version 0 but not the same fields (Kafka 4.0's share groups; the streams records of the
4.0/4.1 development line). Kafka 4.1+ cannot upgrade such groups: the loader skips the record types it no
longer defines (9 and 18) and a group built from the rest is not one the coordinator can use. offsetops
decodes them with these tables only to name them; a group holding one is reported as early access.
"""

from __future__ import annotations

from .fields import F, Field, MessageSchema, message

_TOPIC_PARTITIONS = (F("topicId", "uuid"), F("partitions", "[]int32"))
_KEY_VALUE = (F("key", "string"), F("value", "string"))
# KIP-1251 (4.3): the epoch at which each partition of a task was assigned; null when not recorded.
_ASSIGNMENT_EPOCHS = F("assignmentEpochs", "[]int32", nullable="0+", default=None, tag=0, tagged="0+")
_TASK_IDS = (F("subtopologyId", "string"), F("partitions", "[]int32"))
_CURRENT_TASK_IDS = (*_TASK_IDS, _ASSIGNMENT_EPOCHS)
# KIP-1263: when the assignment was computed, epoch ms; 0 when unknown (and then not written).
_ASSIGNMENT_TIMESTAMP = F("assignmentTimestamp", "int64", default=0, tag=0, tagged="0+")
_TOPIC_PARTITIONS_INFO = (F("topicId", "uuid"), F("topicName", "string"), F("partitions", "[]int32"))
_TOPIC_INFO = (
    F("name", "string"),
    F("partitions", "int32"),
    F("replicationFactor", "int16"),
    F("topicConfigs", "[]struct", fields=_KEY_VALUE),
)
_PARTITION_METADATA_TOPIC = (
    F("topicId", "uuid"),
    F("topicName", "string"),
    F("numPartitions", "int32"),
    F("partitionMetadata", "[]struct", fields=(F("partition", "int32"), F("racks", "[]string"))),
)


def _v0(name: str, *fields: Field, provisional: bool = False) -> MessageSchema:
    return message(name, "0", "0+", *fields, provisional=provisional)


def _tasks(*names: str, fields: tuple[Field, ...] = _TASK_IDS) -> tuple[Field, ...]:
    return tuple(F(n, "[]struct", fields=fields) for n in names)


SHARE_STREAMS_VALUE_SCHEMAS: dict[int, MessageSchema] = {
    10: _v0(
        "ShareGroupMemberMetadataValue",
        F("rackId", "string", nullable="0+"),
        F("clientId", "string"),
        F("clientHost", "string"),
        F("subscribedTopicNames", "[]string"),
    ),
    11: _v0("ShareGroupMetadataValue", F("epoch", "int32"), F("metadataHash", "int64")),
    12: _v0("ShareGroupTargetAssignmentMetadataValue", F("assignmentEpoch", "int32"), _ASSIGNMENT_TIMESTAMP),
    13: _v0(
        "ShareGroupTargetAssignmentMemberValue",
        F("topicPartitions", "[]struct", fields=_TOPIC_PARTITIONS),
    ),
    14: _v0(
        "ShareGroupCurrentMemberAssignmentValue",
        F("memberEpoch", "int32"),
        F("previousMemberEpoch", "int32"),
        F("state", "int8"),
        F("assignedPartitions", "[]struct", fields=_TOPIC_PARTITIONS),
    ),
    15: _v0(
        "ShareGroupStatePartitionMetadataValue",
        F("initializingTopics", "[]struct", fields=_TOPIC_PARTITIONS_INFO),
        F("initializedTopics", "[]struct", fields=_TOPIC_PARTITIONS_INFO),
        F("deletingTopics", "[]struct", fields=(F("topicId", "uuid"), F("topicName", "string"))),
    ),
    17: _v0(
        "StreamsGroupMetadataValue",
        F("epoch", "int32"),
        F("metadataHash", "int64"),
        F("validatedTopologyEpoch", "int32", default=-1, tag=0, tagged="0+"),
        F(
            "lastAssignmentConfigs",
            "[]struct",
            nullable="0+",
            default=None,
            tag=1,
            tagged="0+",
            fields=_KEY_VALUE,
        ),
    ),
    19: _v0(
        "StreamsGroupMemberMetadataValue",
        F("instanceId", "string", nullable="0+"),
        F("rackId", "string", nullable="0+"),
        F("clientId", "string"),
        F("clientHost", "string"),
        F("rebalanceTimeoutMs", "int32", default=-1),
        F("topologyEpoch", "int32"),
        F("processId", "string"),
        F("userEndpoint", "struct", nullable="0+", fields=(F("host", "string"), F("port", "uint16"))),
        F("clientTags", "[]struct", fields=_KEY_VALUE),
    ),
    20: _v0(
        "StreamsGroupTargetAssignmentMetadataValue", F("assignmentEpoch", "int32"), _ASSIGNMENT_TIMESTAMP
    ),
    21: _v0("StreamsGroupTargetAssignmentMemberValue", *_tasks("activeTasks", "standbyTasks", "warmupTasks")),
    22: _v0(
        "StreamsGroupCurrentMemberAssignmentValue",
        F("memberEpoch", "int32"),
        F("previousMemberEpoch", "int32"),
        F("state", "int8"),
        *_tasks(
            "activeTasks",
            "standbyTasks",
            "warmupTasks",
            "activeTasksPendingRevocation",
            "standbyTasksPendingRevocation",
            "warmupTasksPendingRevocation",
            fields=_CURRENT_TASK_IDS,
        ),
    ),
    23: _v0(
        "StreamsGroupTopologyValue",
        F("epoch", "int32"),
        F(
            "subtopologies",
            "[]struct",
            fields=(
                F("subtopologyId", "string"),
                F("sourceTopics", "[]string"),
                F("sourceTopicRegex", "[]string"),
                F("stateChangelogTopics", "[]struct", fields=_TOPIC_INFO),
                F("repartitionSinkTopics", "[]string"),
                F("repartitionSourceTopics", "[]struct", fields=_TOPIC_INFO),
                F(
                    "copartitionGroups",
                    "[]struct",
                    fields=(
                        F("sourceTopics", "[]int16"),
                        F("sourceTopicRegex", "[]int16"),
                        F("repartitionSourceTopics", "[]int16"),
                    ),
                ),
            ),
        ),
    ),
    # Kafka trunk after 4.3: not in a release yet, so a value that does not fit is kept raw.
    24: _v0(
        "StreamsGroupTargetAssignmentResolvedTopicIdsValue",
        F("assignmentEpoch", "int32"),
        F(
            "resolvedTopicIdsBySubtopology",
            "[]struct",
            fields=(F("subtopologyId", "string"), F("topicIds", "[]uuid")),
        ),
        provisional=True,
    ),
}
"""Type -> the value table of the released coordinator."""

EARLY_ACCESS_VALUE_SCHEMAS: dict[int, tuple[MessageSchema, ...]] = {
    9: (
        _v0(
            "ShareGroupPartitionMetadataValue (4.0)",
            F("topics", "[]struct", fields=_PARTITION_METADATA_TOPIC),
        ),
        _v0(
            "ShareGroupPartitionMetadataValue (4.0, without racks)",
            F("topics", "[]struct", fields=_PARTITION_METADATA_TOPIC[:3]),
        ),
    ),
    11: (_v0("ShareGroupMetadataValue (4.0)", F("epoch", "int32")),),
    15: (
        _v0(
            "ShareGroupStatePartitionMetadataValue (4.0)",
            F("initializedTopics", "[]struct", fields=_TOPIC_PARTITIONS_INFO),
            F("deletingTopics", "[]struct", fields=(F("topicId", "uuid"), F("topicName", "string"))),
        ),
    ),
    17: (
        _v0("StreamsGroupMetadataValue (4.0)", F("epoch", "int32")),
        _v0(
            "StreamsGroupMetadataValue (4.1 development)",
            F("epoch", "int32"),
            F("metadataHash", "int64"),
            F("validatedTopologyEpoch", "int32", default=-1, tag=0, tagged="0+"),
            F("assignmentConfigs", "[]struct", fields=_KEY_VALUE),
        ),
    ),
    18: (
        _v0(
            "StreamsGroupPartitionMetadataValue (4.0)",
            F("topics", "[]struct", fields=_PARTITION_METADATA_TOPIC),
        ),
        _v0(
            "StreamsGroupPartitionMetadataValue (4.1 development)",
            F("topics", "[]struct", fields=_PARTITION_METADATA_TOPIC[:3]),
        ),
    ),
}
"""Type -> the early-access layouts, tried in order when the released layout does not fit exactly."""

EARLY_ACCESS_ONLY_TYPES = frozenset({9, 18})
"""Types that only the early-access coordinators write (4.1+ no longer defines them)."""
