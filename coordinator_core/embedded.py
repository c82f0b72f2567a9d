"""The consumer-protocol bytes of classic group members, judged as Kafka's coordinators judge them.

Every load decodes each GroupMetadata value and, for a ``consumer`` group with a protocol, reads each
member's subscription up to its topics with the v0 layout whatever its version
(``GroupMetadata.computeSubscribedTopics`` in 3.x, ``ClassicGroup.computeSubscribedTopics`` in 4.x).
Assignments are never read when loading. So:

- an error (``corrupt_embedded``, ``fatal``) where that read throws what the coordinator does not catch:
  the load of the whole partition fails on the record, even a superseded one (reported by the
  validation pass, ``value_check``);
- a notice (``embedded_layout``) where it throws a ``SchemaException``: the coordinator logs "Failed to
  parse Consumer Protocol" and loads the group without its subscribed topics (reported for the
  surviving value only: it is the state the coordinator keeps);
- a notice (``embedded_layout``) where the bytes do not follow the standard layout of their declared
  version (a v1 header over a v0 body, trailing bytes, an unreadable assignment): Kafka loads them as
  usual; the notice names the layout seen and whether Kafka 4.x could still upgrade the group to a
  consumer group (``ConsumerGroup.fromClassicGroup``, which reads the declared version).
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetops.coordinator_core.schema import GroupMetadataValue, MemberMetadata
from offsetops.coordinator_core.schema.consumer_protocol import (
    EmbeddedReading,
    assignment_from,
    coordinator_read,
    load_read_fits,
    read_embedded,
)
from offsetops.coordinator_core.schema.standard_protocol import standard_partitions, standard_topics

CORRUPT = "corrupt_embedded"
LAYOUT = "embedded_layout"


@dataclass(frozen=True, slots=True)
class EmbeddedFinding:
    """One problem with a member's bytes; ``fatal``: Kafka's load of the partition fails on it."""

    kind: str
    reason: str
    fatal: bool = False


@dataclass(frozen=True, slots=True)
class MemberProtocol:
    """What a member's bytes give: the topics the coordinator reads, the partitions, and the findings."""

    topics: list[str] | None  # None: the coordinator cannot read them
    partitions: dict[str, list[int]] | None  # None: no layout fits
    findings: tuple[EmbeddedFinding, ...]


def _who(group_id: str | None, member_id: str) -> str:
    return (f"group {group_id!r} " if group_id is not None else "") + f"member {member_id!r}"


def _coordinator_error(who: str, r: EmbeddedReading) -> EmbeddedFinding:
    failure = r.coordinator.failure
    head = f"{who}: consumer-protocol subscription bytes ({r.size} bytes) cannot be read up to their topics"
    if r.coordinator.fatal:
        return EmbeddedFinding(
            CORRUPT,
            f"{head} ({failure}): not a SchemaException, so Kafka's coordinator fails to load the "
            "partition on this record (computeSubscribedTopics); topics kept as unknown",
            fatal=True,
        )
    return EmbeddedFinding(
        LAYOUT,
        f"{head} ({failure}): Kafka's coordinator logs 'Failed to parse Consumer Protocol' and does not know "
        "the group's subscribed topics, so it expires none of its offsets while it is Stable; topics kept "
        "as unknown",
    )


def _layout_notice(who: str, r: EmbeddedReading) -> EmbeddedFinding:
    if r.seen is None:
        read = "the coordinator never reads assignments when it loads; this member's partitions are unknown"
    elif r.role == "subscription":
        read = "Kafka's coordinators read its topics as usual"
    else:
        read = "the coordinator never reads assignments when it loads"
    text = f"{who}: consumer-protocol {r.role} ({r.size} bytes) is not the standard layout of its version: "
    text += f"{r.layout_text()}; {read}"
    if not r.upgrade.ok:
        text += (
            "; Kafka 4.x would not upgrade this group to a consumer group (online migration) while these "
            f"bytes stand ({r.upgrade.failure})"
        )
    return EmbeddedFinding(LAYOUT, text)


def read_member(group_id: str | None, protocol: str | None, member: MemberMetadata) -> MemberProtocol:
    """A ``consumer`` group member's subscription and assignment (``protocol``: the group's protocol name;
    without one the coordinator reads no subscription)."""
    return _standard_member(member) or read_member_fully(group_id, protocol, member)


def _standard_member(member: MemberMetadata) -> MemberProtocol | None:
    """The common case, read directly: both byte strings exactly their declared version's fields, which
    every reading takes alike and which leave no finding; None for anything else."""
    topics = standard_topics(member.subscription)
    if topics is None:
        return None
    partitions = standard_partitions(member.assignment)
    if partitions is None:
        return None
    return MemberProtocol(sorted(topics), partitions, ())


def read_member_fully(group_id: str | None, protocol: str | None, member: MemberMetadata) -> MemberProtocol:
    """:func:`read_member` through every layout Kafka may read (the reference the common case matches)."""
    who = _who(group_id, member.member_id)
    sub = read_embedded("subscription", member.subscription)
    asg = read_embedded("assignment", member.assignment)
    findings: list[EmbeddedFinding] = []
    topics: list[str] | None = None
    if not sub.coordinator.ok:
        if protocol is not None:
            findings.append(_coordinator_error(who, sub))
    else:
        topics = sorted((sub.coordinator.fields or {})["topics"])
        if not sub.standard:
            findings.append(_layout_notice(who, sub))
    if asg.size and not asg.standard:
        findings.append(_layout_notice(who, asg))
    parsed = assignment_from(asg)
    partitions = {t: sorted(p) for t, p in parsed.partitions.items()} if parsed is not None else None
    if not asg.size:
        partitions = {}  # a member the leader left out: the coordinator stores empty bytes for it
    return MemberProtocol(topics, partitions, tuple(findings))


def fatal_finding(value: GroupMetadataValue) -> EmbeddedFinding | None:
    """The first member whose subscription fails Kafka's load of the whole partition, if any."""
    if value.protocol_type != "consumer" or value.protocol is None:
        return None
    for m in value.members:
        if not load_read_fits(m.subscription) and coordinator_read(m.subscription).fatal:
            return _coordinator_error(_who(None, m.member_id), read_embedded("subscription", m.subscription))
    return None


def group_findings(group_id: str | None, value: GroupMetadataValue) -> list[EmbeddedFinding]:
    """Every finding on the members of one GroupMetadata value (none unless its protocol type is consumer)."""
    if value.protocol_type != "consumer":
        return []
    return [f for m in value.members for f in read_member(group_id, value.protocol, m).findings]
