"""Loader rules ported from Kafka's own tests, on real segment files, checked through ``offsetops reload``.

Each test names the Kafka test or source it comes from: the Scala coordinator of Kafka 3.9
(``GroupMetadataManager`` / ``GroupMetadataManagerTest``) for ``--semantics scala``, and the Java
coordinator of Kafka 4.x (``OffsetMetadataManager``, ``GroupMetadataManager``) for ``--semantics java``.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records import build_control_batch, build_record_batch
from offsetops.coordinator_core.schema import (
    GenericValue,
    GroupKey,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_offset_commit_value,
    decode_value,
    encode_key,
    encode_value,
)

from offsetops.cli import main

T0 = 1_700_000_000_000
GROUP = "fidelity"
PART = partition_for(GROUP)


def okey(topic: str, partition: int, group: str = GROUP) -> bytes:
    return encode_key(OffsetCommitKey(group, topic, partition, 1))


def oval(offset: int, version: int = 3) -> bytes:
    return encode_value(OffsetCommitValue(version, offset, leader_epoch=-1, metadata="", commit_timestamp=T0))


def gval(*, version: int = 3, rebalance_timeout: int = 60000, generation: int = 935) -> bytes:
    rebalance = rebalance_timeout if version >= 1 else -1  # v0 has no rebalance timeout
    member = MemberMetadata("98098230493", None, "c", "/10.0.0.1", rebalance, 10000, b"", b"")
    cst = T0 if version >= 2 else -1
    return encode_value(
        GroupMetadataValue(version, "consumer", generation, "range", member.member_id, cst, (member,))
    )


class Segment:
    """One ``__consumer_offsets`` partition written as a broker writes it (consecutive offsets)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.next = 0

    def plain(self, *records: tuple[bytes, bytes | None]) -> Segment:
        self.buf += build_record_batch([(k, v, T0) for k, v in records], base_offset=self.next)
        self.next += len(records)
        return self

    def txn(self, pid: int, *records: tuple[bytes, bytes | None]) -> Segment:
        self.buf += build_record_batch(
            [(k, v, T0) for k, v in records],
            base_offset=self.next,
            producer_id=pid,
            producer_epoch=2,
            base_sequence=0,
            is_transactional=True,
        )
        self.next += len(records)
        return self

    def marker(self, pid: int, *, commit: bool) -> Segment:
        self.buf += build_control_batch(
            commit,
            base_offset=self.next,
            producer_id=pid,
            producer_epoch=2,
            coordinator_epoch=1,
            timestamp=T0,
        )
        self.next += 1
        return self

    def write(self, root: Path) -> Path:
        pdir = root / f"__consumer_offsets-{PART}"
        pdir.mkdir(parents=True)
        (pdir / f"{0:020d}.log").write_bytes(bytes(self.buf))
        return root


def reload(capsys, path: Path, semantics: str) -> tuple[int, dict]:
    code = main(["reload", str(path), "--json", "--strict", "--semantics", semantics])
    out = capsys.readouterr().out
    [doc] = json.loads(out)["partitions"] if "partitions" in json.loads(out) else [json.loads(out)]
    return code, doc


def group_of(doc: dict, gid: str = GROUP) -> dict | None:
    return next((g for g in doc["groups"] if g["group_id"] == gid), None)


# -- 1. --semantics scala is the 3.x loader: key types 3+ are unknown --------------------------------


