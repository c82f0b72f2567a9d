"""Kafka's generated reader fails as it fails: a SchemaException for an underflow, a RuntimeException for the
rest (MessageDataGenerator, ByteBufferAccessor)."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.schema.java_reader import RuntimeFailure, SchemaFailure, read_struct
from offsetops.coordinator_core.schema.messages import CONSUMER_PROTOCOL_SUBSCRIPTION

FIELDS = CONSUMER_PROTOCOL_SUBSCRIPTION.fields


def read(hex_body: str, version: int = 0) -> tuple[dict, int]:
    return read_struct(FIELDS, version, bytes.fromhex(hex_body), 0)


def test_v0_fields_and_bytes_after_them_left_unread() -> None:
    fields, end = read("00000001 0001 61 ffffffff" + "deadbeef")
    assert fields["topics"] == ["a"] and fields["userData"] is None and end == 11
    assert fields["ownedPartitions"] == [] and fields["generationId"] == -1  # absent in v0: defaults


def test_v3_fields() -> None:
    body = "00000000 00000000 00000001 0001 74 00000002 00000000 00000003 00000007 0002 7231"
    fields, _ = read(body.replace(" ", ""), 3)
    owned = [{"topic": "t", "partitions": [0, 3]}]
    assert (fields["ownedPartitions"], fields["generationId"], fields["rackId"]) == (owned, 7, "r1")


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("", "topics"),  # no count at all
        ("00000001 00", "topics[0]"),  # a string length cut short
        ("00000001 0001 61", "userData"),  # no user data length
        ("00000001 0001 61 ffffffff", "ownedPartitions"),  # a v1 header over a v0 body
    ],
)
def test_underflow_is_a_schema_failure(body: str, why: str) -> None:
    with pytest.raises(SchemaFailure, match=why.replace("[", r"\[").replace("]", r"\]")):
        read(body.replace(" ", ""), 1)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("ffffffff", "non-nullable field topics was serialized as null"),
        ("7fffffff", "a collection of size 2147483647"),
        ("00000001 ffff", "non-nullable field topics\\[0\\] was serialized as null"),
        ("00000001 0009 61", "topics\\[0\\] of 9 byte"),
        ("00000001 0001 61 00000010 00", "userData of 16 byte"),
    ],
)
def test_what_the_generated_code_checks_itself_is_a_runtime_failure(body: str, why: str) -> None:
    with pytest.raises(RuntimeFailure, match=why):
        read(body.replace(" ", ""))


def test_a_negative_user_data_length_is_null() -> None:
    assert read("00000000 fffffffe")[0]["userData"] is None
