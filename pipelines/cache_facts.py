"""The facts of the reload tables per offsets partition, and the run's summary added up from them.

One definition, two ways to compute it: Spark aggregations over the published DataFrames
(:func:`partition_facts`), or plain Python over the rows the driver built (:func:`partition_facts_from_rows`,
for a resumed read that never went through Spark). Both hand the same aggregates (rows per table and
partition, groups per state and type, problems per kind, the load statistics row) to one assembler,
so the figures cannot fork. Decode problems are counted as ``count_errors`` counts them
(``coordinator_core.errors``): a summary row stands for its ``count``, notices are kept apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from offsetops.coordinator_core.errors import NOTICE_KINDS
from offsetops.pipelines.schemas import TABLE_SCHEMAS

#: load_stats columns summed into the run's figures
LOAD_STATS = ("segments", "batches", "records", "bytes", "tombstones")
#: tables whose rows are only counted per partition
COUNTED = ("offsets", "pending_offsets", "members", "group_assignments")

Facts = dict[int, dict[str, Any]]


def problems(count: int | None) -> int:
    """How many problems a ``decode_errors`` row stands for: its ``count``, 1 in tables without one."""
    return 1 if count is None else int(count)


def _assemble(
    counted: Iterable[tuple[str, int, int]],
    groups: Iterable[tuple[int, str, str, int]],
    errors: Iterable[tuple[int, str, int]],
    stats: Iterable[tuple[int, Sequence[Any]]],
) -> Facts:
    """The facts of each partition from the aggregates: ``(table, partition, rows)`` of the counted
    tables, ``(partition, state, group_type, groups)``, ``(partition, kind, problems)`` and
    ``(partition, load_stats values in LOAD_STATS order)``."""
    out: Facts = {}

    def facts(p: int) -> dict[str, Any]:
        return out.setdefault(int(p), {})

    def bump(p: int, key: str, name: str, n: int) -> None:
        counts = facts(p).setdefault(key, {})
        counts[name] = counts.get(name, 0) + n

    for table, p, n in counted:
        facts(p)[table] = int(n)
    for p, state, group_type, n in groups:
        facts(p)["groups"] = facts(p).get("groups", 0) + int(n)
        bump(p, "group_states", state, int(n))
        bump(p, "group_types", group_type, int(n))
    for p, kind, n in errors:
        bump(p, "error_kinds", kind, int(n))
        if kind not in NOTICE_KINDS:
            facts(p)["errors"] = facts(p).get("errors", 0) + int(n)
    for p, values in stats:
        for name, value in zip(LOAD_STATS, values, strict=True):
            facts(p)[name] = int(value or 0)
    return out


def partition_facts(tables: Mapping[str, Any]) -> Facts:
    """Row counts, decode problems (in all and by kind), group states and types and load statistics
    of each offsets partition in the DataFrames ``tables``: four small Spark jobs, one per aggregate."""
    from offsetops.pipelines.tables import row_counts
    from pyspark.sql import functions as F

    counted = row_counts({t: tables[t] for t in COUNTED if t in tables}, "offsets_partition")
    groups = tables["groups"].groupBy("offsets_partition", "state", "group_type").count().collect()
    n_problems = F.sum(F.coalesce(F.col("count"), F.lit(1)))  # problems() in Spark
    errors = tables["decode_errors"].groupBy("offsets_partition", "kind").agg(n_problems.alias("n"))
    stats = tables["load_stats"].select("offsets_partition", *LOAD_STATS).collect()
    return _assemble(
        ((table, p, n) for (table, p), n in counted.items()),
        ((r["offsets_partition"], r["state"], r["group_type"], r["count"]) for r in groups),
        ((r["offsets_partition"], r["kind"], r["n"]) for r in errors.collect()),
        ((r["offsets_partition"], [r[c] for c in LOAD_STATS]) for r in stats),
    )


def partition_facts_from_rows(rows: Mapping[str, Sequence[Sequence[Any]]]) -> Facts:
    """:func:`partition_facts` of the tables ``rows`` hold (tuples in schema order), without Spark."""

    def columns(table: str, *names: str) -> Iterable[tuple[Any, ...]]:
        fields = TABLE_SCHEMAS[table].fieldNames()
        at = [fields.index(n) for n in names]
        return (tuple(r[i] for i in at) for r in rows.get(table, ()))

    counted: Counter[tuple[str, int]] = Counter()
    for table in COUNTED:
        counted.update((table, p) for (p,) in columns(table, "offsets_partition"))
    groups = Counter(columns("groups", "offsets_partition", "state", "group_type"))
    errors: Counter[tuple[int, str]] = Counter()
    for p, kind, count in columns("decode_errors", "offsets_partition", "kind", "count"):
        errors[(p, kind)] += problems(count)
    return _assemble(
        ((table, p, n) for (table, p), n in counted.items()),
        ((p, state, group_type, n) for (p, state, group_type), n in groups.items()),
        ((p, kind, n) for (p, kind), n in errors.items()),
        ((r[0], r[1:]) for r in columns("load_stats", "offsets_partition", *LOAD_STATS)),
    )


def summarise(tables: Iterable[str], facts: Facts) -> dict[str, Any]:
    """The run's totals: rows per table (decode errors as problems, notices left out), load statistics,
    group states and types, and problems by kind, added up from the partitions' ``facts``."""
    counts = {name: _total(facts, name) for name in tables}
    counts["decode_errors"] = _total(facts, "errors")
    counts["load_stats"] = sum(1 for f in facts.values() if "segments" in f)
    summary: dict[str, Any] = {"counts": counts}
    summary.update({c: _total(facts, c) for c in LOAD_STATS})
    for key in ("group_states", "group_types", "error_kinds"):
        merged: dict[str, int] = {}
        for f in facts.values():
            for name, n in f.get(key, {}).items():
                merged[name] = merged.get(name, 0) + n
        summary[key] = merged
    return summary


def _total(facts: Facts, key: str) -> int:
    return sum(int(f.get(key, 0)) for f in facts.values())
