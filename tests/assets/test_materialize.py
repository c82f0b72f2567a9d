"""The full asset graph, materialized in-process on simulator data with local Spark."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetCheckSeverity, AssetKey, DagsterInstance, materialize
from offsetops.checks.dagster_checks import plain_metadata

from tests.assets.conftest import NUM_PARTITIONS, RUN_CONFIG, Materialized
from tests.support.slack_server import SlackTestServer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PARTITIONED = (
    "raw_segments",
    "coordinator_cache",
    "expiration_plan",
    "tombstone_execution",
    "cleaner_audit",
    "cache_validation",
)
SUMMARY = "offsets_topic_summary"


def by_partition(result: Any, asset: str) -> dict[int, dict[str, Any]]:
    """Plain metadata of each partition's materialization of ``asset`` in ``result``."""
    out = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key == AssetKey(asset):
            out[int(mat.partition)] = plain_metadata(mat.metadata)
    return out


def summary(result: Any) -> dict[str, Any]:
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key == AssetKey(SUMMARY):
            return plain_metadata(mat.metadata)
    raise AssertionError(f"no materialization of {SUMMARY}")


def evaluations(result: Any, check: str) -> dict[str | None, Any]:
    return {e.partition: e for e in result.get_asset_check_evaluations() if e.check_name == check}


