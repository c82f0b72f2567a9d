"""CoordinatorCache -> rows of the reload tables (``pipelines/schemas.py``), as tuples or Arrow.

The same functions serve the Spark jobs (on executors, inside ``mapInArrow``) and the tests, which
compare the Spark output with the single-process reload.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from coordinator_core.cache import CoordinatorCache
from coordinator_core.errors import DecodeError
from pipelines.schemas import TABLE_SCHEMAS

Row = tuple[Any, ...]


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` (what ``mapInArrow`` must yield)."""
    return to_arrow_schema(schema)


def _error_row(partition: int, e: DecodeError) -> Row:
    return (partition, e.file, e.position, e.offset, e.kind, e.reason)


def cache_rows(cache: CoordinatorCache, *, partition: int | None = None) -> dict[str, list[Row]]:
    """Every reload table's rows for one partition's cache, fields in schema order."""
    p = cache.partition if partition is None else partition
    if p is None:
        raise ValueError("the cache has no partition number; pass partition=")
    offsets: list[Row] = []
    pending: list[Row] = []
    groups: list[Row] = []
    members: list[Row] = []
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
        groups.append(
            (
                p,
                gid,
                g.state,
                g.protocol_type or None,
                g.generation,
                g.protocol,
                g.leader,
                g.current_state_timestamp,
                len(g.members),
            )
        )
        for m in g.members:
            assignment = (
                None
                if m.assignment is None
                else [{"topic": t, "partitions": list(ps)} for t, ps in sorted(m.assignment.items())]
            )
            members.append(
                (
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
            )
    s = cache.stats
    return {
        "offsets": offsets,
        "pending_offsets": pending,
        "groups": groups,
        "members": members,
        "decode_errors": [_error_row(p, e) for e in s.errors],
        "load_stats": [
            (
                p,
                s.segments,
                s.batches,
                s.records,
                s.bytes,
                s.tombstones,
                s.control_records,
                s.unknown_record_types,
                len(s.errors),
                float(s.elapsed_ms),
            )
        ],
    }


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
