"""The validation pass: corrupt records that a later record overwrites are reported (the broker's load
would have failed on them), on mutated copies of a real partition."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.records import build_record_batch
from offsetops.coordinator_core.schema import decode_group_metadata_value
from offsetops.coordinator_core.value_check import offset_commit_value_ok, value_error

from tests.support.mutation import copy_partition, patch, real_partition, records, segments

PART = "DanielMorales9__kafkafun/__consumer_offsets-39"


@pytest.fixture
def seg(tmp_path: Path) -> Path:
    src = real_partition(PART)
    if not src.is_dir():
        pytest.skip("real Kafka fixtures not found")
    return segments(copy_partition(src, tmp_path / "logs"))[0]


def _superseded(seg: Path, rtype: int):
    located = records(seg)
    seen = Counter(r.key for r in located)
    return next(r for r in located if r.key[:2] == bytes((0, rtype)) and r.value and seen[r.key] > 1)


def _cache(seg: Path):
    [cache] = load_log_dir(seg.parent.parent)
    return cache


def _offsets(cache) -> dict:
    return {g: dict(c.offsets) for g, c in cache.groups.items()}


def test_unknown_version_of_an_overwritten_commit_is_reported(seg: Path) -> None:
    clean = _cache(seg)
    r = _superseded(seg, 1)
    patch(seg, r.value_at, b"\x00\x09", crc_of=r.batch_position)
    cache = _cache(seg)
    assert [(e.kind, e.offset, e.position) for e in cache.stats.errors] == [
        ("unknown_value_version", r.offset, r.batch_position)
    ]
    assert _offsets(cache) == _offsets(clean)  # the later commit still wins


def test_corrupt_overwritten_commit_is_reported(seg: Path) -> None:
    r = _superseded(seg, 1)
    version = r.value[1]
    at = r.value_at + (14 if version == 3 else 10)  # the metadata string length
    patch(seg, at, b"\x7f\xff", crc_of=r.batch_position)
    errors = _cache(seg).stats.errors
    assert [(e.kind, e.offset) for e in errors] == [("corrupt_value", r.offset)]
    assert errors[0].reason.startswith("offset commit value:")


def test_corrupt_overwritten_group_metadata_is_reported(seg: Path) -> None:
    clean = _cache(seg)
    r = _superseded(seg, 2)
    patch(seg, r.value_at + 2, b"\x7f\xff", crc_of=r.batch_position)  # protocol type length
    cache = _cache(seg)
    assert [(e.kind, e.offset) for e in cache.stats.errors] == [("corrupt_value", r.offset)]
    assert cache.groups.keys() == clean.groups.keys()


def test_tombstone_with_a_corrupt_key_is_reported(seg: Path) -> None:
    last = _cache(seg).stats.last_offset
    bad_key = b"\x00\x01\x00\x30short"  # group length 48, 5 bytes follow
    with open(seg, "ab") as f:
        f.write(build_record_batch([(bad_key, None, 0)], base_offset=last + 1))
    assert [(e.kind, e.offset) for e in _cache(seg).stats.errors] == [("corrupt_key", last + 1)]


def _group_with_members(tmp_path: Path):
    src = real_partition("William0423__kafka/__consumer_offsets-28")
    if not src.is_dir():
        pytest.skip("real Kafka fixtures not found")
    seg = segments(copy_partition(src, tmp_path / "logs"))[0]
    last_by_key = {r.key: r for r in records(seg)}
    r = next(
        x
        for x in last_by_key.values()
        if x.key[:2] == b"\x00\x02" and x.value and decode_group_metadata_value(x.value).members
    )
    sub = decode_group_metadata_value(r.value).members[0].subscription
    return seg, r, r.value_at + r.value.find(sub)


def test_negative_subscription_version_is_a_notice_and_keeps_the_topics(tmp_path: Path) -> None:
    seg, r, at = _group_with_members(tmp_path)
    clean = next(g for g in _cache(seg).groups.values() if g.members).members[0].subscribed_topics
    patch(seg, at, b"\xff\xff", crc_of=r.batch_position)  # the load reads v0 fields whatever the version
    cache = _cache(seg)
    found = [(e.kind, e.offset, e.is_notice) for e in cache.stats.errors]
    assert found == [("embedded_layout", r.offset, True)]
    assert "v-1 header over the v0 layout" in cache.stats.errors[0].reason
    assert "would not upgrade" in cache.stats.errors[0].reason  # 4.x: unsupported subscription version
    member = next(g for g in cache.groups.values() if g.members).members[0]
    assert member.subscribed_topics == clean and clean


def test_subscription_the_load_fails_on_is_one_error_and_the_group_stays(tmp_path: Path) -> None:
    seg, r, at = _group_with_members(tmp_path)
    patch(seg, at + 2, b"\x7f\xff\xff\xff", crc_of=r.batch_position)  # topics: a collection past the end
    cache = _cache(seg)
    assert [(e.kind, e.offset) for e in cache.stats.errors] == [("corrupt_embedded", r.offset)]
    assert "fails to load the partition" in cache.stats.errors[0].reason
    member = next(g for g in cache.groups.values() if g.members).members[0]
    assert member.subscribed_topics is None  # unknown, not invented
    assert member.assignment  # the rest of the group is read


def test_cheap_check_agrees_with_the_decoder() -> None:
    for value in (b"", b"\x00", b"\x00\x03" + bytes(30), b"\x00\x09" + bytes(30), b"\x00\x01" + bytes(12)):
        assert offset_commit_value_ok(value) == (value_error(1, value) is None)


def test_overwritten_subscription_the_load_fails_on_is_reported(seg: Path) -> None:
    clean = _cache(seg)
    r = next(
        x
        for x in records(seg)
        if x.key[:2] == b"\x00\x02"
        and x.value
        and decode_group_metadata_value(x.value).members
        and x.offset != clean.groups[next(iter(clean.groups))].metadata_record_offset
    )
    sub = decode_group_metadata_value(r.value).members[0].subscription
    patch(seg, r.value_at + r.value.find(sub) + 2, b"\xff\xff\xff\xfe", crc_of=r.batch_position)
    cache = _cache(seg)
    assert [(e.kind, e.offset) for e in cache.stats.errors] == [("corrupt_embedded", r.offset)]
    assert "serialized as null" in cache.stats.errors[0].reason  # topics: a negative count
    assert {g: [m.subscribed_topics for m in c.members] for g, c in cache.groups.items()} == {
        g: [m.subscribed_topics for m in c.members] for g, c in clean.groups.items()
    }
