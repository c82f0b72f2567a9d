"""The consumer protocol's common case read directly gives what the full reading gives, for members
whose bytes are standard and for every damaged variant (where it hands over to the full reading)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.embedded import read_member, read_member_fully
from offsetops.coordinator_core.schema.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from offsetops.coordinator_core.schema.standard_protocol import standard_partitions, standard_topics
from offsetops.coordinator_core.schema.values import MemberMetadata

from tests.coordinator_core.schema.mutations import damaged

topics = st.text(max_size=8)
partitions = st.dictionaries(topics, st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4), max_size=3)
user_data = st.one_of(st.none(), st.binary(max_size=6))


@st.composite
def subscriptions(draw: st.DrawFn) -> bytes:
    version = draw(st.integers(0, 3))
    return encode_subscription(
        Subscription(
            version=version,
            topics=tuple(draw(st.lists(topics, max_size=4))),
            user_data=draw(user_data),
            owned_partitions=draw(partitions) if version >= 1 else {},
            generation_id=draw(st.integers(-(2**31), 2**31 - 1)) if version >= 2 else -1,
            rack_id=draw(st.one_of(st.none(), topics)) if version >= 3 else None,
        )
    )


@st.composite
def assignments(draw: st.DrawFn) -> bytes:
    return encode_assignment(
        Assignment(version=draw(st.integers(0, 3)), partitions=draw(partitions), user_data=draw(user_data))
    )


def _member(subscription: bytes, assignment: bytes) -> MemberMetadata:
    return MemberMetadata("m-1", None, "client", "/10.0.0.1", 30_000, 10_000, subscription, assignment)


@settings(max_examples=500, deadline=None)
@given(
    subscriptions().flatmap(lambda b: st.tuples(st.just(b), damaged(b))),
    assignments().flatmap(lambda b: st.tuples(st.just(b), damaged(b))),
    st.sampled_from(["range", None]),
)
def test_the_common_case_reads_as_the_full_reading(sub, asg, protocol) -> None:
    member = _member(sub[1], asg[1])
    assert read_member("g", protocol, member) == read_member_fully("g", protocol, member)
    if sub[1] == sub[0]:
        assert standard_topics(sub[1]) is not None  # a standard encoding is read directly
    if asg[1] == asg[0]:
        assert standard_partitions(asg[1]) is not None


def test_no_assignment_bytes_is_no_partitions_and_a_newer_version_goes_to_the_full_reading() -> None:
    assert standard_partitions(b"") == {}
    newer = b"\x00\x04" + encode_subscription(Subscription(version=3, topics=("t",)))[2:]
    assert standard_topics(newer) is None
    member = _member(newer, b"")
    assert read_member("g", "range", member) == read_member_fully("g", "range", member)
    assert read_member("g", "range", member).topics == ["t"]
