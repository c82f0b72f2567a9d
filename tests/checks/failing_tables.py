"""Reload and operator tables on which every check of the suite fails, each for a reason of its own.

Built from the corrupted cache of ``conftest.corrupted_rows`` plus, per table: an extra column (the
schema check), a row of nulls in the key columns (the not-null checks), and one row breaking each other
rule. The DataFrames use the tables' schemas with every field nullable, so the null rows can exist.
"""

from __future__ import annotations

from typing import Any

from offsetops.coordinator_core.partitioner import partition_for

from tests.checks.conftest import NOW_MS, NUM_PARTITIONS, Rows, corrupted_rows

EXTRA_COLUMN = "unexpected_column"
"""A column no schema has: every table's ``columns_match_schema`` fails on it."""


def _wrong_partition(group_id: str) -> int:
    return (partition_for(group_id, NUM_PARTITIONS) + 1) % NUM_PARTITIONS


def _offsets(rows: Rows) -> None:
    offsets = rows["offsets"]
    first = offsets[0]
    offsets.append({**first, "offsets_partition": None, "group_id": None, "topic": None, "partition": None})
    offsets[-1].update(offset=None, commit_timestamp=None)
    offsets.append({**first, "topic": "negative-partition", "partition": -1})
    offsets.append({**first, "topic": "partition-out-of-range", "offsets_partition": NUM_PARTITIONS + 3})
    offsets.append({**first, "topic": "epoch", "leader_epoch": -1})
    offsets.append({**first, "topic": "misplaced", "offsets_partition": _wrong_partition(first["group_id"])})
    # More breaking rows than a sample holds, at both ends of the table (so in both of its partitions):
    # which five the sample shows depends on the order the rows are read in.
    for n in range(7):
        late = {**first, "topic": f"from-the-future-{n}", "commit_timestamp": NOW_MS + 60_000 * (n + 1)}
        below = {**first, "topic": f"below-invalid-{n}", "offset": -2 - n}
        offsets[len(offsets) if n % 2 else 0 : 0] = [late, below]
    offsets.append({**first, "topic": "chatty", "metadata": "m" * 5_000})


def _pending_offsets(rows: Rows) -> None:
    pending = rows["pending_offsets"]
    first = pending[0]
    pending.append(
        {
            **first,
            "offsets_partition": None,
            "group_id": None,
            "producer_id": None,
            "topic": None,
            "partition": None,
        }
    )
    pending.append({**first, "topic": "rewound", "offset": -7})
    pending.append({**first, "topic": "misplaced", "offsets_partition": _wrong_partition(first["group_id"])})


def _groups(rows: Rows) -> None:
    groups = rows["groups"]
    empty = next(g for g in groups if g["group_id"] == "legacy-offsets-only")
    groups.append({**empty, "offsets_partition": None, "group_id": None, "state": None})
    groups.append({**empty})  # the same group_id twice
    groups.append({**empty, "group_id": "negative-members", "member_count": -2})
    groups[-1]["offsets_partition"] = partition_for("negative-members", NUM_PARTITIONS)
    groups.append({**empty, "group_id": "far-partition", "offsets_partition": NUM_PARTITIONS + 1})
    groups.append({**empty, "group_id": "future-state", "current_state_timestamp": NOW_MS + 10 * 3_600_000})
    groups[-1]["offsets_partition"] = partition_for("future-state", NUM_PARTITIONS)
    groups.append({**empty, "group_id": "stable-alone", "state": "Stable", "member_count": 0})
    groups[-1]["offsets_partition"] = partition_for("stable-alone", NUM_PARTITIONS)


def _members(rows: Rows) -> None:
    members = rows["members"]
    first = members[0]
    members.append({**first, "offsets_partition": None, "group_id": None, "member_id": None})
    members.append({**first})  # (group_id, member_id) twice
    members.append(
        {
            **first,
            "member_id": "off-subscription",
            "assignment": [{"topic": "audit-log", "partitions": [0, 1]}],
        }
    )


def _group_assignments(rows: Rows) -> None:
    assignments = rows["group_assignments"]
    first = assignments[0]
    assignments.append(
        {**first, "offsets_partition": None, "group_id": None, "member_id": None, "partition": None}
    )
    assignments.append({**first, "offsets_partition": -1})


def _load_stats(rows: Rows) -> None:
    stats = rows["load_stats"]
    first = stats[0]
    stats.append({**first, "offsets_partition": None})
    stats.append({**first})  # one partition twice
    stats.append({**first, "offsets_partition": NUM_PARTITIONS})


def _operator_tables(rows: Rows) -> None:
    gid = "payments-consumer"
    base = {"offsets_partition": partition_for(gid, NUM_PARTITIONS), "group_id": gid, "topic": "payments"}
    rows["offset_log_ranges"] = [
        {
            **base,
            "partition": 0,
            "offset": 5,
            "log_start_offset": 100,
            "log_end_offset": 900,
            "source": "log_dir",
        },
        {
            **base,
            "partition": 1,
            "offset": 950,
            "log_start_offset": 0,
            "log_end_offset": 900,
            "source": "log_dir",
        },
        {
            **base,
            "partition": 2,
            "offset": 50,
            "log_start_offset": 0,
            "log_end_offset": 900,
            "source": "log_dir",
        },
    ]
    rows["live_crosscheck"] = [
        {
            **base,
            "kind": "offset",
            "partition": 0,
            "cache_value": "1001",
            "live_value": "1001",
            "status": "match",
        },
        {
            **base,
            "kind": "offset",
            "partition": 1,
            "cache_value": "1002",
            "live_value": "999",
            "status": "mismatch",
        },
        {
            **base,
            "kind": "group",
            "topic": None,
            "partition": None,
            "cache_value": "Stable",
            "live_value": "Empty",
        },
    ]
    rows["live_crosscheck"][-1]["status"] = "mismatch"
    for row in rows["live_crosscheck"]:
        row["detail"] = f"{row['kind']} {row['status']}"


def failing_rows() -> Rows:
    """The corrupted cache, grown until every check of every table has at least one row that breaks it."""
    rows = corrupted_rows()
    for build in (_offsets, _pending_offsets, _groups, _members, _group_assignments, _load_stats):
        build(rows)
    _operator_tables(rows)
    return rows


def make_loose_tables(spark: Any, rows: Rows) -> dict[str, Any]:
    """DataFrames with each table's schema made nullable, plus :data:`EXTRA_COLUMN`."""
    from offsetops.checks.expectations import TABLE_SCHEMAS
    from pyspark.sql.types import StringType, StructField, StructType

    out = {}
    for name, schema in TABLE_SCHEMAS.items():
        fields = [StructField(f.name, f.dataType, True) for f in schema.fields]
        loose = StructType([*fields, StructField(EXTRA_COLUMN, StringType(), True)])
        data = [(*(r.get(f.name) for f in fields), "x") for r in rows[name]]
        out[name] = spark.createDataFrame(data, loose)
    return out
