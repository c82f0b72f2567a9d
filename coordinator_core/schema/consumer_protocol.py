"""The embedded consumer protocol (``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``).

Read as Kafka reads it (``ConsumerProtocol.deserialize*``): an int16 version, then the fields of that
version (a version newer than we know is read with the newest layout: new versions only append fields;
bytes after the fields are never read). Clients do not all write the standard layout of the version they
declare (a v1 header over a v0 body, trailing bytes), so :func:`read_embedded` also finds the layout the
bytes do follow, and says how Kafka's coordinators fare on them:

- ``coordinator`` (subscriptions only): what every classic group load reads, for each member of a
  ``consumer`` group: the version, then the v0 fields, whatever the version
  (``GroupMetadata.computeSubscribedTopics`` in 3.x, ``ClassicGroup.computeSubscribedTopics`` in 4.x);
- ``upgrade``: what Kafka 4.x reads to turn a classic group into a consumer group (the declared version's
  fields; an empty assignment is taken as none; assignment user data refuses the upgrade:
  ``ConsumerGroup.fromClassicGroup``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import codec
from .java_reader import RuntimeFailure, SchemaFailure, read_struct
from .messages import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, MessageSchema
from .types import Buf, write_int16

HIGHEST_SUBSCRIPTION_VERSION = CONSUMER_PROTOCOL_SUBSCRIPTION.valid_versions[1]
HIGHEST_ASSIGNMENT_VERSION = CONSUMER_PROTOCOL_ASSIGNMENT.valid_versions[1]
SCHEMAS = {"subscription": CONSUMER_PROTOCOL_SUBSCRIPTION, "assignment": CONSUMER_PROTOCOL_ASSIGNMENT}


@dataclass(frozen=True, slots=True)
class Subscription:
    """A member's subscription. ``owned_partitions`` maps topic -> partitions (v1+).

    ``partial``: the bytes do not follow the standard layout of their version (see :func:`read_embedded`);
    the fields are those of the layout they do follow."""

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: dict[str, list[int]] = field(default_factory=dict, hash=False)
    generation_id: int = -1
    rack_id: str | None = None
    partial: bool = False


@dataclass(frozen=True, slots=True)
class Assignment:
    """A member's assignment: topic -> partitions, plus the assignor's user data."""

    version: int
    partitions: dict[str, list[int]] = field(default_factory=dict, hash=False)
    user_data: bytes | None = None
    partial: bool = False


@dataclass(frozen=True, slots=True)
class Read:
    """How one read of the bytes went: ``fields`` and ``end``, or why it failed and whether the failure is
    a ``SchemaException`` (caught by the coordinator) or a ``RuntimeException`` (``fatal``: not caught)."""

    fields: dict[str, Any] | None = None
    end: int = 0
    failure: str | None = None
    fatal: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None


@dataclass(frozen=True, slots=True)
class EmbeddedReading:
    """One member's consumer-protocol bytes: their layout and what Kafka's coordinators read from them."""

    role: str  # subscription | assignment
    size: int
    version: int | None  # the declared version; None when there are fewer than 2 bytes
    seen: int | None  # the version whose layout the bytes follow; None when not even v0's fits
    trailing: int  # bytes after the layout seen
    fields: dict[str, Any]  # the fields of the layout seen (empty when none fits)
    coordinator: Read  # subscriptions: the read of every load (v0 fields); assignments: not read (ok)
    upgrade: Read  # the read of Kafka 4.x's classic-to-consumer group upgrade

    @property
    def highest(self) -> int:
        return SCHEMAS[self.role].valid_versions[1]

    @property
    def standard(self) -> bool:
        """The bytes are exactly the fields of their declared version (a newer version may append)."""
        v = self.version
        if v is None or v < 0 or self.seen != min(v, self.highest):
            return False
        return self.trailing == 0 or v > self.highest

    def layout_text(self) -> str:
        """The layout seen, in words: ``v1 header over the v0 layout``, ``v0 layout and 3 trailing bytes``."""
        if self.version is None:
            return f"{self.size} byte(s), too short for the version"
        if self.seen is None:
            return f"v{self.version} header over no layout Kafka reads ({self.upgrade.failure})"
        text = (
            f"v{self.version} layout"
            if self.seen == min(self.version, self.highest)
            else (f"v{self.version} header over the v{self.seen} layout")
        )
        if self.trailing:
            text += f" and {self.trailing} trailing byte(s)"
        return text


def _read(schema: MessageSchema, layout: int, data: Buf) -> Read:
    try:
        fields, end = read_struct(schema.fields, layout, memoryview(data), 2)
    except SchemaFailure as exc:
        return Read(failure=str(exc))
    except RuntimeFailure as exc:
        return Read(failure=str(exc), fatal=True)
    return Read(fields, end)


def _seen(reads: dict[int, Read], declared: int | None, size: int, newer: bool) -> int | None:
    """The layout the bytes follow: the declared one when it fits exactly (or the version is newer than
    we know), else the highest that fits exactly, else the declared one with trailing bytes, else the
    highest that reads at all."""
    fits = [v for v, r in reads.items() if r.ok]
    exact = [v for v in fits if reads[v].end == size]
    if declared in fits and (declared in exact or newer):
        return declared
    if exact:
        return max(exact)
    if declared in fits:
        return declared
    return max(fits) if fits else None


def _upgrade(role: str, version: int | None, declared: Read | None, size: int) -> Read:
    """``ConsumerGroup.fromClassicGroup`` (Kafka 4.x): the declared version's read, and its own rules."""
    if role == "assignment" and size == 0:
        return Read({}, 0)  # a member that never synced: taken as no partitions
    if version is None:
        return Read(failure="buffer underflow reading the version")
    if declared is None:
        return Read(failure=f"unsupported {role} version {version}")
    if role == "assignment" and declared.ok and declared.fields and declared.fields.get("userData"):
        return Read(failure="user data from a custom assignor would be lost")
    return declared


