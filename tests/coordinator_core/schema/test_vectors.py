"""Hand-built vectors (kafka-offsets-format.md §1.6, §1.9) and error kinds."""

from __future__ import annotations

import uuid

import pytest
from offsetops.coordinator_core.schema import (
    GenericValue,
    GroupKey,
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordType,
    SchemaError,
    UnknownKey,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    record_type_name,
)
from offsetops.coordinator_core.schema.codec import UNKNOWN_TAGS, encode_versioned
from offsetops.coordinator_core.schema.messages import VALUE_SCHEMAS

OFFSET_KEY = bytes.fromhex("000100097465737467726f757000066f726465727300000003")
OFFSET_V3 = bytes.fromhex("0003000000000000002a0000000500000000018bcfe56800")
GROUP_KEY = bytes.fromhex("000200097465737467726f7570")
FRANZ_GO_V4 = bytes.fromhex("0004000000000021d4a8ffffffff010000019964f2d83600")


def test_section_1_9_offset_key() -> None:
    key = decode_key(OFFSET_KEY)
    assert key == OffsetCommitKey("testgroup", "orders", 3, 1)
    assert key.group_id == "testgroup"
    assert encode_key(key) == OFFSET_KEY


def test_section_1_9_offset_value_v3() -> None:
    value = decode_value(1, OFFSET_V3)
    assert value == OffsetCommitValue(3, 42, 5, "", 1700000000000)
    assert encode_value(value) == OFFSET_V3


def test_section_1_9_group_key() -> None:
    key = decode_key(GROUP_KEY)
    assert key == GroupMetadataKey("testgroup")
    assert encode_key(key) == GROUP_KEY


def test_franz_go_v4_sample() -> None:
    """Kafka 4.1's flexible v4 value (twmb/franz-go#1105): compact metadata, empty tagged section."""
    value = decode_value(1, FRANZ_GO_V4, strict=True)
    assert value == OffsetCommitValue(4, 2217128, -1, "", 1758335260726)
    assert encode_value(value) == FRANZ_GO_V4


def test_v4_topic_id_tag_and_unknown_tags_round_trip() -> None:
    tid = uuid.UUID("0123456789abcdef0123456789abcdef")
    value = OffsetCommitValue(4, 7, 2, "m", 99, topic_id=tid, unknown_tagged_fields=((5, b"\x01\x02"),))
    raw = encode_value(value)
    # tag 0 (uuid, 16 bytes) first, then the unknown tag 5: sorted as Kafka writes them.
    assert raw.endswith(b"\x02\x00\x10" + tid.bytes + b"\x05\x02\x01\x02")
    assert decode_value(1, raw) == value


def test_offset_v1_expire_timestamp_and_v2_layout() -> None:
    v1 = OffsetCommitValue(1, 10, -1, "x", 20, 30)
    assert encode_value(v1)[-16:] == (20).to_bytes(8, "big") + (30).to_bytes(8, "big")
    v0 = encode_value(OffsetCommitValue(0, 10, -1, "x", 20))
    v2 = encode_value(OffsetCommitValue(2, 10, -1, "x", 20))
    assert v0[2:] == v2[2:]


def test_encode_rejects_fields_the_version_lacks() -> None:
    with pytest.raises(ValueError, match="leaderEpoch"):
        encode_value(OffsetCommitValue(2, 1, 5, "", 0))
    with pytest.raises(ValueError, match="expireTimestamp"):
        encode_value(OffsetCommitValue(3, 1, 5, "", 0, 123))


@pytest.mark.parametrize("data", [b"", b"\x00"])
def test_short_key_is_corrupt(data: bytes) -> None:
    with pytest.raises(SchemaError) as e:
        decode_key(data)
    assert e.value.kind == "corrupt_key"


def test_truncated_key_is_corrupt() -> None:
    with pytest.raises(SchemaError) as e:
        decode_key(OFFSET_KEY[:-1])
    assert e.value.kind == "corrupt_key"
    assert "partition" in e.value.reason


