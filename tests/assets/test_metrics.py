"""The Dagster asset publishes the exporter's numbers: a node-exporter textfile and metadata.

The asset runs after the Spark reload and the cleaner audit (local Spark) on simulated log dirs with
data-topic partitions, and reads only what they published; the textfile is parsed with
prometheus_client's own parser and checked against the simulator's truth, against
``offsetops exporter --once`` on the same log dir, and family by family against the snapshot computed
by reading the log dir again (the reload in this process and the audit's own record scan).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dagster import materialize
from offsetops.assets.cleaner_audit import cleaner_audit
from offsetops.assets.metrics import offsets_metrics, write_textfile
from offsetops.assets.partitions import all_partitions_tags
from offsetops.assets.reload import coordinator_cache
from offsetops.assets.resources import OffsetsSourceResource, SparkResource, StateResource
from prometheus_client.parser import text_string_to_metric_families

from offsetops.cli import main
from tests.assets.conftest import java_available
from tests.support.simdirs import sim_share_streams as sim_share_streams
from tests.support.simdirs import sim_with_data as sim_with_data
from tests.support.simdirs import truth_data, truth_offsets

#: Reload timings differ between any two reads; everything else must not.
TIMING = "offsetops_reload_duration_seconds"

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _samples(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def _families(samples: Samples) -> dict[str, Samples]:
    out: dict[str, Samples] = {}
    for key, value in samples.items():
        out.setdefault(key[0], {})[key] = value
    return out


def _publish(logdir: Path, num_partitions: int, out: Path) -> dict[str, Any]:
    """The reload, the cleaner audit and the metrics of every partition, in one run on local Spark."""
    if not java_available():
        pytest.skip("Java is needed for a local SparkSession")
    textfile = out / "textfile" / "offsetops.prom"
    resources = {
        "offsets_source": OffsetsSourceResource(log_dir=str(logdir), num_partitions=num_partitions),
        "spark": SparkResource(master="local[2]", app_name="offsetops-metrics-tests"),
        "state": StateResource(output_dir=str(out)),
    }
    result = materialize(
        [coordinator_cache, cleaner_audit, offsets_metrics],
        resources=resources,
        tags=all_partitions_tags(num_partitions),
        run_config={
            "loggers": {"console": {"config": {"log_level": "WARNING"}}},
            "ops": {"offsets_metrics": {"config": {"textfile": str(textfile)}}},
        },
    )
    assert result.success
    (event,) = [
        e for e in result.get_asset_materialization_events()
        if e.materialization.asset_key.to_user_string() == "offsets_metrics"
    ]  # fmt: skip
    values = {k: getattr(v, "value", v) for k, v in event.materialization.metadata.items()}
    return {"textfile": textfile, "meta": values, "resources": resources, "out": out}


def _reread_textfile(published: dict[str, Any]) -> Path:
    """The textfile as the asset computed it before it read the run's outputs: a reload of every
    partition in this process and a cleaner audit of the log dir, as of the same clock and history."""
    from offsetops.coordinator_core.data_offsets import offline_offsets
    from offsetops.coordinator_core.describe import GroupFilter, wanted_partitions
    from offsetops.coordinator_core.failover import DEFAULT_SLOW_MS
    from offsetops.coordinator_core.metrics_snapshot import compute_snapshot, snapshot_metrics

    source: OffsetsSourceResource = published["resources"]["offsets_source"]
    state: StateResource = published["resources"]["state"]
    clock, run = source.clock(), source.settings()
    caches = source.load_caches(list(range(run["num_partitions"])))
    log_dir = str(source.open_log_dir().path)
    snap = compute_snapshot(
        caches,
        offline_offsets([log_dir], wanted_partitions(caches, GroupFilter())),
        log_dir=log_dir,
        now_ms=clock.as_of_ms,
        retention_ms=run.retention_ms,
        forecast_horizon_ms=run.forecast_horizon_ms,
        failover_threshold_ms=DEFAULT_SLOW_MS,
        taken_at=0.0,
        settings=run,
        audit_state_dir=str(state.audit_history_dir),
    )
    path = published["out"] / "reread" / "offsetops.prom"
    write_textfile(path, list(snapshot_metrics(snap)))
    return path


@pytest.fixture(scope="module")
def published(sim_with_data, tmp_path_factory) -> dict[str, Any]:
    logdir, truth = sim_with_data
    return {**_publish(logdir, truth["num_partitions"], tmp_path_factory.mktemp("metrics")), "truth": truth}


@pytest.fixture(scope="module")
def published_share_streams(sim_share_streams, tmp_path_factory) -> dict[str, Any]:
    logdir, truth = sim_share_streams
    return _publish(logdir, truth["num_partitions"], tmp_path_factory.mktemp("metrics-share-streams"))


@pytest.mark.parametrize("which", ["published", "published_share_streams"])
def test_same_textfile_as_reading_the_log_dir_again_family_by_family(which: str, request) -> None:
    published = request.getfixturevalue(which)
    written = _families(_samples(published["textfile"].read_text()))
    reread = _families(_samples(_reread_textfile(published).read_text()))
    assert sorted(written) == sorted(reread)
    for name in reread:
        if name == TIMING:
            assert written[name].keys() == reread[name].keys()
        else:
            assert written[name] == reread[name], name
    assert len(written["offsetops_cleaner_partition_dirty_ratio"]) > 0
    assert published["meta"]["bytes_read"] == 0


def test_share_and_streams_figures_come_back_from_the_tables(published_share_streams) -> None:
    fams = _families(_samples(published_share_streams["textfile"].read_text()))
    epochs = {dict(k[1])["group_type"] for k in fams["offsetops_group_assignment_epoch"]}
    assert epochs == {"share", "streams"}
    assert sum(fams["offsetops_streams_group_tasks"].values()) > 0


def test_metrics_need_the_published_tables(sim_with_data, tmp_path) -> None:
    """Without a reload's tables the asset says what to materialize first; it never reads the log."""
    if not java_available():
        pytest.skip("Java is needed for a local SparkSession")
    logdir, truth = sim_with_data
    result = materialize(
        [offsets_metrics],
        resources={
            "offsets_source": OffsetsSourceResource(
                log_dir=str(logdir), num_partitions=truth["num_partitions"]
            ),
            "spark": SparkResource(master="local[2]", app_name="offsetops-metrics-tests"),
            "state": StateResource(output_dir=str(tmp_path)),
        },
        raise_on_error=False,
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "materialize coordinator_cache" in str(failure.event_specific_data.error.message)


def test_before_any_audit_the_cleaner_families_are_left_out_and_a_bad_report_is_named(
    sim_with_data, tmp_path
) -> None:
    """No audit report yet: every other family, no cleaner one. A report that is not an audit's: the
    asset fails naming the file, rather than publishing numbers it could not read."""
    if not java_available():
        pytest.skip("Java is needed for a local SparkSession")
    logdir, truth = sim_with_data
    textfile = tmp_path / "offsetops.prom"
    resources = {
        "offsets_source": OffsetsSourceResource(log_dir=str(logdir), num_partitions=truth["num_partitions"]),
        "spark": SparkResource(master="local[2]", app_name="offsetops-metrics-tests"),
        "state": StateResource(output_dir=str(tmp_path / "out")),
    }
    run_config = {"ops": {"offsets_metrics": {"config": {"textfile": str(textfile)}}}}
    first = materialize(
        [coordinator_cache, offsets_metrics],
        resources=resources,
        tags=all_partitions_tags(truth["num_partitions"]),
        run_config=run_config,
    )
    assert first.success
    names = set(_families(_samples(textfile.read_text())))
    assert "offsetops_reload_records" in names
    assert not {n for n in names if n.startswith("offsetops_cleaner_")}
    report = tmp_path / "out" / "reports" / "cleaner_audit.json"
    report.write_text('{"verdict": "HEALTHY", "partitions": [{"partition": 0}]}')
    second = materialize([offsets_metrics], resources=resources, run_config=run_config, raise_on_error=False)
    assert not second.success
    (failure,) = [e for e in second.all_events if e.event_type_value == "STEP_FAILURE"]
    message = str(failure.event_specific_data.error.message)
    assert f"the cleaner audit report {report} is not usable" in message
    assert "partitions[0]: clean_bytes is None" in message


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