def test_run_succeeds_and_materializes_every_partition(materialized: Materialized) -> None:
    result = materialized.result
    assert result.success, [e.message for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    seen: dict[str, set[str | None]] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        seen.setdefault(mat.asset_key.to_user_string(), set()).add(mat.partition)
    assert set(seen) == set(PARTITIONED) | {SUMMARY, "offsets_metrics"}
    for asset in PARTITIONED:
        assert seen[asset] == {str(p) for p in range(NUM_PARTITIONS)}, asset
    assert seen[SUMMARY] == {None}


def test_reload_matches_the_simulator_truth_partition_by_partition(materialized: Materialized) -> None:
    cache = by_partition(materialized.result, "coordinator_cache")
    inventory = by_partition(materialized.result, "raw_segments")
    for part in materialized.truth["partitions"]:
        p = part["partition"]
        assert cache[p]["groups"] == len(part["groups"]), p
        assert cache[p]["offsets"] == sum(len(g["offsets"]) for g in part["groups"]), p
        assert cache[p]["errors"] == 0
        assert inventory[p]["present"] is True
        assert inventory[p]["bytes"] == cache[p]["bytes"]
    assert sum(m["groups"] for m in cache.values()) > 0
    assert sum(m["bytes"] for m in cache.values()) > 0


def test_each_partition_carries_only_its_own_facts(materialized: Materialized) -> None:
    audit = by_partition(materialized.result, "cleaner_audit")
    report = json.loads((materialized.output_dir / "reports" / "cleaner_audit.json").read_text())
    truth = {d["partition"]: d for d in report["partitions"]}
    stalled = materialized.stalled_partition
    healthy = min(p for p, d in truth.items() if d["verdict"] == "HEALTHY")
    assert audit[healthy]["verdict"] == "HEALTHY" and audit[healthy]["findings"] == []
    assert audit[stalled]["verdict"] == "CRITICAL"
    worst = audit[stalled]["worst_finding"]
    assert worst.startswith("CRITICAL no_progress: cleaner made no progress for 2 d"), worst
    assert audit[stalled]["findings"][0]["severity"] == "CRITICAL"
    for p, meta in audit.items():
        assert meta["verdict"] == truth[p]["verdict"], p
        assert meta["size_bytes"] == truth[p]["size_bytes"], p
        assert meta["dirty_ratio"] == pytest.approx(truth[p]["dirty_ratio"]), p
        assert meta["size"].endswith(("B", "KiB", "MiB", "GiB"))
        ranks = [{"HEALTHY": 0, "DEGRADED": 1, "CRITICAL": 2}[f["severity"]] for f in meta["findings"]]
        assert ranks == sorted(ranks, reverse=True), f"findings of {p} not worst first"
        # Nothing topic-wide is copied onto a partition.
        assert not {"critical", "degraded", "partition_verdicts", "critical_partitions"} & set(meta)
        assert meta["as_of_ms"] == materialized.truth["simulated_until_ms"]


def test_numeric_metadata_is_typed_the_same_on_every_partition(materialized: Materialized) -> None:
    """The Plots tab draws a key per partition over runs only when it is always there and numeric."""
    for asset in ("cleaner_audit", "expiration_plan", "coordinator_cache", "raw_segments"):
        types: dict[str, set[str]] = {}
        keys = set()
        for event in materialized.result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            if mat.asset_key != AssetKey(asset):
                continue
            keys.add(frozenset(k for k, v in mat.metadata.items() if type(v).__name__ in NUMERIC))
            for k, v in mat.metadata.items():
                types.setdefault(k, set()).add(type(v).__name__)
        assert len(keys) == 1, f"{asset}: numeric keys differ between partitions"
        mixed = {k: t for k, t in types.items() if len(t) > 1}
        assert not mixed, f"{asset}: {mixed}"
    audit_types = {k: type(v).__name__ for k, v in _raw(materialized.result, "cleaner_audit", 0).items()}
    assert audit_types["dirty_ratio"] == "FloatMetadataValue"
    assert audit_types["size_bytes"] == "IntMetadataValue"
    assert audit_types["findings"] == "TableMetadataValue"
    assert audit_types["as_of"] == "TimestampMetadataValue"


NUMERIC = {"IntMetadataValue", "FloatMetadataValue"}


def _raw(result: Any, asset: str, partition: int) -> dict[str, Any]:
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key == AssetKey(asset) and mat.partition == str(partition):
            return dict(mat.metadata)
    raise AssertionError(f"no materialization of {asset} partition {partition}")


def test_each_partition_has_its_own_check_result(materialized: Materialized) -> None:
    verdicts = by_partition(materialized.result, "cleaner_audit")
    per_partition = evaluations(materialized.result, "partition_verdict")
    assert set(per_partition) == {str(p) for p in range(NUM_PARTITIONS)}
    for p, meta in verdicts.items():
        ev = per_partition[str(p)]
        assert ev.passed == (meta["verdict"] == "HEALTHY"), p
        if meta["verdict"] == "CRITICAL":
            assert ev.severity == AssetCheckSeverity.ERROR
        elif meta["verdict"] == "DEGRADED":
            assert ev.severity == AssetCheckSeverity.WARN
        assert ev.target_materialization_data is not None
    stalled = per_partition[str(materialized.stalled_partition)]
    assert "no_progress" in stalled.description and "Remedy:" in stalled.description

    plan = by_partition(materialized.result, "expiration_plan")
    forecast = evaluations(materialized.result, "no_offsets_expiring_soon")
    assert set(forecast) == {str(p) for p in range(NUM_PARTITIONS)}
    for p, meta in plan.items():
        assert forecast[str(p)].passed == (meta["forecast_groups"] == 0), p
        at_risk = meta["groups_at_risk"]
        assert all(g["partition"] == p for g in at_risk)
        soonest = [g["first_expiry_in_ms"] for g in at_risk]
        assert soonest == sorted(soonest), f"groups at risk of {p} not soonest first"


def test_the_failing_check_names_the_worst_partition_first(materialized: Materialized) -> None:
    run_check = evaluations(materialized.result, "cleaner_verdict")
    assert set(run_check) == {None}  # one result for the run's partitions together
    ev = run_check[None]
    assert not ev.passed and ev.severity == AssetCheckSeverity.ERROR
    stalled = materialized.stalled_partition
    assert ev.description.split("; ")[1].startswith(f"partition {stalled} CRITICAL: `no_progress`")
    failing = plain_metadata(ev.metadata)["failing_partitions"]
    assert failing[0]["partition"] == stalled and failing[0]["remedy"]
    assert [f["verdict"] for f in failing] == sorted(
        (f["verdict"] for f in failing), key=lambda v: v != "CRITICAL"
    )


def test_validation_emits_both_gx_checks_for_the_runs_partitions(materialized: Materialized) -> None:
    """One result per level for the run (the suite validates its partitions together), ERROR vs WARN."""
    validation = by_partition(materialized.result, "cache_validation")[0]
    error = evaluations(materialized.result, "gx_error_expectations")
    warning = evaluations(materialized.result, "gx_warning_expectations")
    assert set(error) == set(warning) == {None}
    assert error[None].severity == AssetCheckSeverity.ERROR
    assert warning[None].severity == AssetCheckSeverity.WARN
    assert error[None].passed is validation["success_error_level"] is True
    assert warning[None].passed == (validation["warning_failed"] == 0)
    meta = plain_metadata(error[None].metadata)
    assert meta["partitions"] == validation["validated_partitions"] == f"0-{NUM_PARTITIONS - 1}"
    assert meta["data_docs"] == validation["data_docs"]
    assert meta["expectations_passed"] == validation["expectations_passed"]


def test_topic_figures_live_in_the_summary_asset(materialized: Materialized) -> None:
    topic = summary(materialized.result)
    audit = by_partition(materialized.result, "cleaner_audit")
    assert topic["critical_partitions"] == sum(m["verdict"] == "CRITICAL" for m in audit.values()) >= 1
    assert topic["degraded_partitions"] == sum(m["verdict"] == "DEGRADED" for m in audit.values())
    assert topic["cleaner_verdict"] == "CRITICAL"
    assert topic["worst_partitions"][0]["partition"] == materialized.stalled_partition
    assert topic["size_bytes"] == sum(m["size_bytes"] for m in audit.values())
    plan = by_partition(materialized.result, "expiration_plan")
    assert topic["forecast_groups"] == sum(m["forecast_groups"] for m in plan.values())
    assert topic["offset_tombstones"] == sum(m["offset_tombstones"] for m in plan.values())


def test_every_run_reports_the_segment_bytes_it_read(materialized: Materialized) -> None:
    """Each asset that reads segments says how many bytes, per partition; the summary adds the run's
    reads up beside the topic's size; the metrics read none (they use the run's tables and reports)."""
    inventory = by_partition(materialized.result, "raw_segments")
    topic_bytes = sum(m["bytes"] for m in inventory.values())
    assert topic_bytes > 0
    read = by_partition(materialized.result, "coordinator_cache")
    assert {p: m["bytes_read"] for p, m in read.items()} == {p: m["bytes"] for p, m in inventory.items()}
    assert {m["run_bytes_read"] for m in read.values()} == {topic_bytes}
    # the cleaner audit judges the scans the reload made in its pass: it reads no segment itself
    audit = by_partition(materialized.result, "cleaner_audit")
    assert {m["bytes_read"] for m in audit.values()} == {0}
    assert {m["scan"] for m in audit.values()} == {"from the reload"}
    metrics = [
        plain_metadata(e.event_specific_data.materialization.metadata)
        for e in materialized.result.get_asset_materialization_events()
        if e.event_specific_data.materialization.asset_key == AssetKey("offsets_metrics")
    ]
    assert [m["bytes_read"] for m in metrics] == [0]
    topic = summary(materialized.result)
    assert topic["topic_size_bytes"] == topic_bytes
    assert topic["run_bytes_read_by_asset"] == {"cleaner_audit": 0, "coordinator_cache": topic_bytes}
    assert topic["run_bytes_read"] == topic_bytes
    assert topic["run_reads_of_topic"] == 1.0


def test_reports_are_written_where_the_metadata_says(materialized: Materialized) -> None:
    out = materialized.output_dir
    validation = by_partition(materialized.result, "cache_validation")[0]
    assert Path(validation["data_docs"]).is_file()
    assert Path(validation["data_docs"]) == out / "reports" / "data_docs" / "index.html"
    assert validation["success_error_level"] is True
    assert (
        validation["expectations_passed"] + validation["expectations_failed"]
        == validation["expectations"]
        > 0
    )
    audit = json.loads((out / "reports" / "cleaner_audit.json").read_text())
    assert audit["verdict"] == summary(materialized.result)["cleaner_verdict"]
    assert len(audit["partitions"]) == NUM_PARTITIONS
    assert audit["partitions"][0]["partition"] == materialized.stalled_partition  # worst first
    plan = json.loads((out / "reports" / "expiration_plan.json").read_text())
    assert plan["summary"]["forecast_offsets"] == summary(materialized.result)["forecast_offsets"]
    tombstones = by_partition(materialized.result, "tombstone_execution")[0]
    assert tombstones["mode"] == "dry_run" and tombstones["applied"] == 0
    assert (out / "tables" / "offsets").is_dir()


def test_the_operator_report_is_written_after_this_runs_audit_plan_and_checks(
    materialized: Materialized,
) -> None:
    """The summary runs last, so the one page an operator opens shows this run, worst partition first."""
    topic = summary(materialized.result)
    page = (materialized.output_dir / "reports" / "report.html").read_text(encoding="utf-8")
    assert topic["operator_verdict"] == "CRITICAL"
    assert topic["operator_report_url"].endswith("report.html")
    assert materialized.result.run_id in page
    assert f"{materialized.stalled_partition} (CRITICAL)" in page  # named in the verdict line


def _scan_file(materialized: Materialized) -> Path:
    from offsetops.assets.reload_scan import reload_scan_file

    return reload_scan_file(materialized.resources["state"])


def test_the_one_pass_audit_equals_the_audit_of_the_log_dir(materialized: Materialized) -> None:
    """The audit judged from the reload's scans is the audit of the same files read on their own."""
    from offsetops.coordinator_core.cleaner.audit import audit_log_dir

    audit = json.loads((materialized.output_dir / "reports" / "cleaner_audit.json").read_text())
    own = audit_log_dir(materialized.log_dir, now_ms=audit["audited_at_ms"], record_history=False)
    assert len(own.partitions) > 1
    assert {p["partition"]: _unjudged(p) for p in audit["partitions"] if p["segments"]} == {
        pa.partition: _unjudged(pa.to_json()) for pa in own.partitions
    }
    assert _scan_file(materialized).is_file()


#: what the run sets on a partition's audit beside its scan: its verdict, findings and history
_JUDGED = (
    "verdict",
    "reasons",
    "marked_uncleanable",
    "cleaning_in_progress",
    "live_size_bytes",
    "growth_bytes_per_hour",
    "checkpoint_advanced",
    "stalled_for_ms",
    "previous_audit_ms",
)


def _unjudged(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in _JUDGED}


def test_a_second_run_on_the_same_data_gives_the_same_verdicts(materialized: Materialized) -> None:
    """Same data, same declared clock, same state dir: nothing changes, not even the stalled partition."""
    from offsetops.assets.cleaner_audit import cleaner_audit
    from offsetops.assets.expiration import expiration_plan
    from offsetops.assets.partitions import all_partitions_tags

    again = materialize(
        [cleaner_audit, expiration_plan],
        resources=materialized.resources,
        instance=materialized.instance,
        tags=all_partitions_tags(NUM_PARTITIONS),
        run_config=RUN_CONFIG,
    )
    assert again.success
    # the reload scan on disk is the first run's: this run of the audit alone scans on its own
    mine = by_partition(again, "cleaner_audit")
    assert {m["scan"] for m in mine.values()} == {"own pass"}
    assert {m["scan_reason"] for m in mine.values()} == {f"the reload scan in {_scan_file(materialized)} was "
                                                         "made with another run_id"}  # fmt: skip
    assert sum(m["bytes_read"] for m in mine.values()) > 0
    for asset, key in (("cleaner_audit", "verdict"), ("expiration_plan", "forecast_groups")):
        first = {p: m[key] for p, m in by_partition(materialized.result, asset).items()}
        second = {p: m[key] for p, m in by_partition(again, asset).items()}
        assert second == first, asset
    for check in ("partition_verdict", "no_offsets_expiring_soon", "cleaner_verdict"):
        first_checks = {p: (e.passed, e.severity) for p, e in evaluations(materialized.result, check).items()}
        assert {p: (e.passed, e.severity) for p, e in evaluations(again, check).items()} == first_checks


def test_alert_sensor_pages_what_the_run_found(materialized: Materialized, tmp_path: Path) -> None:
    from dagster import build_sensor_context
    from offsetops.assets.alerting.sensors import offsetops_alerts
    from offsetops.assets.resources import SlackResource, StateResource

    audit = by_partition(materialized.result, "cleaner_audit")
    plan = summary(materialized.result)
    with SlackTestServer() as server:
        slack = SlackResource(token="xoxb-test-token", channel="#oncall", base_url=server.base_url)
        state = StateResource(output_dir=str(tmp_path))
        # The plans the run wrote, in a fresh state dir (its own alert memory, nothing fired yet).
        shutil.copytree(materialized.output_dir / "state" / "expiration", state.state_path / "expiration")
        context = build_sensor_context(
            instance=materialized.instance, resources={"slack": slack, "state": state}
        )
        first = offsetops_alerts(context)
        assert "alerts reconciled" in first.skip_message
        texts = [r.body["text"] for r in server.requests_to("chat.postMessage")]
        # One message per kind of change, worst first; nothing resolves on a first evaluation.
        assert not any(t.startswith("[RESOLVED]") for t in texts)
        critical = [p for p, m in audit.items() if m["verdict"] == "CRITICAL"]
        assert critical == [materialized.stalled_partition]
        assert texts[0].startswith(f"[CRITICAL] Log Cleaner CRITICAL on {len(critical)} partition")
        lost = any(t.startswith("[CRITICAL]") and "lost committed offsets" in t for t in texts)
        assert lost == bool(plan["offset_tombstones"] or plan["dead_groups"])
        expected = len(texts)
        # Nothing new materialized: the next tick does not even look.
        again = offsetops_alerts(
            build_sensor_context(
                instance=materialized.instance,
                cursor=context.cursor,
                resources={"slack": slack, "state": state},
            )
        )
        assert "no new" in again.skip_message
        assert len(server.requests_to("chat.postMessage")) == expected


def test_a_partition_absent_from_the_log_dir_is_an_empty_materialization(
    materialized: Materialized, tmp_path: Path
) -> None:
    from offsetops.assets.reload import coordinator_cache, raw_segments
    from offsetops.assets.resources import OffsetsSourceResource, StateResource

    partial = tmp_path / "logdir"
    partial.mkdir()
    (partial / "__consumer_offsets-3").symlink_to(materialized.log_dir / "__consumer_offsets-3")
    resources = {
        **materialized.resources,
        "offsets_source": OffsetsSourceResource(log_dir=str(partial)),
        "state": StateResource(output_dir=str(tmp_path / "out")),
    }
    result = materialize(
        [raw_segments, coordinator_cache],
        resources=resources,
        instance=DagsterInstance.ephemeral(),
        partition_key="7",
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )
    assert result.success
    inventory = by_partition(result, "raw_segments")[7]
    assert inventory["present"] is False and inventory["segments"] == 0
    cache = by_partition(result, "coordinator_cache")[7]
    assert cache["groups"] == 0 and cache["offsets"] == 0 and cache["errors"] == 0
