"""A local SparkSession and small but realistic reload tables built with the real schemas."""

from __future__ import annotations

import copy
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from offsetops.coordinator_core.partitioner import partition_for

NOW_MS = 1_760_000_000_000  # 2025-10-09T08:53:20Z
NUM_PARTITIONS = 50
HOUR_MS = 3_600_000

Rows = dict[str, list[dict[str, Any]]]


def _java_available() -> bool:
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark for the whole session: 2 cores, 2 shuffle partitions, no UI."""
    if not _java_available():
        pytest.skip("Java is needed for a local SparkSession")
    pyspark_sql = pytest.importorskip("pyspark.sql")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("offsetops-checks-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _group(group_id: str, **fields: Any) -> dict[str, Any]:
    return {"offsets_partition": partition_for(group_id, NUM_PARTITIONS), "group_id": group_id, **fields}


def good_rows() -> Rows:
    """A healthy cache: consumer and connect groups, a static member, an offsets-only group, a v1 expiry,
    a share group and a streams group."""
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    rows: Rows = {t: [] for t in TABLE_SCHEMAS}
    groups = [
        ("payments-consumer", "Stable", "consumer", 42, "range", ["payments", "refunds"]),
        ("console-consumer-48213", "Stable", "consumer", 1, "cooperative-sticky", ["orders"]),
        ("connect-s3-sink", "Stable", "connect", 7, "sessioned", None),
        ("orders-stream-app", "Empty", "consumer", 13, None, None),
        ("legacy-offsets-only", "Empty", None, 0, None, None),
        ("polygenelubricants", "Empty", "consumer", 3, None, None),  # hashCode == Integer.MIN_VALUE
    ]
    for n, (gid, state, ptype, gen, protocol, topics) in enumerate(groups):
        members: list[dict[str, Any]] = []
        if state == "Stable":
            for i in range(2):
                mid = f"{gid}-client-{i}-6f1c2a9e-{i:04d}"
                subscribed = topics
                assignment = (
                    [{"topic": t, "partitions": [p for p in range(6) if p % 2 == i]} for t in topics]
                    if topics
                    else None
                )
                members.append(
                    _group(
                        gid,
                        member_id=mid,
                        group_instance_id=f"{gid}-static-{i}" if gid == "payments-consumer" else None,
                        client_id=f"{gid}-client-{i}",
                        client_host=f"/10.0.3.{20 + i}",
                        session_timeout_ms=45_000,
                        rebalance_timeout_ms=300_000,
                        subscribed_topics=subscribed,
                        assignment=assignment,
                    )
                )
        rows["members"] += members
        rows["groups"].append(
            _group(
                gid,
                state=state,
                protocol_type=ptype,
                generation=gen,
                protocol=protocol,
                leader=members[0]["member_id"] if members else None,
                current_state_timestamp=NOW_MS - (n + 1) * HOUR_MS if ptype else None,
                member_count=len(members),
                group_type="classic",
                assignment_epoch=None,
            )
        )
        for topic in topics or ["events"]:
            for partition in range(3):
                commit = NOW_MS - (n + 2) * HOUR_MS + partition * 1000
                rows["offsets"].append(
                    _group(
                        gid,
                        topic=topic,
                        partition=partition,
                        offset=1_000 * (n + 1) + partition,
                        leader_epoch=5 if n % 2 == 0 else None,
                        metadata="",
                        commit_timestamp=commit,
                        expire_timestamp=commit + 24 * HOUR_MS if gid == "legacy-offsets-only" else None,
                        record_offset=10_000 + 10 * n + partition,
                    )
                )
    _add_modern_groups(rows)
    rows["pending_offsets"].append(
        _group(
            "payments-consumer",
            producer_id=4001,
            topic="payments",
            partition=0,
            offset=1_005,
            record_offset=10_050,
        )
    )
    for p in sorted({g["offsets_partition"] for g in rows["groups"]}):
        rows["load_stats"].append(
            {
                "offsets_partition": p,
                "segments": 2,
                "batches": 40,
                "records": 120,
                "bytes": 18_432,
                "tombstones": 3,
                "control_records": 1,
                "unknown_record_types": 0,
                "errors": 0,
                "elapsed_ms": 12.5,
            }
        )
    return rows


def _add_modern_groups(rows: Rows) -> None:
    """A share group and a streams group, each with one member joined as in Kafka's tests, as the reload
    writes them (``pipelines.tables.cache_rows`` of the loaded records)."""
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.tables import cache_rows

    from tests.support.modern_groups import SUBTOPOLOGY, load, share_join_records, streams_join

    for gid, records in (
        ("orders-queue", share_join_records("orders-queue", "orders-queue-member-1")),
        (
            "clicks-streams-app",
            streams_join("clicks-streams-app", "clicks-member-1", 0, {SUBTOPOLOGY: [0, 1, 2]}),
        ),
    ):
        cache = load(*records, partition=partition_for(gid, NUM_PARTITIONS))
        for table, table_rows in cache_rows(cache).items():
            if table in ("groups", "members", "group_assignments"):
                names = TABLE_SCHEMAS[table].fieldNames()
                rows[table] += [dict(zip(names, r, strict=True)) for r in table_rows]


def make_tables(spark: Any, rows: Rows) -> dict[str, Any]:
    """DataFrames with the explicit schemas of ``offsetops.pipelines.schemas``."""
    from offsetops.pipelines.schemas import TABLE_SCHEMAS

    return {
        name: spark.createDataFrame([tuple(r[f] for f in schema.fieldNames()) for r in rows[name]], schema)
        for name, schema in TABLE_SCHEMAS.items()
    }


@pytest.fixture
def rows() -> Rows:
    """A fresh, mutable copy of the healthy cache."""
    return copy.deepcopy(good_rows())


@pytest.fixture
def output_dir(tmp_path: Path) -> Path:
    return tmp_path / "out"


DECODE_ERROR_FILE = "/var/lib/kafka/data/__consumer_offsets-12/00000000000000000000.log"

# check id -> (severity, unexpected count, a value the sample must show)
CORRUPTIONS: dict[str, tuple[str, int, Any]] = {
    "offsets.key_unique": ("error", 2, "payments-consumer"),
    "offsets.offset_at_least_minus_one": ("error", 1, -5),
    "offsets.commit_timestamp_sane": ("error", 1, 1_112_000_000_000),
    "offsets.expire_not_before_commit": ("error", 1, 1_759_978_340_000),  # [expire, commit]
    "groups.state_known": ("error", 1, "Bogus"),
    "groups.generation_non_negative": ("error", 1, -1),
    "groups.group_in_partition_for": ("error", 1, "connect-s3-sink"),
    "groups.assignment_epoch_not_above_group_epoch": ("error", 1, "orders-queue"),
    "group_assignments.member_epoch_not_above_group_epoch": ("error", 1, 7),
    "group_assignments.assigned_to_existing_member": ("error", 1, "ghost-member"),
    "group_assignments.one_owner_per_active_task": ("error", 1, "clicks-streams-app"),
    "decode_errors.empty": ("error", 1, None),
}


def corrupted_rows() -> Rows:
    """The healthy cache with one deliberate corruption per entry of :data:`CORRUPTIONS`."""
    rows = good_rows()
    offsets = rows["offsets"]
    duplicate = dict(offsets[0], record_offset=offsets[0]["record_offset"] + 500)
    assert (duplicate["group_id"], duplicate["topic"]) == ("payments-consumer", "payments")
    offsets.append(duplicate)
    offsets[3]["offset"] = -5
    offsets[4]["commit_timestamp"] = 1_112_000_000_000  # 2005-03-28
    legacy = next(r for r in offsets if r["group_id"] == "legacy-offsets-only")
    legacy["expire_timestamp"] = legacy["commit_timestamp"] - 60_000
    by_id = {g["group_id"]: g for g in rows["groups"]}
    by_id["orders-stream-app"]["state"] = "Bogus"
    by_id["console-consumer-48213"]["generation"] = -1
    connect = by_id["connect-s3-sink"]
    connect["offsets_partition"] = (connect["offsets_partition"] + 1) % NUM_PARTITIONS
    by_id["orders-queue"]["assignment_epoch"] = by_id["orders-queue"]["generation"] + 1
    assignments = rows["group_assignments"]
    share_row = next(
        r for r in assignments if r["group_id"] == "orders-queue" and r["assignment"] == "current"
    )
    share_row["member_epoch"] = 7  # above the group epoch 1
    streams = [r for r in assignments if r["group_id"] == "clicks-streams-app"]
    assignments.append(dict(streams[0], member_id="ghost-member", assignment="target", member_exists=False))
    active = next(r for r in streams if r["assignment"] == "current" and r["task_type"] == "active")
    assignments.append(dict(active, member_id="clicks-member-2"))  # a second owner of the same task
    rows["decode_errors"].append(
        {
            "offsets_partition": 12,
            "file": DECODE_ERROR_FILE,
            "position": 40_960,
            "offset": 1_234,
            "kind": "crc_mismatch",
            "reason": "stored CRC 0x1a2b3c4d, computed 0x00c0ffee",
            "count": 1,
        }
    )
    return rows


def unsubscribed_assignment_rows() -> Rows:
    """The healthy cache where one member is assigned a topic it never subscribed to."""
    rows = good_rows()
    member = next(m for m in rows["members"] if m["group_id"] == "payments-consumer")
    member["assignment"] = [*member["assignment"], {"topic": "audit-log", "partitions": [0, 1]}]
    return rows


@pytest.fixture(scope="session")
def good_report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from offsetops.checks.suite import validate_cache

    tables = make_tables(spark, good_rows())
    return validate_cache(spark, tables, output_dir=tmp_path_factory.mktemp("good"), now_ms=NOW_MS)


@pytest.fixture(scope="session")
def corrupted_tables(spark: Any) -> dict[str, Any]:
    return make_tables(spark, corrupted_rows())


@pytest.fixture(scope="session")
def corrupted_snapshot(corrupted_tables: dict[str, Any]) -> dict[str, Any]:
    """What the corrupted tables look like before validation (rows, schema, storage level)."""
    return {
        name: (sorted(map(repr, df.collect())), df.schema.json(), df.storageLevel, df.count())
        for name, df in corrupted_tables.items()
    }


@pytest.fixture(scope="session")
def corrupted_report(
    spark: Any,
    corrupted_tables: dict[str, Any],
    corrupted_snapshot: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> Any:
    from offsetops.checks.suite import validate_cache

    return validate_cache(
        spark, corrupted_tables, output_dir=tmp_path_factory.mktemp("corrupted"), now_ms=NOW_MS
    )