def coordinator_read(data: Buf) -> Read:
    """What every load reads of a subscription: the version, then the v0 fields whatever the version
    (``computeSubscribedTopics``)."""
    if len(data) < 2:
        return Read(failure="buffer underflow reading the version")
    return _read(CONSUMER_PROTOCOL_SUBSCRIPTION, 0, data)


def read_embedded(role: str, data: Buf) -> EmbeddedReading:
    """Read one member's ``subscription`` or ``assignment`` bytes every way Kafka does (see the module)."""
    schema = SCHEMAS[role]
    highest = schema.valid_versions[1]
    size = len(data)
    version = int.from_bytes(bytes(data[:2]), "big", signed=True) if size >= 2 else None
    reads = {v: _read(schema, v, data) for v in range(highest + 1)} if version is not None else {}
    declared = min(version, highest) if version is not None and version >= 0 else None
    seen = _seen(reads, declared, size, version is not None and version > highest)
    if role == "subscription":
        coordinator = reads[0] if version is not None else coordinator_read(data)
    else:
        coordinator = Read({}, size)  # never read when loading
    chosen = reads.get(seen) if seen is not None else None
    return EmbeddedReading(
        role=role,
        size=size,
        version=version,
        seen=seen,
        trailing=size - chosen.end if chosen is not None else 0,
        fields=(chosen.fields or {}) if chosen is not None else {},
        coordinator=coordinator,
        upgrade=_upgrade(role, version, reads.get(declared) if declared is not None else None, size),
    )


def _by_topic(items: list[dict]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for item in items or ():
        out.setdefault(item["topic"], []).extend(item["partitions"])
    return out


def subscription_from(r: EmbeddedReading) -> Subscription | None:
    """The subscription as read at the layout seen; None when no layout fits."""
    if r.seen is None or r.version is None:
        return None
    d = r.fields
    return Subscription(
        version=r.version,
        topics=tuple(d["topics"]),
        user_data=d["userData"],
        owned_partitions=_by_topic(d.get("ownedPartitions", [])),
        generation_id=d.get("generationId", -1),
        rack_id=d.get("rackId"),
        partial=not r.standard,
    )


def assignment_from(r: EmbeddedReading) -> Assignment | None:
    """The assignment as read at the layout seen; None when no layout fits."""
    if r.seen is None or r.version is None:
        return None
    return Assignment(
        version=r.version,
        partitions=_by_topic(r.fields["assignedPartitions"]),
        user_data=r.fields["userData"],
        partial=not r.standard,
    )


def decode_subscription(data: Buf) -> Subscription | None:
    """The subscription at the layout its bytes follow; ``None`` when no layout fits."""
    return subscription_from(read_embedded("subscription", data))


def decode_assignment(data: Buf) -> Assignment | None:
    """The assignment at the layout its bytes follow; ``None`` when no layout fits."""
    return assignment_from(read_embedded("assignment", data))


def subscription_fields(sub: Subscription) -> dict:
    return {
        "topics": list(sub.topics),
        "userData": sub.user_data,
        "ownedPartitions": [{"topic": t, "partitions": list(p)} for t, p in sub.owned_partitions.items()],
        "generationId": sub.generation_id,
        "rackId": sub.rack_id,
    }


def assignment_fields(a: Assignment) -> dict:
    return {
        "assignedPartitions": [{"topic": t, "partitions": list(p)} for t, p in a.partitions.items()],
        "userData": a.user_data,
    }


def encode_subscription(sub: Subscription) -> bytes:
    """``ConsumerProtocol.serializeSubscription`` at ``sub.version`` (0..3)."""
    out = bytearray()
    write_int16(out, sub.version)
    out += codec.encode_body(CONSUMER_PROTOCOL_SUBSCRIPTION, sub.version, _present(sub))
    return bytes(out)


def _present(sub: Subscription) -> dict:
    d = subscription_fields(sub)
    if sub.version < 1:
        d.pop("ownedPartitions")
    if sub.version < 2:
        d.pop("generationId")
    if sub.version < 3:
        d.pop("rackId")
    return d


def encode_assignment(a: Assignment) -> bytes:
    """``ConsumerProtocol.serializeAssignment`` at ``a.version`` (0..3)."""
    out = bytearray()
    write_int16(out, a.version)
    out += codec.encode_body(CONSUMER_PROTOCOL_ASSIGNMENT, a.version, assignment_fields(a))
    return bytes(out)