def test_scala_skips_unknown_key_versions_as_3_9_does(tmp_path, capsys):
    """GroupMetadataManagerTest.testLoadGroupsAndOffsetsWillIgnoreUnknownMessage (3.9): keys of version
    Short.MaxValue and GroupMetadataKey's highest + 1 (3), with the key bytes as value, are skipped."""
    unknown_max = struct.pack(">h", 32767) + encode_key(GroupMetadataKey(GROUP))[2:]
    unknown_3 = struct.pack(">h", 3) + encode_key(GroupMetadataKey(GROUP))[2:]
    committed = {("foo", 0): 23, ("foo", 1): 455, ("bar", 0): 8992}
    seg = Segment().plain(
        *[(okey(t, p), oval(o)) for (t, p), o in committed.items()],
        (unknown_max, unknown_max),
        (unknown_3, unknown_3),
        (encode_key(GroupMetadataKey(GROUP)), gval()),
    )
    code, doc = reload(capsys, seg.write(tmp_path), "scala")
    # Kafka's member has empty subscription bytes: its load logs "Failed to parse Consumer Protocol"
    # (computeSubscribedTopics); offsetops says so in a notice, not an error.
    assert code == 0 and [e["kind"] for e in doc["stats"]["errors"]] == ["embedded_layout"]
    assert doc["stats"]["unknown_record_types"] == 2
    g = group_of(doc)
    assert (g["state"], g["generation"], g["leader"]) == ("Stable", 935, "98098230493")
    assert {(o["topic"], o["partition"]): o["offset"] for o in g["offsets"]} == committed
    # The Java coordinator knows type 3 (ConsumerGroupMetadata) and has no value version 3 for it.
    code, doc = reload(capsys, tmp_path, "java")
    assert code == 1 and [(e["kind"], e["offset"]) for e in doc["stats"]["errors"]] == [
        ("unknown_value_version", 4),
        ("embedded_layout", 5),
    ]


def test_scala_never_decodes_kip848_records(tmp_path, capsys):
    """GroupMetadataManager.readMessageKey (3.9) knows key versions 0-2 only: a ConsumerGroupMetadata
    record (epoch 10) and a v1 value the 4.x table lacks are unknown keys, counted and skipped."""
    cg_key = encode_key(GroupKey(3, GROUP, {"groupId": GROUP}))
    seg = Segment().plain(
        (okey("foo", 0), oval(7)),
        (cg_key, encode_value(GenericValue(3, 0, {"epoch": 10}))),
        (encode_key(GroupKey(3, "other", {"groupId": "other"})), b"\x00\x01" + b"\x00" * 8),
    )
    code, doc = reload(capsys, seg.write(tmp_path), "scala")
    assert code == 0 and doc["stats"]["errors"] == []
    assert doc["stats"]["unknown_record_types"] == 2
    g = group_of(doc)
    assert (g["group_type"], g["state"], g["protocol_type"], g["generation"]) == ("classic", "Empty", None, 0)
    assert group_of(doc, "other") is None
    # Java: a KIP-848 group with epoch 10, and the v1 value is an error naming its offset.
    code, doc = reload(capsys, tmp_path, "java")
    assert (group_of(doc)["group_type"], group_of(doc)["generation"]) == ("consumer", 10)
    assert code == 1 and [(e["kind"], e["offset"]) for e in doc["stats"]["errors"]] == [
        ("unknown_value_version", 2)
    ]


# -- 2. tagged fields by tag and size (KIP-915) ------------------------------------------------------


def _future_offset_value() -> bytes:
    """GroupMetadataManagerTest.testDeserializeFutureOffsetCommitValue (3.9): an OffsetCommitValue v4 with
    tagged fields 0 (a STRING "foo") and 1 (an INT32 4000) that no schema of 3.9 knows."""
    body = (
        struct.pack(">qi", 1000, 100) + bytes([len("metadata") + 1]) + b"metadata" + struct.pack(">q", 2000)
    )
    tag0 = struct.pack(">h", 3) + b"foo"
    tag1 = struct.pack(">i", 4000)
    tags = bytes([2, 0, len(tag0)]) + tag0 + bytes([1, len(tag1)]) + tag1
    return struct.pack(">h", 4) + body + tags


@pytest.mark.parametrize("semantics", ["scala", "java"])
def test_future_tagged_fields_are_skipped_by_size(tmp_path, capsys, semantics):
    """Both loaders read the value and ignore the tags; Kafka 4.1's tag 0 (TopicId) is 16 bytes, so a
    5-byte tag 0 is not a TopicId."""
    value = _future_offset_value()
    assert [t for t, _ in decode_offset_commit_value(value).unknown_tagged_fields] == [0, 1]
    assert [t for t, _ in decode_offset_commit_value(value, known_tags=False).unknown_tagged_fields] == [0, 1]
    code, doc = reload(capsys, Segment().plain((okey("foo", 0), value)).write(tmp_path), semantics)
    assert code == 0 and doc["stats"]["errors"] == []
    [o] = group_of(doc)["offsets"]
    assert (o["offset"], o["leader_epoch"], o["metadata"], o["commit_timestamp"]) == (
        1000,
        100,
        "metadata",
        2000,
    )


