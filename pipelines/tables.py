"""CoordinatorCache -> rows of the reload tables (``pipelines/schemas.py``), as tuples or Arrow.

The same functions serve the Spark jobs (on executors, inside ``mapInArrow``) and the tests, which
compare the Spark output with the single-process reload.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from offsetops.coordinator_core.cache import CoordinatorCache, GroupMetadata, LoadStats, MemberMetadata
from offsetops.coordinator_core.errors import DecodeError, error_total
from offsetops.coordinator_core.metrics_snapshot import AssignmentFigures
from offsetops.coordinator_core.share_group import ShareGroup
from offsetops.coordinator_core.streams_group import TASK_TYPES, StreamsGroup
from offsetops.pipelines.schemas import ASSIGNMENT_ENTRY, TABLE_SCHEMAS
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

Row = tuple[Any, ...]


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` (what ``mapInArrow`` must yield)."""
    return to_arrow_schema(schema)


def _error_row(partition: int, e: DecodeError) -> Row:
    return (partition, e.file, e.position, e.offset, e.kind, e.reason, e.count)


def error_from_row(r: Mapping[str, Any]) -> DecodeError:
    """A ``decode_errors`` row as the :class:`DecodeError` it was written from (``count`` 1 when absent)."""
    return DecodeError(
        r["kind"], r["reason"], r["file"], r["offsets_partition"], r["position"], r["offset"],
        count=r.get("count") or 1,
    )  # fmt: skip


def cache_rows(cache: CoordinatorCache, *, partition: int | None = None) -> dict[str, list[Row]]:
    """Every reload table's rows for one partition's cache, fields in schema order."""
    p = cache.partition if partition is None else partition
    if p is None:
        raise ValueError("the cache has no partition number; pass partition=")
    offsets: list[Row] = []
    pending: list[Row] = []
    groups: list[Row] = []
    members: list[Row] = []
    assignments: list[Row] = []
    for gid in sorted(cache.groups):
        g = cache.groups[gid]
        for (topic, part), om in sorted(g.offsets.items()):
            offsets.append(
                (
                    p,
                    gid,
                    topic,
                    part,
                    om.offset,
                    om.leader_epoch,
                    om.metadata,
                    om.commit_timestamp,
                    om.expire_timestamp,
                    om.record_offset,
                )
            )
        for pid, offs in sorted(g.pending_offsets.items()):
            for (topic, part), om in sorted(offs.items()):
                pending.append((p, gid, pid, topic, part, om.offset, om.record_offset))
        groups.append(_group_row(p, gid, g))
        if g.detail is not None:
            assignments.extend(assignment_rows(p, g.detail))
        members.extend(_member_row(p, gid, m) for m in g.members)
    return {
        "offsets": offsets,
        "pending_offsets": pending,
        "groups": groups,
        "members": members,
        "group_assignments": assignments,
        "decode_errors": [_error_row(p, e) for e in cache.stats.errors],
        "load_stats": [_load_stats_row(p, cache.stats)],
    }


def _group_row(p: int, gid: str, g: GroupMetadata) -> Row:
    return (
        p,
        gid,
        g.state,
        g.protocol_type or None,
        g.generation,
        g.protocol,
        g.leader,
        g.current_state_timestamp,
        len(g.members),
        g.group_type,
        None if g.detail is None else g.detail.assignment_epoch,
    )


def _member_row(p: int, gid: str, m: MemberMetadata) -> Row:
    assignment = (
        None
        if m.assignment is None
        else [{"topic": t, "partitions": list(ps)} for t, ps in sorted(m.assignment.items())]
    )
    return (
        p,
        gid,
        m.member_id,
        m.group_instance_id,
        m.client_id,
        m.client_host,
        m.session_timeout_ms,
        m.rebalance_timeout_ms,
        None if m.subscribed_topics is None else list(m.subscribed_topics),
        assignment,
    )


def _load_stats_row(p: int, s: LoadStats) -> Row:
    return (
        p,
        s.segments,
        s.batches,
        s.records,
        s.bytes,
        s.tombstones,
        s.control_records,
        s.unknown_record_types,
        error_total(s.errors),  # summaries by their count
        float(s.elapsed_ms),
    )


def assignment_rows(partition: int, detail: ShareGroup | StreamsGroup) -> list[Row]:
    """``group_assignments`` rows of a share or streams group: current, target and revoking."""
    members = {m.member_id: m for m in detail.members}
    out: list[Row] = []

    def add(mid: str, kind: str, task_type: str, topic: str | None, sub: str | None, parts: Any) -> None:
        m = members.get(mid)
        epoch = m.member_epoch if m is not None and kind != "target" else None
        for part in parts:
            out.append(
                (partition, detail.group_id, detail.group_type, mid, kind, task_type, topic, sub, part,
                 m is not None, epoch, detail.group_epoch, detail.assignment_epoch)
            )  # fmt: skip

    if isinstance(detail, ShareGroup):
        for m in detail.members:
            for topic, parts in m.assigned_partitions.items():
                add(m.member_id, "current", "partition", topic, None, parts)
        for mid, target in detail.target_assignment.items():
            for topic, parts in target.items():
                add(mid, "target", "partition", topic, None, parts)
        return out
    tuples = [(m.member_id, "current", m.assigned_tasks) for m in detail.members]
    tuples += [(m.member_id, "revoking", m.tasks_pending_revocation) for m in detail.members]
    tuples += [(mid, "target", t) for mid, t in detail.target_assignment.items()]
    for mid, kind, tasks in tuples:
        for task_type, by_sub in tasks.by_type().items():
            for sub, parts in by_sub.items():
                add(mid, kind, task_type, None, sub, parts)
    return out


