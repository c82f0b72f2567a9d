"""All 69 linkedin/Burrow vectors (shared/fixtures/peer-vectors/burrow.json).

Where Burrow and Kafka disagree we assert Kafka's behaviour; each such case id is listed in KAFKA_OVERRIDES
with the reason.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from offsetops.coordinator_core.schema import (
    GenericValue,
    GroupKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    SchemaError,
    decode_assignment,
    decode_key,
    decode_subscription,
    decode_value,
)
from offsetops.coordinator_core.schema.types import CorruptData, read_compact_string, read_string

from tests.support.shared import PEER_VECTORS, require_peer_vectors

CASES: list[dict[str, Any]] = json.loads(PEER_VECTORS.read_text()) if PEER_VECTORS.is_file() else []
CASE_IDS = [c["id"] for c in CASES] or ["pv-missing"]

# Kafka-vs-Burrow disagreements: we follow Kafka (kafka-offsets-format.md) for these ids.
KAFKA_OVERRIDES = {
    "pv-005": "null compact string (length byte 0) is null in Kafka; Burrow returns ''",
    "pv-007": "header-only body: Kafka's reader needs the member array, so the full value is truncated",
    "pv-013": "v1 subscription lacking ownedPartitions: Kafka's strict reader fails; we keep topics, partial",
    "pv-015": "0xFFFF groupInstanceId is null in Kafka; Burrow gives ''",
    "pv-043": "v4 body without the tagged-field count Kafka always writes: Kafka fails reading it",
    "pv-050": "same missing tagged-field byte as pv-043",
    "pv-053": "OffsetCommitValue v2 is valid Kafka (v0 layout); Burrow rejects it",
    "pv-069": "type 3 is ConsumerGroupMetadataKey in Kafka 3.7+; the value parses as its v0 (Epoch 0)",
}

FIELD = {
    "protocol_type": "protocolType",
    "generation": "generation",
    "protocol": "protocol",
    "leader": "leader",
    "member_id": "memberId",
    "client_id": "clientId",
    "client_host": "clientHost",
    "rebalance_timeout": "rebalanceTimeout",
    "session_timeout": "sessionTimeout",
    "subscription_bytes": "subscription",
    "assignment_bytes": "assignment",
    "offset": "offset",
    "leaderEpoch": "leaderEpoch",
    "metadata": "metadata",
    "timestamp": "commitTimestamp",
    "group": "group",
    "topic": "topic",
    "partition": "partition",
}

GROUP_RECORDS = {"pv-056", "pv-057", "pv-058", "pv-059", "pv-060", "pv-061"}


def _prefix(version: int) -> bytes:
    return version.to_bytes(2, "big")


def _group_envelope(version: int, member_body: bytes) -> bytes:
    """A GroupMetadataValue of ``version`` holding exactly one member with the given body."""
    header = bytes.fromhex("0008636f6e73756d65720000000100017000016c")
    if version >= 2:
        header += (0).to_bytes(8, "big")
    return _prefix(version) + header + (1).to_bytes(4, "big") + member_body


def _corrupt(kind: str, fn: Any) -> SchemaError:
    with pytest.raises(SchemaError) as e:
        fn()
    assert e.value.kind == kind, e.value
    return e.value


def _check_members(value: GroupMetadataValue, expected: list[dict[str, Any]]) -> None:
    assert len(value.members) == len(expected)
    for m, exp in zip(value.members, expected, strict=True):
        for k in ("member_id", "client_id", "client_host", "rebalance_timeout", "session_timeout"):
            if k in exp:
                assert getattr(m, k) == exp[k]
        if "group_instance_id" in exp:
            assert m.group_instance_id == exp["group_instance_id"]
        if "subscription_hex" in exp:
            assert m.subscription.hex() == exp["subscription_hex"]
        if "subscription" in exp:
            sub = decode_subscription(m.subscription)
            assert sub is not None and not sub.partial
            assert sub.version == exp["subscription"]["version"]
            assert list(sub.topics) == exp["subscription"]["topics"]
        if "assignment" in exp:
            asg = decode_assignment(m.assignment)
            assert asg is not None
            assert asg.partitions == exp["assignment"]["partitions"]
            if "version" in exp["assignment"]:
                assert asg.version == exp["assignment"]["version"]


def _check(case: dict[str, Any]) -> None:
    cid, kind = case["id"], case["kind"]
    data = bytes.fromhex(case["hex"]) if case.get("hex") is not None else b""
    expect, error = case.get("expect"), case.get("expect_error")
    tag = FIELD.get(case.get("upstream_error_tag", ""))

    if kind == "string":
        if error:
            with pytest.raises(CorruptData):
                read_string(data, 0)
        else:
            assert read_string(data, 0)[0] == expect["value"]
        return
    if kind == "compact_string":
        if error:
            with pytest.raises(CorruptData):
                read_compact_string(data, 0, nullable=True)
        else:
            # pv-005 (override): uvarint 0 is null, as in Kafka.
            assert read_compact_string(data, 0, nullable=True)[0] == expect["value"]
        return
    if kind in ("group_value_header_body", "group_value_body"):
        raw = _prefix(case["schema_version"]) + data
        err = _corrupt("corrupt_value", lambda: decode_value(2, raw))
        if tag:
            assert tag in err.reason
        if expect:  # pv-007 (override): complete it with an empty member array, then the header decodes.
            value = decode_value(2, raw + b"\x00\x00\x00\x00")
            assert isinstance(value, GroupMetadataValue)
            assert (value.protocol_type, value.generation, value.protocol, value.leader) == (
                expect["protocol_type"],
                expect["generation"],
                expect["protocol"],
                expect["leader"],
            )
        return
    if kind == "group_value":
        value = decode_value(2, data, strict=True)
        assert isinstance(value, GroupMetadataValue)
        assert value.version == case["schema_version"]
        for k in ("protocol_type", "generation", "protocol", "leader", "current_state_timestamp"):
            assert getattr(value, k) == expect[k]
        _check_members(value, case["derived_full_decode"]["members"])
        if cid == "pv-013":  # override: lenient subscription keeps the topics
            sub = decode_subscription(value.members[0].subscription)
            assert sub is not None and sub.partial and sub.version == 1
            assert sub.topics == ("topic1",)
        return
    if kind == "member_body":
        raw = _group_envelope(case["schema_version"], data)
        if error and case.get("upstream_error_tag") not in ("consumer_protocol_version", "assignment"):
            err = _corrupt("corrupt_value", lambda: decode_value(2, raw))
            assert f"members: [0].{tag}" in err.reason
            return
        value = decode_value(2, raw, strict=True)
        assert isinstance(value, GroupMetadataValue)
        if error:  # pv-023/024: the envelope is fine; the embedded assignment is not.
            assert decode_assignment(value.members[0].assignment) is None
            return
        _check_members(value, [{**expect, **case.get("derived_full_decode", {})}])
        return
    if kind == "assignment_body":
        asg = decode_assignment(_prefix(case["schema_version"]) + data)
        if error:
            assert asg is None  # lenient: unparseable partitions give None, never an exception
        else:
            assert asg is not None and asg.partitions == expect["partitions"]
            assert (asg.user_data or b"").hex() == expect["user_data_hex"]
        return
    if kind == "offset_key_body":
        raw = _prefix(1) + data
        if error:
            err = _corrupt("corrupt_key", lambda: decode_key(raw))
            assert tag in err.reason
        else:
            assert decode_key(raw) == OffsetCommitKey(
                expect["group"], expect["topic"], expect["partition"], 1
            )
        return
    if kind in ("offset_value_body", "offset_value"):
        raw = data if case["includes_version_prefix"] else _prefix(case["schema_version"]) + data
        if cid == "pv-043":  # override: Kafka needs the tagged-field count
            err = _corrupt("corrupt_value", lambda: decode_value(1, raw))
            assert "tagged" in err.reason
            raw += b"\x00"
            error = None
        if error:
            err = _corrupt("corrupt_value", lambda: decode_value(1, raw))
            assert (tag or "metadata") in err.reason
            return
        value = decode_value(1, raw, strict=True)
        assert isinstance(value, OffsetCommitValue)
        assert value.offset == expect["offset"]
        assert value.metadata == expect["metadata"]
        assert value.commit_timestamp == expect["commit_timestamp"]
        assert value.leader_epoch == expect.get("leader_epoch", -1)
        return
    if kind == "record":
        _check_record(case)
        return
    raise AssertionError(f"{cid}: unhandled kind {kind}")


def _check_record(case: dict[str, Any]) -> None:
    cid = case["id"]
    key_raw = bytes.fromhex(case["key_hex"])
    if not case["key_includes_version_prefix"]:
        key_raw = _prefix(2 if cid in GROUP_RECORDS else 1) + key_raw
    value_raw = bytes.fromhex(case["value_hex"]) if case["value_hex"] is not None else None
    expect = case.get("expect") or case.get("spec_expect")
    if cid in ("pv-051", "pv-057", "pv-068"):
        _corrupt("corrupt_key", lambda: decode_key(key_raw))
        return
    key = decode_key(key_raw)
    if cid == "pv-069":  # override: a KIP-848 record type, not a corrupt key
        assert key == GroupKey(3, "testgroup", {"groupId": "testgroup"})
        value = decode_value(3, value_raw)  # type: ignore[arg-type]
        assert isinstance(value, GenericValue) and value.fields == {
            "epoch": 0,
            "metadataHash": 0,
            "creationTimeMs": -1,
        }
        _corrupt("corrupt_value", lambda: decode_value(3, value_raw, strict=True))  # type: ignore[arg-type]
        return
    assert value_raw is not None
    if cid == "pv-050":  # override: Kafka fails without the tagged-field count
        _corrupt("corrupt_value", lambda: decode_value(key.record_type, value_raw))
        value_raw += b"\x00"
    elif case.get("expect_error") and cid != "pv-053":
        _corrupt("corrupt_value", lambda: decode_value(key.record_type, value_raw))
        return
    value = decode_value(key.record_type, value_raw, strict=True)
    assert key.group_id == expect["group"]
    assert value.version == expect["value_version"]  # type: ignore[union-attr]
    if "key_version" in expect:
        assert key.record_type == expect["key_version"]
    if isinstance(key, OffsetCommitKey):
        assert (key.topic, key.partition) == (expect["topic"], expect["partition"])
        assert isinstance(value, OffsetCommitValue)
        assert (value.offset, value.commit_timestamp) == (expect["offset"], expect["commit_timestamp"])
        if "metadata" in expect:
            assert value.metadata == expect["metadata"]
    else:
        assert isinstance(value, GroupMetadataValue)
        for k in ("protocol_type", "generation", "protocol", "leader"):
            assert getattr(value, k) == expect[k]
        _check_members(value, expect["members"])


def test_peer_vector_file_has_69_cases() -> None:
    require_peer_vectors()
    assert len(CASES) == 69
    assert set(KAFKA_OVERRIDES) <= {c["id"] for c in CASES}


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_peer_vector(case_id: str) -> None:
    require_peer_vectors()
    case = next(c for c in CASES if c["id"] == case_id)
    _check(case)