@pytest.mark.parametrize("record_type", [25, 100, 32767, -1])
def test_unknown_record_type_is_kept(record_type: int) -> None:
    raw = record_type.to_bytes(2, "big", signed=True) + b"\x00\x01x"
    key = decode_key(raw)
    assert key == UnknownKey(record_type, raw)
    assert key.group_id is None
    assert encode_key(key) == raw


def test_new_protocol_keys() -> None:
    raw = bytes.fromhex("000500016700026d31")
    key = decode_key(raw)
    assert key == GroupKey(5, "g", {"groupId": "g", "memberId": "m1"})
    assert key.member_id == "m1"
    regex = decode_key(bytes.fromhex("00100001670003612e2a"))
    assert isinstance(regex, GroupKey)
    assert regex.fields["regularExpression"] == "a.*"


@pytest.mark.parametrize(("record_type", "bad_version"), [(1, 5), (1, -1), (2, 5), (3, 1), (8, 7)])
def test_unknown_value_version_is_an_error(record_type: int, bad_version: int) -> None:
    with pytest.raises(SchemaError) as e:
        decode_value(record_type, bad_version.to_bytes(2, "big", signed=True) + b"\x00" * 40)
    assert e.value.kind == "unknown_value_version"


@pytest.mark.parametrize("data", [b"", b"\x00", OFFSET_V3[:-1], OFFSET_V3[:5], FRANZ_GO_V4[:-1]])
def test_truncated_offset_value_is_corrupt(data: bytes) -> None:
    with pytest.raises(SchemaError) as e:
        decode_value(1, data)
    assert e.value.kind == "corrupt_value"


def test_trailing_bytes_are_ignored_unless_strict() -> None:
    """Kafka's generated readers never look past the struct; strict mode reports the extra bytes."""
    assert decode_value(1, OFFSET_V3 + b"junk") == decode_value(1, OFFSET_V3)
    with pytest.raises(SchemaError) as e:
        decode_value(1, OFFSET_V3 + b"junk", strict=True)
    assert e.value.kind == "corrupt_value"


def test_unreleased_value_that_does_not_fit_gives_raw_generic_value() -> None:
    raw = bytes.fromhex("0000deadbeef")
    value = decode_value(24, raw)
    assert value == GenericValue(24, 0, {}, raw)
    assert not value.decoded
    assert encode_value(value) == raw


def test_share_value_that_fits_no_layout_is_corrupt() -> None:
    # Share groups are no longer in development (4.1+): a value that fits neither the released nor the
    # early-access layout fails the load, as Kafka's deserializer does.
    with pytest.raises(SchemaError) as exc:
        decode_value(RecordType.SHARE_GROUP_METADATA, bytes.fromhex("000001"))
    assert exc.value.kind == "corrupt_value"


def test_kip848_values() -> None:
    member = {
        "instanceId": None,
        "rackId": "r1",
        "clientId": "c",
        "clientHost": "/h",
        "subscribedTopicNames": ["t1", "t2"],
        "subscribedTopicRegex": None,
        "rebalanceTimeoutMs": 30000,
        "serverAssignor": "uniform",
        "classicMemberMetadata": {
            "sessionTimeoutMs": 45000,
            "supportedProtocols": [{"name": "range", "metadata": b"\x00\x01"}],
        },
    }
    raw = encode_versioned(VALUE_SCHEMAS[5], 0, member)
    # flexible: compact strings ("c" -> 0x02 0x63), null compact string -> 0x00
    assert raw.startswith(bytes.fromhex("0000000372310263"))
    value = decode_value(5, raw, strict=True)
    assert isinstance(value, GenericValue)
    assert value.fields == member
    epoch = decode_value(3, bytes.fromhex("00000000000c0100080000000000000063"))
    assert epoch.fields == {"epoch": 12, "metadataHash": 99, "creationTimeMs": -1}  # type: ignore[union-attr]


