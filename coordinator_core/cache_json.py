"""The coordinator cache as compact JSON text, in chunks, without a Python dict per committed offset.

The text is exactly ``json.dumps(cache.to_json(), separators=(",", ":"), allow_nan=False)``: the
document's shape stays in :mod:`offsetops.coordinator_core.cache` (``to_json``, ``json_with_groups``,
``json_with_offsets``); everything but the offsets goes through the json module's C encoder, and the
offsets, the bulk of a large cache, are formatted from one template, a few thousand to a chunk.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from json.encoder import encode_basestring_ascii
from typing import Any

from offsetops.coordinator_core.cache import (
    CoordinatorCache,
    GroupMetadata,
    OffsetAndMetadata,
    TopicPartition,
)

#: ``json.dumps(doc, separators=(",", ":"), allow_nan=False)`` with the C encoder (``json.dump`` streams
#: through the pure-Python one, four times slower).
encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode

#: ``OffsetAndMetadata.to_json(topic, partition)``: the strings pre-encoded, a nullable number as ``null``.
_OFFSET = (
    '{"topic":%s,"partition":%d,"offset":%d,"leader_epoch":%s,"metadata":%s,'
    '"commit_timestamp":%d,"expire_timestamp":%s}'
)
#: Offsets per chunk: large enough that the join dominates, small enough that no chunk is huge.
_CHUNK = 4096


def object_chunks(doc: dict[str, Any], key: str, value: Iterable[str]) -> Iterator[str]:
    """The JSON text of ``doc`` with ``value``, JSON text in chunks, as the value of ``doc[key]``."""
    keys = list(doc)
    at = keys.index(key)
    head = encode({k: doc[k] for k in keys[:at]})
    yield ("{" if at == 0 else head[:-1] + ",") + encode(key) + ":"
    yield from value
    tail = encode({k: doc[k] for k in keys[at + 1 :]})
    yield "}" if at == len(keys) - 1 else "," + tail[1:]


def array_chunks(items: Iterable[Iterable[str]]) -> Iterator[str]:
    """A JSON array of elements each given as JSON text in chunks."""
    yield "["
    for n, chunks in enumerate(items):
        if n:
            yield ","
        yield from chunks
    yield "]"


def offsets_chunks(offsets: list[tuple[TopicPartition, OffsetAndMetadata]]) -> Iterator[str]:
    """``[o.to_json(t, p) for (t, p), o in offsets]`` as JSON text, ``_CHUNK`` offsets at a time."""
    text = encode_basestring_ascii
    topic: str | None = None
    topic_text = ""
    yield "["
    for start in range(0, len(offsets), _CHUNK):
        rows = []
        for (t, p), o in offsets[start : start + _CHUNK]:
            if t != topic:  # sorted by topic: a topic's name is encoded once per run of its partitions
                topic, topic_text = t, text(t)
            epoch, expire = o.leader_epoch, o.expire_timestamp
            rows.append(
                _OFFSET
                % (
                    topic_text,
                    p,
                    o.offset,
                    "null" if epoch is None else epoch,
                    text(o.metadata),
                    o.commit_timestamp,
                    "null" if expire is None else expire,
                )
            )
        yield ("," if start else "") + ",".join(rows)
    yield "]"


def group_chunks(group: GroupMetadata) -> Iterator[str]:
    """``group.to_json()`` as JSON text in chunks."""
    return object_chunks(group.json_with_offsets(None), "offsets", offsets_chunks(group.sorted_offsets()))


def cache_chunks(cache: CoordinatorCache) -> Iterator[str]:
    """``cache.to_json()`` as JSON text in chunks, one group after another."""
    groups = (group_chunks(cache.groups[g]) for g in sorted(cache.groups))
    return object_chunks(cache.json_with_groups(None), "groups", array_chunks(groups))


def caches_chunks(caches: Iterable[CoordinatorCache]) -> Iterator[str]:
    """``[c.to_json() for c in caches]`` as JSON text in chunks."""
    return array_chunks(cache_chunks(c) for c in caches)
