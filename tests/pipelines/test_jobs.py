"""The expire and audit jobs equal the single-process core; the CLI runs every job end to end."""

from __future__ import annotations

import json

import pytest
from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.expiration import plan_expiration
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.pipelines.audit import CLEANER_AUDIT_SCHEMA, audit_table
from offsetops.pipelines.expire import EXPIRE_SCHEMAS, expiration_tables, plan_rows
from offsetops.pipelines.source import list_log_dir
from offsetops.pipelines.tables import comparable

from offsetops.cli import main as offsetops_main

DAY_MS = 86_400_000

pytestmark = pytest.mark.spark


def test_expire_plan_equals_core_plan(spark, sim_txn) -> None:
    now = sim_txn.simulated_until_ms + 8 * DAY_MS
    tables, blobs = expiration_tables(
        spark, str(sim_txn.out_dir), now_ms=now, forecast_horizon_ms=10 * DAY_MS
    )
    blobs.cache()
    try:
        plan = plan_expiration(load_log_dir(sim_txn.out_dir), now_ms=now, forecast_horizon_ms=10 * DAY_MS)
        want = plan_rows(plan, -1)
        for name, schema in EXPIRE_SCHEMAS.items():
            got = comparable([tuple(r) for r in tables[name].collect()], schema)
            assert got == comparable(want[name], schema), name
        assert want["tombstones"], "eight days on, the simulated groups' offsets must expire"
    finally:
        blobs.unpersist()


def test_audit_equals_core_audit(spark, sim_txn) -> None:
    now = sim_txn.simulated_until_ms + DAY_MS
    rows = audit_table(spark, list_log_dir(spark, str(sim_txn.out_dir)), now_ms=now).collect()
    core = audit_log_dir(sim_txn.out_dir, now_ms=now, record_history=False)
    assert [r["offsets_partition"] for r in sorted(rows, key=lambda r: r[0])] == [
        p.partition for p in core.partitions
    ]
    for row in rows:
        expect = next(p for p in core.partitions if p.partition == row["offsets_partition"]).to_json()
        assert json.loads(row["audit_json"]) == json.loads(json.dumps(expect))
        assert row["verdict"] == expect["verdict"] and row["dirty_ratio"] == expect["dirty_ratio"]
    assert set(CLEANER_AUDIT_SCHEMA.fieldNames()) <= set(rows[0].asDict())


def test_audit_with_spark_scans_equals_the_local_audit(spark, sim_txn, tmp_path) -> None:
    from offsetops.pipelines.audit import partition_audits

    now = sim_txn.simulated_until_ms + DAY_MS
    scans = partition_audits(spark, list_log_dir(spark, str(sim_txn.out_dir)), now_ms=now)
    assert sorted(scans) == sorted(
        p.partition for p in audit_log_dir(sim_txn.out_dir, now_ms=now, record_history=False).partitions
    )
    # History, progress and verdicts on the driver, scans from the executors: the same audit, twice
    # (the second run reads the first one's history).
    for _run in (1, 2):
        local = audit_log_dir(sim_txn.out_dir, now_ms=now, state_dir=tmp_path / "a").to_json()
        distributed = audit_log_dir(
            sim_txn.out_dir, now_ms=now, state_dir=tmp_path / "b", partition_audits=scans
        ).to_json()
        for doc in (local, distributed):
            doc.pop("history_file", None)
        assert json.loads(json.dumps(distributed)) == json.loads(json.dumps(local))
    # The supplied scans are what the audit uses: drop one and that partition is not audited.
    _first, *rest = sorted(scans)
    partial = audit_log_dir(
        sim_txn.out_dir, now_ms=now, record_history=False, partition_audits={p: scans[p] for p in rest}
    )
    assert [p.partition for p in partial.partitions] == rest