def test_unknown_tags_in_nested_structs_are_skipped_and_kept() -> None:
    fields = {
        "topicPartitions": [
            {"topicId": uuid.UUID(int=1), "partitions": [0, 1], UNKNOWN_TAGS: ((9, b"zz"),)},
        ],
        UNKNOWN_TAGS: ((3, b""),),
    }
    raw = encode_versioned(VALUE_SCHEMAS[7], 0, fields)
    value = decode_value(7, raw, strict=True)
    assert value.fields == fields  # type: ignore[union-attr]
    assert encode_value(value) == raw


def test_record_type_names() -> None:
    assert RecordType(1).name == "OFFSET_COMMIT"
    assert record_type_name(0) == "LegacyOffsetCommit"
    assert record_type_name(5) == "ConsumerGroupMemberMetadata"
    assert record_type_name(24) == "StreamsGroupTargetAssignmentResolvedTopicIds"
    assert record_type_name(99) == "Unknown(99)"
    assert len(RecordType) == 25


def test_streams_group_metadata_value_bytes() -> None:
    """StreamsCoordinatorRecordHelpers.newStreamsGroupMetadataRecord (StreamsCoordinatorRecordHelpersTest):
    a tagged field is written only when it is not its default, in tag order; the bytes are the flexible
    version-0 layout of StreamsGroupMetadataValue.json."""
    head = bytes.fromhex("0000000000070102030405060708")
    bare = GenericValue(17, 0, {"epoch": 7, "metadataHash": 0x0102030405060708})
    assert encode_value(bare) == head + b"\x00"
    configs = [{"key": "num.standby.replicas", "value": "0"}]
    full = GenericValue(
        17,
        0,
        {
            "epoch": 7,
            "metadataHash": 0x0102030405060708,
            "validatedTopologyEpoch": 0,
            "lastAssignmentConfigs": configs,
        },
    )
    trailer = b"\x02\x00\x04\x00\x00\x00\x00\x01\x19\x02\x15num.standby.replicas\x020\x00"
    assert encode_value(full) == head + trailer
    decoded = decode_value(17, head + trailer, strict=True)
    assert decoded.fields["validatedTopologyEpoch"] == 0
    assert decoded.fields["lastAssignmentConfigs"] == configs
    assert decode_value(17, head + b"\x00").fields["validatedTopologyEpoch"] == -1  # the default


def test_streams_target_assignment_metadata_value_bytes() -> None:
    """StreamsGroupTargetAssignmentMetadataValue: AssignmentTimestamp (KIP-1263) is tag 0, omitted at 0."""
    value = GenericValue(20, 0, {"assignmentEpoch": 12, "assignmentTimestamp": 1_791_331_200_000})
    raw = bytes.fromhex("00000000000c010008000001a113a8ec00")
    assert encode_value(value) == raw
    assert decode_value(20, raw, strict=True) == value
    assert encode_value(GenericValue(20, 0, {"assignmentEpoch": 12})) == bytes.fromhex("00000000000c00")


def test_streams_member_endpoint_port_is_uint16() -> None:
    """StreamsGroupMemberMetadataValue.Endpoint.Port is a uint16: 65535 is a valid port, two bytes."""
    fields = {
        "instanceId": None,
        "rackId": None,
        "clientId": "c",
        "clientHost": "h",
        "rebalanceTimeoutMs": 1500,
        "topologyEpoch": 0,
        "processId": "p",
        "userEndpoint": {"host": "x", "port": 65535},
        "clientTags": [],
    }
    raw = encode_value(GenericValue(19, 0, fields))
    assert b"\x01\x02x\xff\xff\x00" in raw  # present, host "x", port 0xffff, the struct's empty tag section
    assert decode_value(19, raw, strict=True).fields["userEndpoint"] == {"host": "x", "port": 65535}


def test_share_and_streams_values_of_an_unknown_version_are_errors() -> None:
    """GroupCoordinatorRecordSerde: a value version the schema does not define fails the load."""
    for record_type in (11, 14, 17, 22, 23):
        with pytest.raises(SchemaError) as exc:
            decode_value(record_type, bytes.fromhex("0001") + b"\x00" * 16)
        assert exc.value.kind == "unknown_value_version"
