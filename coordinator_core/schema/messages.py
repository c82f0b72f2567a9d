"""The schema tables: one entry per record type, transcribed from Kafka's message JSON definitions.

Sources (facts only): ``group-coordinator/src/main/resources/common/message/*Key.json`` / ``*Value.json`` and
``clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json`` in apache/kafka.
Field names are the camelCase spelling Kafka's generated JSON converters print. Versions use Kafka's own
notation (``"0+"``, ``"3+"``, ``"1"``, ``"0-3"``, ``"none"``).

Types: ``int8 int16 uint16 int32 int64 float64 bool uuid string bytes``, ``[]<primitive>``, and ``struct`` /
``[]struct`` (with ``fields``). A ``tag`` makes a field tagged (written in the struct's tagged-field
section, only when it differs from its default).
"""

from __future__ import annotations

from .fields import MAX_VERSION, F, Field, MessageSchema, in_range, message, parse_versions
from .share_streams import SHARE_STREAMS_VALUE_SCHEMAS

__all__ = [
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "GROUP_METADATA_MEMBER",
    "GROUP_METADATA_VALUE",
    "KEY_SCHEMAS",
    "MAX_VERSION",
    "OFFSET_COMMIT_VALUE",
    "VALUE_SCHEMAS",
    "F",
    "Field",
    "MessageSchema",
    "in_range",
    "message",
    "parse_versions",
]

# --- keys (the int16 prefix is the record type; the body has one non-flexible layout) ------------

_OFFSET_KEY = (F("group", "string"), F("topic", "string"), F("partition", "int32"))
_GROUP_ID = F("groupId", "string")
_MEMBER_ID = F("memberId", "string")


def _key(name: str, *fields: Field) -> MessageSchema:
    return message(name, "0", "none", *fields)


KEY_SCHEMAS: dict[int, MessageSchema] = {
    0: _key("LegacyOffsetCommitKey", *_OFFSET_KEY),
    1: _key("OffsetCommitKey", *_OFFSET_KEY),
    2: _key("GroupMetadataKey", F("group", "string")),
    3: _key("ConsumerGroupMetadataKey", _GROUP_ID),
    4: _key("ConsumerGroupPartitionMetadataKey", _GROUP_ID),
    5: _key("ConsumerGroupMemberMetadataKey", _GROUP_ID, _MEMBER_ID),
    6: _key("ConsumerGroupTargetAssignmentMetadataKey", _GROUP_ID),
    7: _key("ConsumerGroupTargetAssignmentMemberKey", _GROUP_ID, _MEMBER_ID),
    8: _key("ConsumerGroupCurrentMemberAssignmentKey", _GROUP_ID, _MEMBER_ID),
    9: _key("ShareGroupPartitionMetadataKey", _GROUP_ID),
    10: _key("ShareGroupMemberMetadataKey", _GROUP_ID, _MEMBER_ID),
    11: _key("ShareGroupMetadataKey", _GROUP_ID),
    12: _key("ShareGroupTargetAssignmentMetadataKey", _GROUP_ID),
    13: _key("ShareGroupTargetAssignmentMemberKey", _GROUP_ID, _MEMBER_ID),
    14: _key("ShareGroupCurrentMemberAssignmentKey", _GROUP_ID, _MEMBER_ID),
    15: _key("ShareGroupStatePartitionMetadataKey", _GROUP_ID),
    16: _key("ConsumerGroupRegularExpressionKey", _GROUP_ID, F("regularExpression", "string")),
    17: _key("StreamsGroupMetadataKey", _GROUP_ID),
    18: _key("StreamsGroupPartitionMetadataKey", _GROUP_ID),
    19: _key("StreamsGroupMemberMetadataKey", _GROUP_ID, _MEMBER_ID),
    20: _key("StreamsGroupTargetAssignmentMetadataKey", _GROUP_ID),
    21: _key("StreamsGroupTargetAssignmentMemberKey", _GROUP_ID, _MEMBER_ID),
    22: _key("StreamsGroupCurrentMemberAssignmentKey", _GROUP_ID, _MEMBER_ID),
    23: _key("StreamsGroupTopologyKey", _GROUP_ID),
    24: _key("StreamsGroupTargetAssignmentResolvedTopicIdsKey", _GROUP_ID),
}

# --- values (the int16 prefix is a real schema version) -----------------------------------------

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue",
    "0-4",
    "4+",
    F("offset", "int64"),
    F("leaderEpoch", "int32", "3+", default=-1),
    F("metadata", "string"),
    F("commitTimestamp", "int64"),
    F("expireTimestamp", "int64", "1", default=-1),
    # KAFKA-19141: absent in older records, which read back as ZERO_UUID.
    F("topicId", "uuid", "4+", tag=0, tagged="4+"),
)

