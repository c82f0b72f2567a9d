"""The expire and audit jobs equal the single-process core; the CLI runs every job end to end."""

from __future__ import annotations

import json

import pytest

from coordinator_core.cleaner_audit import audit_log_dir
from coordinator_core.expiration import plan_expiration
from coordinator_core.loader import load_log_dir
from offsetops.cli import main as offsetops_main
from pipelines.audit import CLEANER_AUDIT_SCHEMA, audit_table
from pipelines.expire import EXPIRE_SCHEMAS, expiration_tables, plan_rows
from pipelines.source import list_log_dir
from pipelines.tables import comparable

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


def test_local_masters_get_a_heap_that_holds_whole_segments() -> None:
    from pipelines.session import default_conf

    # Spark's 1 GiB default overflowed with two tasks holding whole segments of a 1 GB log dir.
    assert default_conf("local[2]")["spark.driver.memory"] == "4g"
    assert default_conf("local[*]", quiet=True)["spark.ui.enabled"] == "false"
    # On a cluster the operator sizes the driver; we do not pick a heap for them.
    assert "spark.driver.memory" not in default_conf("k8s://https://kubernetes.default.svc:443")