def test_topic_id_tag_is_known_to_java_only():
    """OffsetCommitValue.json: 4.1 adds TopicId as tag 0 (KAFKA-19141); 3.9 has no tagged field."""
    tid = bytes(range(1, 17))
    value = struct.pack(">h", 4) + struct.pack(">qi", 5, 0) + b"\x01" + struct.pack(">q", T0)
    value += bytes([1, 0, 16]) + tid
    assert decode_offset_commit_value(value).topic_id.bytes == tid
    scala = decode_offset_commit_value(value, known_tags=False)
    assert scala.topic_id is None and scala.unknown_tagged_fields == ((0, tid),)


def test_known_tag_of_the_wrong_size_is_kept_as_unknown_in_table_values():
    """The same rule in the table-driven codec: ConsumerGroupMetadataValue's tag 0 is an int64
    (metadataHash, 4.1); a 2-byte tag 0 is skipped, not misread."""
    value = struct.pack(">hi", 0, 10) + bytes([1, 0, 2]) + b"\xab\xcd"
    decoded = decode_value(3, value)
    assert decoded.fields["epoch"] == 10 and decoded.fields["metadataHash"] == 0
    assert decoded.fields["_unknownTaggedFields"] == ((0, b"\xab\xcd"),)


# -- 3. rebalance timeout -1 -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "semantics", "expected"),
    [
        (0, "scala", 10000),  # readGroupMessageValue: v0 has none, the session timeout is used
        (3, "scala", -1),  # ... and v1+ keep what is stored, -1 included
        (0, "java", 10000),
        (3, "java", 10000),  # GroupMetadataManager.replay (4.x): -1 becomes the session timeout
    ],
)
def test_rebalance_timeout_minus_one_follows_the_coordinator(tmp_path, capsys, version, semantics, expected):
    seg = Segment().plain((encode_key(GroupMetadataKey(GROUP)), gval(version=version, rebalance_timeout=-1)))
    code, doc = reload(capsys, seg.write(tmp_path), semantics)
    assert code == 0
    [member] = group_of(doc)["members"]
    assert member["rebalance_timeout_ms"] == expected


# -- 5. Java: groups created by (transactional) offset commits ----------------------------------------


def test_aborted_transaction_leaves_a_group_in_java_only(tmp_path, capsys):
    """OffsetMetadataManager.replay (4.x) creates the simple classic group for any offset-commit value,
    transactional or not; GroupMetadataManagerTest.testDoNotLoadAbortedTransactionalOffsetCommits (3.9):
    the Scala loader has no group after the abort."""
    aborted = {("foo", 0): 23, ("foo", 1): 455, ("bar", 0): 8992}
    seg = Segment().txn(1000, *[(okey(t, p), oval(o)) for (t, p), o in aborted.items()])
    seg.marker(1000, commit=False)
    path = seg.write(tmp_path)
    _, scala = reload(capsys, path, "scala")
    assert group_of(scala) is None
    _, java = reload(capsys, path, "java")
    g = group_of(java)
    assert (g["state"], g["protocol_type"], g["offsets"], g["pending_offsets"]) == ("Empty", None, [], [])


def test_java_group_outlives_its_deleted_offsets_until_a_group_tombstone(tmp_path, capsys):
    """OffsetMetadataManager.replay: an offset tombstone removes the offset, not the group; only a
    GroupMetadata tombstone does (GroupMetadataManager.replay)."""
    gone = "fidelity-gone"
    seg = Segment().plain(
        (okey("foo", 0), oval(1)),
        (okey("foo", 0), None),
        (okey("foo", 0, gone), oval(1)),
        (okey("foo", 0, gone), None),
        (encode_key(GroupMetadataKey(gone)), None),
    )
    _, doc = reload(capsys, seg.write(tmp_path), "java")
    assert group_of(doc)["offsets"] == [] and group_of(doc, gone) is None
    _, doc = reload(capsys, tmp_path, "scala")
    assert doc["groups"] == []