GROUP_METADATA_MEMBER = (
    F("memberId", "string"),
    F("groupInstanceId", "string", "3+", nullable="3+", default=None),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("rebalanceTimeout", "int32", "1+", default=-1),
    F("sessionTimeout", "int32"),
    F("subscription", "bytes"),
    F("assignment", "bytes"),
)

GROUP_METADATA_VALUE = message(
    "GroupMetadataValue",
    "0-4",
    "4+",
    F("protocolType", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("currentStateTimestamp", "int64", "2+", default=-1),
    F("members", "[]struct", fields=GROUP_METADATA_MEMBER),
)

_TOPIC_PARTITIONS = (F("topicId", "uuid"), F("partitions", "[]int32"))

VALUE_SCHEMAS: dict[int, MessageSchema] = {
    0: OFFSET_COMMIT_VALUE,
    1: OFFSET_COMMIT_VALUE,
    2: GROUP_METADATA_VALUE,
    3: message(
        "ConsumerGroupMetadataValue",
        "0",
        "0+",
        F("epoch", "int32"),
        F("metadataHash", "int64", default=0, tag=0, tagged="0+"),  # KIP-1101 (4.1)
        F("creationTimeMs", "int64", default=-1, tag=1, tagged="0+"),  # KIP-1282
    ),
    4: message(
        "ConsumerGroupPartitionMetadataValue",
        "0",
        "0+",
        F(
            "topics",
            "[]struct",
            fields=(
                F("topicId", "uuid"),
                F("topicName", "string"),
                F("numPartitions", "int32"),
                F(
                    "partitionMetadata",
                    "[]struct",
                    fields=(F("partition", "int32"), F("racks", "[]string")),
                ),
            ),
        ),
    ),
    5: message(
        "ConsumerGroupMemberMetadataValue",
        "0",
        "0+",
        F("instanceId", "string", nullable="0+"),
        F("rackId", "string", nullable="0+"),
        F("clientId", "string"),
        F("clientHost", "string"),
        F("subscribedTopicNames", "[]string"),
        F("subscribedTopicRegex", "string", nullable="0+"),
        F("rebalanceTimeoutMs", "int32", default=-1),
        F("serverAssignor", "string", nullable="0+"),
        F(
            "classicMemberMetadata",
            "struct",
            nullable="0+",
            default=None,
            tag=0,
            tagged="0+",
            fields=(
                F("sessionTimeoutMs", "int32"),
                F("supportedProtocols", "[]struct", fields=(F("name", "string"), F("metadata", "bytes"))),
            ),
        ),
    ),
    6: message("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", F("assignmentEpoch", "int32")),
    7: message(
        "ConsumerGroupTargetAssignmentMemberValue",
        "0",
        "0+",
        F("topicPartitions", "[]struct", fields=_TOPIC_PARTITIONS),
    ),
    8: message(
        "ConsumerGroupCurrentMemberAssignmentValue",
        "0",
        "0+",
        F("memberEpoch", "int32"),
        F("previousMemberEpoch", "int32"),
        F("state", "int8"),
        F("assignedPartitions", "[]struct", fields=_TOPIC_PARTITIONS),
        F("partitionsPendingRevocation", "[]struct", fields=_TOPIC_PARTITIONS),
    ),
    16: message(
        "ConsumerGroupRegularExpressionValue",
        "0",
        "0+",
        F("topics", "[]string"),
        F("version", "int64"),
        F("timestamp", "int64"),
    ),
}

# Share groups (KIP-932) and streams groups (KIP-1071), types 10-15 and 17-24, are in their own module.
VALUE_SCHEMAS.update(SHARE_STREAMS_VALUE_SCHEMAS)

# --- consumer protocol (embedded in GroupMetadataValue members; never flexible) -------------------

CONSUMER_PROTOCOL_SUBSCRIPTION = message(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    F("topics", "[]string"),
    F("userData", "bytes", nullable="0+", default=None),
    F("ownedPartitions", "[]struct", "1+", fields=(F("topic", "string"), F("partitions", "[]int32"))),
    F("generationId", "int32", "2+", default=-1),
    F("rackId", "string", "3+", nullable="3+", default=None),
)

CONSUMER_PROTOCOL_ASSIGNMENT = message(
    "ConsumerProtocolAssignment",
    "0-3",
    "none",
    F("assignedPartitions", "[]struct", fields=(F("topic", "string"), F("partitions", "[]int32"))),
    F("userData", "bytes", nullable="0+", default=None),
)
