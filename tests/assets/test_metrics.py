"""The Dagster asset publishes the exporter's numbers: a node-exporter textfile and metadata.

The asset runs alone (no Spark) on a simulated log dir with data-topic partitions; the textfile is
parsed with prometheus_client's own parser and checked against the simulator's truth and against
``offsetops exporter --once`` on the same log dir.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dagster import materialize
from offsetops.assets.metrics import offsets_metrics
from offsetops.assets.resources import OffsetsSourceResource, StateResource
from prometheus_client.parser import text_string_to_metric_families

from offsetops.cli import main
from tests.support.simdirs import sim_with_data as sim_with_data
from tests.support.simdirs import truth_data, truth_offsets


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


@pytest.fixture(scope="module")
def published(sim_with_data, tmp_path_factory) -> dict[str, Any]:
    logdir, truth = sim_with_data
    out = tmp_path_factory.mktemp("metrics")
    textfile = out / "textfile" / "offsetops.prom"
    result = materialize(
        [offsets_metrics],
        resources={
            "offsets_source": OffsetsSourceResource(
                log_dir=str(logdir), num_partitions=truth["num_partitions"]
            ),
            "state": StateResource(output_dir=str(out)),
        },
        run_config={"ops": {"offsets_metrics": {"config": {"textfile": str(textfile)}}}},
    )
    assert result.success
    meta = result.get_asset_materialization_events()[0].materialization.metadata
    values = {k: getattr(v, "value", v) for k, v in meta.items()}
    return {"textfile": textfile, "meta": values, "truth": truth}


def test_textfile_parses_and_matches_the_truth(published) -> None:
    textfile: Path = published["textfile"]
    assert [p.name for p in textfile.parent.iterdir()] == ["offsetops.prom"]  # no temporary file left
    samples = _samples(textfile.read_text())
    truth = published["truth"]
    groups = sum(len(p["groups"]) for p in truth["partitions"])
    reload_groups = sum(v for (name, _), v in samples.items() if name == "offsetops_reload_groups")
    assert reload_groups == groups
    data = truth_data(truth)
    checked = 0
    for (group, topic, partition), o in truth_offsets(truth).items():
        d = data.get((topic, partition))
        if d is None or d.get("log_end_offset") is None:
            continue
        labels = (("group_id", group), ("partition_id", str(partition)), ("topic_name", topic))
        lag = samples[("offsetops_consumer_group_topic_partition_lag", labels)]
        assert lag == d["log_end_offset"] - o["offset"]
        checked += 1
    assert checked > 20


def test_metadata_carries_the_same_numbers_under_the_metric_names(published) -> None:
    samples = _samples(published["textfile"].read_text())
    meta = published["meta"]

    def total(name: str) -> float:
        return sum(v for (n, _), v in samples.items() if n == name)

    lag = "offsetops_consumer_group_topic_partition_lag"
    assert meta[f"sum({lag})"] == total(lag) > 0
    assert meta["sum(offsetops_reload_records)"] == total("offsetops_reload_records") > 0
    loads = [v for (n, _), v in samples.items() if n == "offsetops_coordinator_load_estimated_seconds"]
    assert meta["max(offsetops_coordinator_load_estimated_seconds)"] == max(loads)
    assert meta["offsetops_cleaner_status"] == samples[("offsetops_cleaner_status", ())]
    assert meta["series"] == len(samples)


def test_same_families_and_values_as_the_exporter(published, sim_with_data, capsys) -> None:
    logdir, _truth = sim_with_data
    assert main(["exporter", str(logdir), "--once"]) == 0
    served = _samples(capsys.readouterr().out)
    served = {k: v for k, v in served.items() if not k[0].startswith("offsetops_exporter_")}
    written = _samples(published["textfile"].read_text())
    # Same names; the asset also reports the partitions with no data (empty caches): equal values
    # wherever both have a series, with reload timings aside.
    assert {k[0] for k in served} == {k[0] for k in written}
    timing = "offsetops_reload_duration_seconds"
    common = [k for k in served if k in written and k[0] != timing]
    assert len(common) > 100
    assert all(served[k] == written[k] for k in common)


def test_audit_report_carries_a_calibrated_failover_forecast(sim_with_data, tmp_path) -> None:
    """rebuild_audit_report forecasts from the merged partitions, calibrated by a broker log line; the
    topic summary's metadata names the slow partitions."""
    from offsetops.assets.cleaner_audit import _record_latest, rebuild_audit_report
    from offsetops.assets.summary import audit_summary_metadata
    from offsetops.coordinator_core.cleaner.audit import audit_log_dir
    from offsetops.coordinator_core.clock import resolve_clock
    from offsetops.coordinator_core.failover import read_load_logs

    logdir, _truth = sim_with_data
    clock = resolve_clock(logdir)
    audit = audit_log_dir(logdir, now_ms=clock.as_of_ms, record_history=False)
    state = StateResource(output_dir=str(tmp_path))
    _record_latest(state, audit, [p.partition for p in audit.partitions], clock)
    biggest = max(audit.partitions, key=lambda p: p.size_bytes)
    log = tmp_path / "server.log"
    log.write_text(
        "[2023-11-15 03:00:00,000] INFO [GroupMetadataManager brokerId=1] Finished loading offsets and group "
        f"metadata from __consumer_offsets-{biggest.partition} in 20000 milliseconds for epoch 3 "
        "(kafka.coordinator.group.GroupMetadataManager)\n"
    )
    report = rebuild_audit_report(state, 10_000, read_load_logs([log]))
    fo = report["failover"]
    assert fo["calibration"]["source"] == "broker_log"
    rate = biggest.size_bytes / 20.0  # its current size in the 20 s the broker took
    assert fo["calibration"]["bytes_per_second"] == pytest.approx(rate, abs=0.1)
    expect = {p.partition for p in audit.partitions if p.size_bytes / rate * 1000 > 10_000}
    assert set(fo["slow_partitions"]) == expect | {biggest.partition}
    meta = audit_summary_metadata(report)
    assert meta["failover_slow_partitions"].value == len(fo["slow_partitions"])
    assert meta["failover_worst_partition"].value == biggest.partition
    assert meta["failover_worst_load_ms"].value == 20_000
