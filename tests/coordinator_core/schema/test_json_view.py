from __future__ import annotations

import json
import uuid

from offsetops.coordinator_core.schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    decode_value,
    kafka_uuid,
    key_json,
    unknown_record_text,
    value_json,
)
from offsetops.coordinator_core.schema.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)


def test_offset_key_and_value_json() -> None:
    assert key_json(OffsetCommitKey("g", "t", 3)) == {
        "type": "1",
        "data": {"group": "g", "topic": "t", "partition": 3},
    }
    assert value_json(1, OffsetCommitValue(0, 100, -1, "metadata", 1234)) == {
        "version": "0",
        "data": {"offset": 100, "metadata": "metadata", "commitTimestamp": 1234},
    }
    assert value_json(1, OffsetCommitValue(1, 1, -1, "", 2, 3))["data"]["expireTimestamp"] == 3  # type: ignore[index]
    assert list(value_json(1, OffsetCommitValue(3, 1, 5, "", 2))["data"]) == [  # type: ignore[index]
        "offset",
        "leaderEpoch",
        "metadata",
        "commitTimestamp",
    ]


def test_v4_topic_id_printed_only_when_set() -> None:
    tid = uuid.UUID(int=7)
    assert "topicId" not in value_json(1, OffsetCommitValue(4, 1, 5, "", 2))["data"]  # type: ignore[index]
    shown = value_json(1, OffsetCommitValue(4, 1, 5, "", 2, topic_id=tid))["data"]["topicId"]  # type: ignore[index]
    assert shown == kafka_uuid(tid) == "AAAAAAAAAAAAAAAAAAAABw"


def test_group_metadata_json_decodes_consumer_protocol() -> None:
    sub = encode_subscription(Subscription(1, ("t1",), None, {"t1": [0]}))
    asg = encode_assignment(Assignment(0, {"t1": [0, 1]}, b"\x01"))
    member = MemberMetadata("m", None, "c", "/h", 10, 20, sub, asg)
    value = GroupMetadataValue(3, "consumer", 4, "range", "m", 55, (member,))
    out = value_json(2, value)
    assert out is not None
    m = out["data"]["members"][0]
    assert m["groupInstanceId"] is None
    assert m["subscription"] == {
        "topics": ["t1"],
        "userData": None,
        "ownedPartitions": [{"topic": "t1", "partitions": [0]}],
    }
    assert m["assignment"] == {
        "assignedPartitions": [{"topic": "t1", "partitions": [0, 1]}],
        "userData": "AQ==",
    }
    json.dumps(out)
    connect = GroupMetadataValue(0, "connect", 1, None, None, -1, (member,))
    cm = value_json(2, connect)["data"]["members"][0]  # type: ignore[index]
    assert cm["subscription"] == "AAEAAAABAAJ0Mf////8AAAABAAJ0MQAAAAEAAAAA"
    assert "groupInstanceId" not in cm and "rebalanceTimeout" not in cm


def test_unknown_and_generic_json() -> None:
    assert key_json(GroupMetadataKey("g")) == {"type": "2", "data": {"group": "g"}}
    assert key_json(UnknownKey(99, b"\x00\x63")) == {"type": "99", "data": "unknown"}
    assert unknown_record_text(99, 12) == "Unknown record type 99 at offset 12, skipping."
    assert value_json(23, decode_value(23, b"\x00\x00abc")) == {"version": "0", "data": "unknown"}
    assert value_json(1, None) is None
    share = decode_value(10, bytes.fromhex("00000002630368310203543100"))
    assert value_json(10, share) == {
        "version": "0",
        "data": {"rackId": None, "clientId": "c", "clientHost": "h1", "subscribedTopicNames": ["T1"]},
    }


def test_subscription_shown_with_the_fields_of_the_layout_it_follows() -> None:
    v1_over_v0 = bytes.fromhex("0001" + "00000001" + "0002" + "7431" + "00000000")  # KafkaJS <= 2.2.1
    member = MemberMetadata("m", None, "c", "/h", 10, 20, v1_over_v0, b"")
    m = value_json(2, GroupMetadataValue(3, "consumer", 4, "range", "m", 55, (member,)))["data"]["members"][0]  # type: ignore[index]
    assert m["subscription"] == {"topics": ["t1"], "userData": ""}  # no ownedPartitions: not in the bytes
    assert m["assignment"] == ""  # empty bytes fit no layout: shown as they are
    garbage = MemberMetadata("m", None, "c", "/h", 10, 20, b"\x00\x00\xff\xff\xff\xff", b"")
    g = value_json(2, GroupMetadataValue(3, "consumer", 4, "range", "m", 55, (garbage,)))["data"]["members"][
        0
    ]  # type: ignore[index]
    assert g["subscription"] == "AAD/////"
