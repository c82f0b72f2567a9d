"""The embedded consumer protocol's common case, read directly: bytes that are exactly the fields of the
version they declare (``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` v0-v3).

Nearly every member of a ``consumer`` group is written so by the Java client. For those bytes every way
:func:`~.consumer_protocol.read_embedded` reads gives the same fields, and the layout is standard, so a
load needs only the subscribed topics and the assigned partitions. Anything else (another version, a
null where Kafka allows none, a truncated field, trailing bytes) returns None, and the full reading
says how each coordinator fares on it.
"""

from __future__ import annotations

import struct

from .types import Buf

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
#: The highest version of both messages this reader knows (``ConsumerProtocol*`` v3).
HIGHEST = 3


class _Off(Exception):
    """The bytes leave the standard layout: the full reading takes over."""


def _int32(data: bytes, pos: int) -> int:
    if pos + 4 > len(data):
        raise _Off
    return _INT32.unpack_from(data, pos)[0]


def _count(data: bytes, pos: int) -> int:
    """A non-nullable array's int32 count, checked against the bytes left as Kafka checks it."""
    n = _int32(data, pos)
    if n < 0 or n > len(data) - pos - 4:
        raise _Off
    return n


def _string(data: bytes, pos: int) -> tuple[str, int]:
    """A non-nullable string."""
    if pos + 2 > len(data):
        raise _Off
    n = _INT16.unpack_from(data, pos)[0]
    pos += 2
    if n < 0 or n > len(data) - pos:
        raise _Off
    return data[pos : pos + n].decode("utf-8", "surrogateescape"), pos + n


def _skip_nullable_string(data: bytes, pos: int) -> int:
    """A nullable string (the rack id): any negative length is a null."""
    if pos + 2 > len(data):
        raise _Off
    n = _INT16.unpack_from(data, pos)[0]
    pos += 2
    if n > len(data) - pos:
        raise _Off
    return pos + max(n, 0)


def _skip_bytes(data: bytes, pos: int) -> int:
    """A nullable ``bytes`` field (user data): any negative length is a null."""
    n = _int32(data, pos)
    pos += 4
    if n > len(data) - pos:
        raise _Off
    return pos + max(n, 0)


def _topic_partitions(data: bytes, pos: int, into: dict[str, list[int]]) -> int:
    """An array of (topic, partitions) structs; the partitions of a topic named twice are joined."""
    count = _count(data, pos)
    pos += 4
    for _ in range(count):
        topic, pos = _string(data, pos)
        n = _count(data, pos)
        pos += 4
        if 4 * n > len(data) - pos:
            raise _Off
        into.setdefault(topic, []).extend(struct.unpack_from(f">{n}i", data, pos))
        pos += 4 * n
    return pos


def _version(data: bytes) -> int:
    if len(data) < 2 or data[0] != 0 or data[1] > HIGHEST:
        raise _Off
    return data[1]


def standard_topics(data: Buf) -> list[str] | None:
    """The topics of a subscription that is exactly its declared version's fields, or None."""
    raw = data if isinstance(data, bytes) else bytes(data)
    try:
        version = _version(raw)
        topics: list[str] = []
        pos = 2
        n = _count(raw, pos)
        pos += 4
        for _ in range(n):
            topic, pos = _string(raw, pos)
            topics.append(topic)
        pos = _skip_bytes(raw, pos)
        if version >= 1:
            pos = _topic_partitions(raw, pos, {})
        if version >= 2:
            _int32(raw, pos)
            pos += 4
        if version >= 3:
            pos = _skip_nullable_string(raw, pos)
    except _Off:
        return None
    return topics if pos == len(raw) else None


def standard_partitions(data: Buf) -> dict[str, list[int]] | None:
    """The assigned partitions, sorted per topic, of an assignment that is exactly its declared version's
    fields, ``{}`` for no bytes at all (a member the leader left out), or None."""
    raw = data if isinstance(data, bytes) else bytes(data)
    if not raw:
        return {}
    out: dict[str, list[int]] = {}
    try:
        _version(raw)
        pos = _skip_bytes(raw, _topic_partitions(raw, 2, out))
    except _Off:
        return None
    if pos != len(raw):
        return None
    return {topic: sorted(parts) for topic, parts in out.items()}