def rows_to_arrow(rows: Sequence[Row], schema: StructType) -> pa.Table:
    """Tuples in schema order to an Arrow table with exactly Spark's Arrow schema."""
    names = schema.fieldNames()
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    target = arrow_schema(schema)
    arrays = [pa.array(list(col), type=target.field(i).type) for i, col in enumerate(columns)]
    return pa.Table.from_arrays(arrays, schema=target)


def table_to_ipc(table: pa.Table) -> bytes:
    """An Arrow table as IPC stream bytes (how tables travel between Spark stages)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def ipc_batches(data: bytes) -> Iterator[pa.RecordBatch]:
    """The record batches of IPC stream bytes."""
    yield from pa.ipc.open_stream(pa.BufferReader(data))


def all_cache_rows(
    caches: Iterable[CoordinatorCache], tables: Iterable[str] = TABLE_SCHEMAS
) -> dict[str, list[Row]]:
    """Rows of every cache, per table (the single-process reference for the tests)."""
    names = list(tables)
    out: dict[str, list[Row]] = {t: [] for t in names}
    for cache in caches:
        rows = cache_rows(cache)
        for t in names:
            out[t].extend(rows[t])
    return out


def comparable(rows: Iterable[Row], schema: StructType, *, drop: Iterable[str] = ()) -> list[Row]:
    """Rows sorted and made hashable (lists to tuples), without the ``drop`` columns."""
    names = schema.fieldNames()
    skip = {names.index(c) for c in drop}

    def freeze(v: Any) -> Any:
        if hasattr(v, "asDict"):
            return freeze(v.asDict(recursive=True))
        if isinstance(v, Mapping):
            return tuple((k, freeze(x)) for k, x in sorted(v.items()))
        if isinstance(v, list | tuple):
            return tuple(freeze(x) for x in v)
        return v

    return sorted(
        (tuple(freeze(v) for i, v in enumerate(r) if i not in skip) for r in rows),
        key=repr,
    )


def _records(rows: Mapping[str, Iterable[Any]], table: str) -> Iterator[Mapping[str, Any]]:
    """The rows of ``table`` as mappings, whether tuples in schema order, Spark ``Row``s or dicts."""
    names = TABLE_SCHEMAS[table].fieldNames()
    for row in rows.get(table, ()):
        if isinstance(row, Mapping):
            yield row
        elif hasattr(row, "asDict"):
            yield row.asDict()
        else:
            yield dict(zip(names, row, strict=True))


def caches_from_rows(
    rows: Mapping[str, Iterable[Any]], *, num_partitions: int, partitions: Iterable[int] | None = None
) -> list[CoordinatorCache]:
    """The inverse of :func:`cache_rows`: rebuild each partition's cache from the reload tables.

    Everything the expiration rules read comes back (groups with their type, state, protocol type,
    generation and state timestamp, members with their subscriptions and assignments, committed and
    pending offsets, decode errors, load counts), so downstream steps plan from the tables the
    reload wrote instead of reading the log again. ``partitions`` also yields empty caches for
    partitions without rows.
    """
    from offsetops.coordinator_core.cache import OffsetAndMetadata
    from offsetops.coordinator_core.partitioner import partition_for

    caches: dict[int, CoordinatorCache] = {}

    def cache(p: int) -> CoordinatorCache:
        if p not in caches:
            caches[p] = CoordinatorCache(
                partition=p, groups={}, stats=LoadStats(), num_partitions=num_partitions
            )
        return caches[p]

    for p in partitions or ():
        cache(p)
    for r in _records(rows, "groups"):
        cache(r["offsets_partition"]).groups[r["group_id"]] = _group_from_row(r)
    for r in _records(rows, "members"):
        cache(r["offsets_partition"]).groups[r["group_id"]].members.append(_member_from_row(r))
    for r in _records(rows, "offsets"):
        cache(r["offsets_partition"]).groups[r["group_id"]].offsets[(r["topic"], r["partition"])] = (
            OffsetAndMetadata(
                offset=r["offset"],
                leader_epoch=r["leader_epoch"],
                metadata=r["metadata"],
                commit_timestamp=r["commit_timestamp"],
                expire_timestamp=r["expire_timestamp"],
                record_offset=r["record_offset"],
            )
        )
    for r in _records(rows, "pending_offsets"):
        c = cache(r["offsets_partition"])
        pending = OffsetAndMetadata(
            offset=r["offset"],
            leader_epoch=None,
            metadata="",
            commit_timestamp=0,
            expire_timestamp=None,
            record_offset=r["record_offset"],
        )
        c.groups[r["group_id"]].pending_offsets.setdefault(r["producer_id"], {})[
            (r["topic"], r["partition"])
        ] = pending
        c.open_transactions.setdefault(r["producer_id"], set()).add(r["group_id"])
    for r in _records(rows, "decode_errors"):
        cache(r["offsets_partition"]).stats.errors.append(error_from_row(r))
    for r in _records(rows, "load_stats"):
        s = cache(r["offsets_partition"]).stats
        for name in (
            "segments", "batches", "records", "bytes", "tombstones", "control_records",
            "unknown_record_types", "elapsed_ms",
        ):  # fmt: skip
            setattr(s, name, r[name])
    for cc in caches.values():
        cc.misplaced_groups = sorted(g for g in cc.groups if partition_for(g, num_partitions) != cc.partition)
    return [caches[p] for p in sorted(caches)]


def assignment_figures_from_rows(rows: Mapping[str, Iterable[Any]]) -> list[AssignmentFigures]:
    """Share and streams groups' epochs and owned tasks from the ``groups`` and ``group_assignments``
    tables: the figures ``metrics_snapshot.assignment_figures`` takes from a replayed detail (a group
    has one when its row carries an assignment epoch), sorted by group id as the views are."""
    owned: dict[tuple[int, str, str], int] = {}
    for r in _records(rows, "group_assignments"):
        if r["assignment"] == "current":
            key = (r["offsets_partition"], r["group_id"], r["task_type"])
            owned[key] = owned.get(key, 0) + 1
    out = []
    for r in _records(rows, "groups"):
        if r["assignment_epoch"] is None:
            continue
        p, gid = r["offsets_partition"], r["group_id"]
        tasks = (
            tuple((t, owned.get((p, gid, t), 0)) for t in TASK_TYPES)
            if r["group_type"] == "streams"
            else None
        )
        out.append((p, AssignmentFigures(gid, r["group_type"], r["assignment_epoch"], tasks)))
    return [a for _p, a in sorted(out, key=lambda pa: (pa[1].group_id, pa[0]))]


def _group_from_row(r: Mapping[str, Any]) -> GroupMetadata:
    return GroupMetadata(
        group_id=r["group_id"],
        state=r["state"],
        protocol_type=r["protocol_type"],
        generation=r["generation"],
        protocol=r["protocol"],
        leader=r["leader"],
        current_state_timestamp=r["current_state_timestamp"],
        group_type=r["group_type"],
    )


def _member_from_row(r: Mapping[str, Any]) -> MemberMetadata:
    topics, assignment = r["subscribed_topics"], r["assignment"]
    return MemberMetadata(
        member_id=r["member_id"],
        group_instance_id=r["group_instance_id"],
        client_id=r["client_id"],
        client_host=r["client_host"],
        session_timeout_ms=r["session_timeout_ms"],
        rebalance_timeout_ms=r["rebalance_timeout_ms"],
        subscribed_topics=None if topics is None else list(topics),
        assignment=None if assignment is None else _assignment_from_row(assignment),
    )


#: the field order of an ``ASSIGNMENT_ENTRY`` struct
_ENTRY_FIELDS = ASSIGNMENT_ENTRY.fieldNames()


def _assignment_from_row(assignment: Iterable[Any]) -> dict[str, list[int]]:
    """A member's assignment from its ``ASSIGNMENT_ENTRY`` structs: a Spark ``Row`` in the struct's field
    order (what ``collect`` gives) or a tuple is read by position, since a ``Row`` looked up by name
    searches its field names each time; a mapping or a ``Row`` of another order by name."""
    out: dict[str, list[int]] = {}
    for a in assignment:
        if isinstance(a, tuple) and getattr(a, "__fields__", _ENTRY_FIELDS) == _ENTRY_FIELDS:
            topic, parts = a
        else:
            by_name: Any = a  # a mapping, or a Row of another order (a tuple that also takes names)
            topic, parts = by_name["topic"], by_name["partitions"]
        out[topic] = list(parts)
    return out


def row_counts(tables: Mapping[str, Any], *by: str) -> dict[tuple[Any, ...], int]:
    """Rows of each DataFrame in ``tables`` (per value of the ``by`` columns), keyed ``(name, *by)``, in
    one Spark job over them all rather than one per table; a table without rows has no key."""
    from functools import reduce

    from pyspark.sql import functions as F

    if not tables:
        return {}
    marked = (df.select(F.lit(name).alias("_table"), *by) for name, df in tables.items())
    union = reduce(lambda a, b: a.unionByName(b), marked)
    return {
        (r["_table"], *(r[c] for c in by)): int(r["count"])
        for r in union.groupBy("_table", *by).count().collect()
    }