def test_cli_runs_every_job(spark, sim_txn, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    now = str(sim_txn.simulated_until_ms + 8 * DAY_MS)
    common = ["--input", str(sim_txn.out_dir), "--output", str(out)]
    assert offsetops_main(["pipeline", "reload", *common]) == 0
    assert offsetops_main(["pipeline", "expire", *common, "--now-ms", now]) == 0
    assert offsetops_main(["pipeline", "audit", *common, "--now-ms", now]) == 0
    for table in (
        "offsets",
        "pending_offsets",
        "groups",
        "members",
        "decode_errors",
        "load_stats",
        "tombstones",
        "dead_groups",
        "expiration_forecast",
        "cleaner_audit",
        "cleaner_audit_topic",
    ):
        assert any((out / table).rglob("*.parquet")), table
    rc = offsetops_main(["pipeline", "validate", "--input", str(out), "--output", str(out), "--now-ms", now])
    assert rc in (0, 1)
    assert (out / "reports" / "index.html").is_file()
    assert (out / "reports" / "data_docs" / "index.html").is_file()
    text = capsys.readouterr().out
    assert "reload: 3 partitions" in text and "validate:" in text


def test_cli_names_a_missing_input(spark, tmp_path, capsys) -> None:
    missing = tmp_path / "nowhere"
    assert (
        offsetops_main(["pipeline", "reload", "--input", str(missing), "--output", str(tmp_path / "o")]) == 2
    )
    assert f"{missing}: no such file or directory" in capsys.readouterr().err


def test_a_partition_asked_for_but_absent_is_named(spark, sim_txn) -> None:
    from offsetops.pipelines.source import InputPathError

    assert {s.partition for s in list_log_dir(spark, str(sim_txn.out_dir), partitions=[1]).segments} == {1}
    with pytest.raises(InputPathError, match=r"partition\(s\) \[999\] of __consumer_offsets not found"):
        list_log_dir(spark, str(sim_txn.out_dir), partitions=[0, 999])


def test_local_masters_get_a_heap_that_holds_whole_segments() -> None:
    from offsetops.pipelines.session import default_conf

    # Spark's 1 GiB default overflowed with two tasks holding whole segments of a 1 GB log dir.
    assert default_conf("local[2]")["spark.driver.memory"] == "4g"
    assert default_conf("local[*]", quiet=True)["spark.ui.enabled"] == "false"
    # On a cluster the operator sizes the driver; we do not pick a heap for them.
    assert "spark.driver.memory" not in default_conf("k8s://https://kubernetes.default.svc:443")


def test_spark_audit_keeps_empty_segments(spark, tmp_path) -> None:
    """Spark's file sources skip zero-length files; an empty active segment (right after a roll) and
    an all-empty partition must still be audited exactly as the local audit does."""
    from offsetops.coordinator_core.records import build_record_batch
    from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
    from offsetops.coordinator_core.sources.logdir import CLEANER_CHECKPOINT, write_offset_checkpoint
    from offsetops.pipelines.audit import partition_audits

    now = 1_700_000_000_000
    key = encode_key(OffsetCommitKey(group="g", topic="t", partition=0))
    p0 = tmp_path / "__consumer_offsets-0"
    p0.mkdir()
    batches = b"".join(
        build_record_batch([(key, encode_value(OffsetCommitValue(version=3, offset=i)), now)], base_offset=i)
        for i in range(5)
    )
    (p0 / "00000000000000000000.log").write_bytes(batches)
    (p0 / "00000000000000000005.log").write_bytes(b"")  # the active segment, just rolled
    p1 = tmp_path / "__consumer_offsets-1"
    p1.mkdir()
    (p1 / "00000000000000000000.log").write_bytes(b"")
    write_offset_checkpoint(tmp_path / CLEANER_CHECKPOINT, {})
    local = audit_log_dir(tmp_path, now_ms=now, record_history=False)
    p0_local = next(p for p in local.partitions if p.partition == 0).to_json()
    # Segment 0 is not the active one, so it is cleanable: the empty segment 5 bounds the range.
    assert p0_local["cleanable_bytes"] == len(batches) and p0_local["first_uncleanable_offset"] == 5
    listing = list_log_dir(spark, str(tmp_path))
    scans = partition_audits(spark, listing, now_ms=now)
    assert sorted(scans) == [0, 1]
    distributed = audit_log_dir(tmp_path, now_ms=now, record_history=False, partition_audits=scans)
    assert json.loads(json.dumps(distributed.to_json())) == json.loads(json.dumps(local.to_json()))
    rows = {r["offsets_partition"]: r for r in audit_table(spark, listing, now_ms=now).collect()}
    assert sorted(rows) == [0, 1]
    assert json.loads(rows[0]["audit_json"]) == json.loads(json.dumps(p0_local))
    # The reload sees the same segments: every partition has its load_stats row, empty ones included.
    from offsetops.coordinator_core.loader import load_log_dir
    from offsetops.pipelines.reload import reload_tables
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.tables import all_cache_rows, comparable

    tables, _blobs = reload_tables(spark, listing)
    expected = all_cache_rows(load_log_dir(tmp_path))["load_stats"]
    schema = TABLE_SCHEMAS["load_stats"]
    got = comparable(tables["load_stats"].collect(), schema, drop=["elapsed_ms"])
    assert got == comparable(expected, schema, drop=["elapsed_ms"])
    assert [r[1] for r in got] == [2, 1]  # segments per partition, the empty ones counted
