"""Cross-check the rebuilt cache against what the live coordinator serves, and data-partition bounds.

The strongest evidence that a reload is right is that the group coordinator answers the same:
OffsetFetch (``GroupCoordinator.handleFetchOffsets``) gives each group's committed offsets and
DescribeGroups its state and protocol. A difference is a mismatch unless the coordinator has seen a
commit after the cache was read: the cache holds, for each committed offset, the ``__consumer_offsets``
record it came from (``record_offset``); when the offsets partition holds a later OffsetCommit record
for that key carrying the live value, the commit is newer than the read and is reported as such.

ListOffsets of the data partitions gives [log start, log end] for each committed offset
(:func:`live_log_ranges`); :func:`log_dir_log_ranges` gives the same offline from the data topics'
partition dirs of the broker log dir.

Every Kafka connection is built from :class:`offsetops.coordinator_core.kafka_client.KafkaClientConfig`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.data_offsets import (
    SOURCE_PARTITION_DIR,
    PartitionOffsets,
    live_offsets,
    offline_offsets,
)
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.kafka_client import KafkaClientConfig, check_connection
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.schema import OffsetCommitKey, decode_key, decode_offset_commit_value
from offsetops.coordinator_core.sources.live import CONSUMER_OFFSETS, LiveSourceError
from offsetops.coordinator_core.sources.source import ReadLimits, Source

logger = logging.getLogger(__name__)

MATCH, NEWER, MISMATCH, MISSING_CACHE, MISSING_LIVE, UNREACHABLE = (
    "match",
    "newer_than_read",
    "mismatch",
    "missing_in_cache",
    "missing_live",
    "unreachable",
)
ACCEPTED = (MATCH, NEWER)
"""Statuses that are not an error: the cache agrees, or the coordinator saw a later commit."""

TopicPartition = tuple[str, int]
OffsetKey = tuple[str, str, int]  # group, topic, partition


@dataclass(frozen=True, slots=True)
class CrossCheckRow:
    """One committed offset or one group, as the cache and the coordinator see it."""

    kind: str  # "offset" or "group"
    offsets_partition: int | None
    group_id: str
    topic: str | None
    partition: int | None
    cache_value: str | None
    live_value: str | None
    status: str
    detail: str

    def to_row(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class CachedOffset:
    """A committed offset of the rebuilt cache and the offsets-topic record it was read from."""

    offsets_partition: int
    group_id: str
    topic: str
    partition: int
    offset: int
    record_offset: int | None


def _admin(config: KafkaClientConfig) -> Any:
    from kafka.admin import KafkaAdminClient

    # The one client configuration: the cluster is reached once, bounded, before kafka-python tries.
    check_connection(config)
    try:
        return KafkaAdminClient(**config.client_kwargs(KafkaAdminClient, client_id="offsetops-crosscheck"))
    except Exception as exc:  # kafka-python raises several unrelated types when a cluster is unreachable
        raise LiveSourceError(config.redact(f"cannot reach {config.describe()}: {exc}")) from None


def fetch_committed(config: KafkaClientConfig, groups: Iterable[str]) -> dict[str, dict[TopicPartition, int]]:
    """OffsetFetch per group (all partitions): ``{group: {(topic, partition): offset}}``."""
    admin = _admin(config)
    out: dict[str, dict[TopicPartition, int]] = {}
    try:
        for group in sorted(set(groups)):
            try:
                offsets = admin.list_group_offsets(group)
            except Exception as exc:
                raise LiveSourceError(f"OffsetFetch for group {group!r} failed: {exc}") from None
            per = offsets.get(group, offsets) if isinstance(offsets, dict) else {}
            out[group] = {
                (tp.topic, tp.partition): int(om.offset) for tp, om in per.items() if om.offset is not None
            }
    finally:
        admin.close()
    return out


def describe_groups(config: KafkaClientConfig, groups: Iterable[str]) -> dict[str, dict[str, Any]] | None:
    """DescribeGroups: ``{group: {"state", "protocol_type", "protocol", "members"}}``.

    None when kafka-python cannot parse the broker's answer (Tansu sets authorized-operation bits no
    Kafka defines); a broker that cannot be reached still raises.
    """
    admin = _admin(config)
    try:
        described = admin.describe_groups(sorted(set(groups)))
    except ValueError as exc:
        logger.warning("DescribeGroups answer could not be parsed (%s); group states not compared", exc)
        return None
    except Exception as exc:
        raise LiveSourceError(f"DescribeGroups failed: {exc}") from None
    finally:
        admin.close()
    return {
        g: {
            "state": d.get("group_state") or d.get("state"),
            "protocol_type": d.get("protocol_type"),
            "protocol": d.get("protocol_data") or d.get("protocol"),
            "members": len(d.get("members") or []),
        }
        for g, d in described.items()
    }


def later_commits(
    config: KafkaClientConfig,
    start_offsets: Mapping[int, int],
    *,
    keys: set[OffsetKey] | None = None,
    topic: str = CONSUMER_OFFSETS,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> dict[OffsetKey, list[tuple[int, int | None]]]:
    """OffsetCommit records of ``keys`` (all when None) written to each offsets partition from
    ``start_offsets[p]`` to its end now.

    ``{(group, topic, partition): [(record offset, committed offset or None for a tombstone)]}``.
    """
    found: dict[OffsetKey, list[tuple[int, int | None]]] = {}
    errors: list[DecodeError] = []
    limits = ReadLimits(max_batch_bytes=max_batch_bytes)
    with Source(client=config, topic=topic, limits=limits).live() as source:
        present = set(source.partitions())
        for p, start in sorted(start_offsets.items()):
            if p not in present:
                continue
            for batch in source.iter_batches(p, errors, start_offset=start):
                if batch.is_control:
                    continue
                for offset, _ts, key, value in batch.iter_records():
                    if key is None:
                        continue
                    try:
                        k = decode_key(key)
                    except Exception:  # a key the reload would report; not ours to judge here
                        continue
                    if not isinstance(k, OffsetCommitKey):
                        continue
                    if keys is not None and (k.group, k.topic, k.partition) not in keys:
                        continue
                    committed = None if value is None else decode_offset_commit_value(value).offset
                    found.setdefault((k.group, k.topic, k.partition), []).append((offset, committed))
    return found


def compare_offsets(
    cached: Iterable[CachedOffset],
    live: Mapping[str, Mapping[TopicPartition, int]],
    later: Mapping[OffsetKey, list[tuple[int, int | None]]],
    *,
    partition_of: Mapping[str, int],
) -> list[CrossCheckRow]:
    """Classify every key of the cache and of the coordinator (pure: no I/O, for tests and replays)."""
    rows: list[CrossCheckRow] = []
    by_key = {(c.group_id, c.topic, c.partition): c for c in cached if c.group_id in live}

    def newer(key: OffsetKey, after: int | None, value: int | None) -> int | None:
        for rec, committed in later.get(key, []):
            if (after is None or rec > after) and committed == value:
                return rec
        return None

    for group, offsets in live.items():
        p = partition_of.get(group)
        for (topic, partition), live_offset in sorted(offsets.items()):
            key = (group, topic, partition)
            c = by_key.get(key)
            cache_offset = None if c is None else c.offset
            if cache_offset == live_offset:
                status, detail = MATCH, ""
            else:
                rec = newer(key, None if c is None else c.record_offset, live_offset)
                if rec is not None:
                    status = NEWER
                    detail = f"committed at {CONSUMER_OFFSETS}-{p} offset {rec}, after the cache was read"
                elif c is None:
                    status, detail = MISSING_CACHE, "the coordinator has this offset, the cache does not"
                else:
                    status = MISMATCH
                    detail = f"cache read it from record {c.record_offset}; no later commit of {live_offset}"
            rows.append(
                CrossCheckRow(
                    "offset",
                    p if c is None else c.offsets_partition,
                    group,
                    topic,
                    partition,
                    None if cache_offset is None else str(cache_offset),
                    str(live_offset),
                    status,
                    detail,
                )
            )
    live_keys = {(g, t, p) for g, o in live.items() for (t, p) in o}
    for key, c in sorted(by_key.items()):
        if key not in live_keys:
            deleted = any(committed is None for _, committed in later.get(key, []))
            rows.append(
                CrossCheckRow(
                    "offset",
                    c.offsets_partition,
                    c.group_id,
                    c.topic,
                    c.partition,
                    str(c.offset),
                    None,
                    NEWER if deleted else MISSING_LIVE,
                    "deleted (tombstone) after the cache was read"
                    if deleted
                    else "the cache has this offset, the coordinator does not",
                )
            )
    return rows


def compare_groups(
    cached_groups: Mapping[str, Mapping[str, Any]], live: Mapping[str, Mapping[str, Any]]
) -> list[CrossCheckRow]:
    """State and protocol type of each group; a state the broker does not report is not compared."""
    rows = []
    for group, c in sorted(cached_groups.items()):
        d = live.get(group)
        cache_value = f"{c.get('state')}/{c.get('protocol_type') or '-'}"
        live_value, status, detail = _compare_group(c, d)
        rows.append(
            CrossCheckRow(
                "group",
                c.get("offsets_partition"),
                group,
                None,
                None,
                cache_value,
                live_value,
                status,
                detail,
            )
        )
    return rows


def _compare_group(c: Mapping[str, Any], d: Mapping[str, Any] | None) -> tuple[str | None, str, str]:
    """The live value, status and detail of one cached group against DescribeGroups' answer."""
    if d is None:
        return None, MISSING_LIVE, "DescribeGroups does not know the group"
    live_state = d.get("state")
    live_value = f"{live_state}/{d.get('protocol_type') or '-'}"
    known = live_state not in (None, "", "Unknown")
    same_type = (c.get("protocol_type") or "") == (d.get("protocol_type") or "")
    # DescribeGroups answers Dead for a group the coordinator no longer holds (Empty in the cache).
    same_state = (
        not known or live_state == c.get("state") or (live_state == "Dead" and c.get("state") == "Empty")
    )
    detail = "" if known else "the coordinator does not report a state; protocol type compared only"
    return live_value, MATCH if same_type and same_state else MISMATCH, detail


