"""Members' consumer-protocol bytes judged as Kafka's coordinators read them, on the bytes each client writes
(tests/fixtures/client_vectors.json, from the clients' own sources) and on bytes Kafka fails on."""

from __future__ import annotations

from typing import Any

import pytest
from offsetops.coordinator_core.embedded import fatal_finding, group_findings, read_member
from offsetops.coordinator_core.schema import GroupMetadataValue
from offsetops.coordinator_core.schema.consumer_protocol import (
    assignment_from,
    read_embedded,
    subscription_from,
)
from offsetops.coordinator_core.schema.values import MemberMetadata

from tests.support.client_vectors import VECTORS, by_group


def _member(sub: bytes, asg: bytes = b"") -> MemberMetadata:
    return MemberMetadata("m-1", None, "c", "/h", 300_000, 45_000, sub, asg)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_client_vector_is_read_at_its_layout(vector: dict[str, Any]) -> None:
    exp = vector["expect"]
    r = read_embedded(vector["role"], bytes.fromhex(vector["hex"]))
    assert (r.version, r.seen, r.standard) == (exp["version"], exp["layout"], exp["standard"])
    if vector["role"] == "subscription":
        sub = subscription_from(r)
        assert sub is not None and list(sub.topics) == exp["topics"]
        assert sub.owned_partitions == exp.get("owned_partitions", {})
        assert sub.generation_id == exp.get("generation_id", -1) and sub.rack_id == exp.get("rack_id")
        assert (None if sub.user_data is None else len(sub.user_data)) == exp["user_data_length"]
        assert r.coordinator.ok and r.coordinator.fields is not None
        assert r.coordinator.fields["topics"] == exp["topics"]  # what every load reads
    elif not exp.get("empty"):
        asg = assignment_from(r)
        assert asg is not None and asg.partitions == exp["partitions"]
        assert (None if asg.user_data is None else len(asg.user_data)) == exp["user_data_length"]


@pytest.mark.parametrize("gid", sorted(by_group()))
def test_client_member_gives_its_topics_and_partitions_without_error(gid: str) -> None:
    pair = by_group()[gid]
    m = _member(bytes.fromhex(pair["subscription"]["hex"]), bytes.fromhex(pair["assignment"]["hex"]))
    read = read_member(gid, "range", m)
    assert read.topics == sorted(pair["subscription"]["expect"]["topics"])
    assert read.partitions == pair["assignment"]["expect"]["partitions"]
    assert all(f.kind == "embedded_layout" and not f.fatal for f in read.findings)
    assert bool(read.findings) == (not pair["subscription"]["expect"]["standard"])


def test_v1_header_over_v0_body_notice_names_member_layout_and_upgrade() -> None:
    [finding] = read_member(
        "g", "range", _member(bytes.fromhex("0001 00000001 0001 61 00000000".replace(" ", "")))
    ).findings
    assert finding.kind == "embedded_layout" and not finding.fatal
    assert "group 'g' member 'm-1'" in finding.reason
    assert "v1 header over the v0 layout" in finding.reason
    assert "would not upgrade" in finding.reason and "ownedPartitions" in finding.reason


def test_trailing_bytes_are_a_notice_that_still_upgrades() -> None:
    sub = bytes.fromhex("0000 00000001 0001 61 00000000 beef".replace(" ", ""))
    read = read_member("g", "range", _member(sub))
    assert read.topics == ["a"]
    [finding] = read.findings
    assert "v0 layout and 2 trailing byte(s)" in finding.reason and "upgrade" not in finding.reason


def test_newer_version_with_appended_fields_is_standard() -> None:
    v3 = "00000000 ffffffff 00000000 ffffffff ffff".replace(" ", "")
    r = read_embedded("subscription", bytes.fromhex("0004" + v3 + "00000009"))
    assert (r.seen, r.trailing, r.standard) == (3, 4, True)


def test_underflow_before_the_topics_end_is_a_notice_and_the_topics_unknown() -> None:
    read = read_member("g", "range", _member(bytes.fromhex("0000 00000002 0001 61".replace(" ", ""))))
    assert read.topics is None  # the coordinator logs a warning and forgets the group's subscription
    [finding] = read.findings
    assert (finding.kind, finding.fatal) == ("embedded_layout", False)
    assert "Failed to parse Consumer Protocol" in finding.reason


def test_a_null_topic_array_fails_the_load() -> None:
    m = _member(bytes.fromhex("0000ffffffff"))
    [finding] = read_member("g", "range", m).findings
    assert (finding.kind, finding.fatal) == ("corrupt_embedded", True)
    value = GroupMetadataValue(3, "consumer", 1, "range", "m-1", 0, (m,))
    fatal = fatal_finding(value)
    assert fatal is not None and "fails to load the partition" in fatal.reason
    assert fatal_finding(GroupMetadataValue(3, "consumer", 1, None, None, 0, (m,))) is None  # no protocol


def test_unreadable_assignment_is_only_a_notice() -> None:
    sub = bytes.fromhex("0000 00000001 0001 61 ffffffff".replace(" ", ""))
    read = read_member("g", "range", _member(sub, bytes.fromhex("0000ffffffff")))
    assert read.topics == ["a"] and read.partitions is None
    [finding] = read.findings
    assert finding.kind == "embedded_layout" and "assignment" in finding.reason


def test_only_consumer_groups_are_judged() -> None:
    m = _member(b"\x00\x00\xff\xff\xff\xff")
    assert group_findings("g", GroupMetadataValue(3, "connect", 1, "default", "m-1", 0, (m,))) == []
    assert [
        f.kind for f in group_findings("g", GroupMetadataValue(3, "consumer", 1, "range", "m-1", 0, (m,)))
    ] == ["corrupt_embedded"]
