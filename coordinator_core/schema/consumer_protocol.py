"""The embedded consumer protocol (``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``).

Parsed leniently, like ``ConsumerProtocol.deserialize*``: a negative version is unsupported; a version newer
than we know is read with the newest layout (new versions may only append fields). When the bytes end
before the fields their version promises (e.g. a v1 subscription without owned partitions) the fields that
were read are still returned, with ``partial=True``; Kafka's ``computeSubscribedTopics`` only needs the
topics. Bytes that do not even yield the first field give ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import codec
from .messages import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, MessageSchema
from .types import Buf, CorruptData, read_int16, write_int16

HIGHEST_SUBSCRIPTION_VERSION = CONSUMER_PROTOCOL_SUBSCRIPTION.valid_versions[1]
HIGHEST_ASSIGNMENT_VERSION = CONSUMER_PROTOCOL_ASSIGNMENT.valid_versions[1]


@dataclass(frozen=True, slots=True)
class Subscription:
    """A member's subscription. ``owned_partitions`` maps topic -> partitions (v1+)."""

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


def _by_topic(items: list[dict]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for item in items:
        out.setdefault(item["topic"], []).extend(item["partitions"])
    return out


def _read_version(data: Buf) -> int | None:
    try:
        version = read_int16(data, 0)[0]
    except CorruptData:
        return None
    return version if version >= 0 else None


def _lenient_body(schema: MessageSchema, highest: int, data: Buf) -> tuple[int, int, dict, int] | None:
    """``(version, layout, fields, fields read)`` of a consumer-protocol body; None when unreadable.

    A version above the highest known is read with the highest layout (as Kafka's ConsumerProtocol does:
    newer versions only append fields)."""
    version = _read_version(data)
    if version is None:
        return None
    layout = min(version, highest)
    d, _, read = codec.decode_body_lenient(schema, layout, data, 2)
    return None if read == 0 else (version, layout, d, read)


def decode_subscription(data: Buf) -> Subscription | None:
    """Lenient decode; ``None`` when the version is negative or the topics cannot be read."""
    body = _lenient_body(CONSUMER_PROTOCOL_SUBSCRIPTION, HIGHEST_SUBSCRIPTION_VERSION, data)
    if body is None:
        return None
    version, layout, d, read = body
    expected = sum(1 for f in CONSUMER_PROTOCOL_SUBSCRIPTION.fields if f.present(layout))
    return Subscription(
        version=version,
        topics=tuple(d["topics"]),
        user_data=d["userData"],
        owned_partitions=_by_topic(d.get("ownedPartitions", [])),
        generation_id=d.get("generationId", -1),
        rack_id=d.get("rackId"),
        partial=read < expected,
    )


def decode_assignment(data: Buf) -> Assignment | None:
    """Lenient decode; ``None`` when the version is negative or the partitions cannot be read."""
    body = _lenient_body(CONSUMER_PROTOCOL_ASSIGNMENT, HIGHEST_ASSIGNMENT_VERSION, data)
    if body is None:
        return None
    version, _, d, read = body
    return Assignment(
        version=version,
        partitions=_by_topic(d["assignedPartitions"]),
        user_data=d["userData"],
        partial=read < 2,
    )


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