def cross_check(
    config: KafkaClientConfig,
    cached: list[CachedOffset],
    cached_groups: Mapping[str, Mapping[str, Any]],
    *,
    topic: str = CONSUMER_OFFSETS,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> list[CrossCheckRow]:
    """OffsetFetch + DescribeGroups for every cached group, then re-read the offsets partitions past
    what the cache saw (within ``max_batch_bytes``) to tell newer commits from mismatches."""
    groups = sorted({c.group_id for c in cached} | set(cached_groups))
    live_offsets = fetch_committed(config, groups)
    partition_of = {c.group_id: c.offsets_partition for c in cached}
    partition_of.update({g: int(v["offsets_partition"]) for g, v in cached_groups.items()})
    first = compare_offsets(cached, live_offsets, {}, partition_of=partition_of)
    # compare_offsets rows always name their topic and partition.
    suspects: set[OffsetKey] = {
        (r.group_id, r.topic, r.partition)
        for r in first
        if r.status != MATCH and r.topic is not None and r.partition is not None
    }
    rows = first
    if suspects:
        # A commit after the read sits past every record the cache read (its max record_offset); a
        # later overwrite of a cached key sits past that key's own record.
        read_past: dict[int, int] = {}
        for c in cached:
            if c.record_offset is not None:
                read_past[c.offsets_partition] = max(read_past.get(c.offsets_partition, -1), c.record_offset)
        by_key = {(c.group_id, c.topic, c.partition): c for c in cached}
        starts: dict[int, int] = {}
        for key in suspects:
            c = by_key.get(key)
            p = partition_of.get(key[0])
            if p is None:
                continue
            start = c.record_offset + 1 if c and c.record_offset is not None else read_past.get(p, -1) + 1
            starts[p] = min(starts.get(p, start), start)
        later = later_commits(config, starts, keys=suspects, topic=topic, max_batch_bytes=max_batch_bytes)
        rows = compare_offsets(cached, live_offsets, later, partition_of=partition_of)
    described = describe_groups(config, groups)
    if described is not None:
        rows += compare_groups(cached_groups, described)
    return rows


# -- data partition bounds -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogRange:
    """[log start, log end) of one data partition, and where it was learned."""

    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    source: str

    def to_row(self) -> dict[str, Any]:
        return asdict(self)


def _ranges(found: dict[TopicPartition, PartitionOffsets], source: str) -> list[LogRange]:
    """The partitions whose both bounds are known, as table rows (unknown ones are not judged)."""
    return [
        LogRange(topic, part, po.log_start_offset, po.log_end_offset, source)
        for (topic, part), po in sorted(found.items())
        if po.log_start_offset is not None and po.log_end_offset is not None
    ]


def live_log_ranges(config: KafkaClientConfig, partitions: Iterable[TopicPartition]) -> list[LogRange]:
    """ListOffsets earliest/latest of each data partition (topics that do not exist are skipped:
    their committed offsets are for the expiration plan, not for range checks)."""
    return _ranges(live_offsets(config, partitions), "ListOffsets")


def log_dir_log_ranges(
    log_dir: str | Path, partitions: Iterable[TopicPartition] | None = None
) -> list[LogRange]:
    """Bounds of the data partitions found in a broker log dir (``<topic>-<n>`` folders), only those
    in ``partitions`` when given. See :mod:`offsetops.coordinator_core.data_offsets` for how each bound is
    found.
    """
    root = Path(log_dir)
    if partitions is None:
        partitions = []
        for entry in os.scandir(root):
            topic, _, number = entry.name.rpartition("-")
            if entry.is_dir() and topic and number.isdigit() and topic != CONSUMER_OFFSETS:
                partitions.append((topic, int(number)))
    found = offline_offsets([root], partitions)
    return _ranges({tp: po for tp, po in found.items() if po.source == SOURCE_PARTITION_DIR}, "log dir")
