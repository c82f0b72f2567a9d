"""Every live path gives up within the connect timeout, and a dead cluster stops a run at once.

Real loopback servers misbehave as clusters do: a PLAINTEXT broker (Tansu) spoken to with
``security.protocol=SSL`` (the ClientHello is read as the start of a Kafka request, and nobody answers),
a listener that accepts and never answers, and one that closes every connection at once. kafka-python's
own connection check waited forever on the first and 30 s on the others.

The bound asserted is 2 x the configured connect timeout + 2 s (interpreter work, journaling).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from offsetops.coordinator_core.tombstones.journal import Journal

from offsetops.cli import main
from tests.coordinator_core.cleaner_audit.scenarios import healthy_partition
from tests.coordinator_core.expiration.scenario import DAY, ScenarioLog
from tests.coordinator_core.expiration.test_rules import NOW, RET, P, build_scenario
from tests.support.broker import TansuBroker, find_tansu_binary
from tests.support.tls import misbehaving_server

REPO = Path(__file__).resolve().parents[3]
TIMEOUT_MS = 1500
BOUND_S = 2 * TIMEOUT_MS / 1000 + 2
KINDS = ("ssl_to_plaintext", "silent", "closing")


@contextlib.contextmanager
def _cluster(kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OFFSETOPS_CONNECT_TIMEOUT_MS", str(TIMEOUT_MS))
    if kind == "ssl_to_plaintext":
        broker = request.getfixturevalue("kafka_broker")
        monkeypatch.setenv("OFFSETOPS_SECURITY_PROTOCOL", "SSL")
        yield broker.bootstrap
    else:
        with misbehaving_server(kind) as address:
            yield address


def _timed(fn, *args) -> tuple[object, float]:
    started = time.monotonic()
    result = fn(*args)
    return result, time.monotonic() - started


def _expire_argv(src: Path, address: str, journal: Path, executor: str = "admin") -> list[str]:
    argv = [
        "expire",
        str(src),
        "--now",
        str(NOW),
        "--retention-ms",
        str(RET),
        "--coordinator",
        "kip848",
        "--execute",
        "--executor",
        executor,
        "--bootstrap",
        address,
        "--journal-dir",
        str(journal),
    ]
    return [*argv, "--target-topic", "mirror"] if executor == "produce" else argv


@pytest.mark.parametrize("kind", KINDS)
def test_reload_gives_up_within_the_timeout(kind, request, monkeypatch, capsys) -> None:
    with _cluster(kind, request, monkeypatch) as address:
        code, elapsed = _timed(main, ["reload", "--bootstrap", address, "--json"])
    err = capsys.readouterr().err
    assert code == 2 and elapsed < BOUND_S, (code, elapsed)
    assert f"cannot reach Kafka at {address}" in err and "Traceback" not in err


@pytest.mark.parametrize("kind", KINDS)
def test_audit_gives_up_within_the_timeout(kind, request, monkeypatch, tmp_path, capsys) -> None:
    healthy_partition(tmp_path, 0)
    with _cluster(kind, request, monkeypatch) as address:
        code, elapsed = _timed(main, ["audit", str(tmp_path), "--bootstrap", address])
    err = capsys.readouterr().err
    assert code == 2 and elapsed < BOUND_S, (code, elapsed)
    assert f"cannot reach Kafka at {address}" in err


@pytest.mark.parametrize("executor", ["admin", "produce"])
@pytest.mark.parametrize("kind", KINDS)
def test_executors_stop_within_the_timeout(kind, executor, request, monkeypatch, tmp_path, capsys) -> None:
    src = build_scenario(tmp_path / "src")
    with _cluster(kind, request, monkeypatch) as address:
        code, elapsed = _timed(main, _expire_argv(src, address, tmp_path / "j", executor))
    err = capsys.readouterr().err
    assert code == 2 and elapsed < BOUND_S, (code, elapsed)
    assert "run stopped, 0 of" in err and "--resume" in err
    [plan] = (tmp_path / "j").glob("plan-*.json")
    journal = Journal.open(tmp_path / "j", json.loads(plan.read_text())["plan_id"])
    assert journal.statuses() == {}  # nothing marked failed: every item is still to do
    assert [e["event"] for e in journal.lines() if "event" in e] == ["created", "stopped"]


@pytest.mark.parametrize("kind", KINDS)
def test_dagster_resource_gives_up_within_the_timeout(kind, request, monkeypatch) -> None:
    from offsetops.assets.expiration import TombstoneExecutionConfig, _executor
    from offsetops.assets.resources import OffsetsSourceResource, StateResource
    from offsetops.coordinator_core.kafka_client import KafkaClientError

    with _cluster(kind, request, monkeypatch) as address:
        source = OffsetsSourceResource(bootstrap_servers=address)
        started = time.monotonic()
        with pytest.raises(KafkaClientError, match="cannot reach") as info:
            source.load_caches([0])
        assert time.monotonic() - started < BOUND_S
        executor = _executor(
            TombstoneExecutionConfig(mode="admin", confirm=True),
            source,
            StateResource(output_dir="unused"),
            "kip848",
        )
        assert executor.config.security_protocol == ("SSL" if kind == "ssl_to_plaintext" else "PLAINTEXT")
        started = time.monotonic()
        with pytest.raises(KafkaClientError, match="cannot reach"):
            executor.check()
        assert time.monotonic() - started < BOUND_S
    assert address in str(info.value)


@pytest.mark.broker
def test_dead_cluster_stops_the_run_and_the_journal_resumes(monkeypatch, tmp_path, capsys) -> None:
    """A silent cluster: one bounded check, not a timeout per item; the same command later finishes."""
    if find_tansu_binary() is None:
        pytest.skip("tansu binary not found")
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
    from kafka.admin import NewTopic
    from kafka.structs import OffsetAndMetadata

    monkeypatch.setenv("OFFSETOPS_CONNECT_TIMEOUT_MS", str(TIMEOUT_MS))
    topic, dead = f"ff-{uuid.uuid4().hex[:8]}", f"dead-{uuid.uuid4().hex[:8]}"
    log = ScenarioLog(P)
    for partition in range(4):
        log.commit(dead, topic, partition, 5, NOW - 9 * DAY)
    log.write(tmp_path / "snap")
    with misbehaving_server("silent") as address:
        argv = _expire_argv(tmp_path / "snap", address, tmp_path / "j")
        code, elapsed = _timed(main, argv)
    err = capsys.readouterr().err
    assert code == 2 and elapsed < BOUND_S, (code, elapsed)
    assert len(err.strip().splitlines()) == 2  # "plan journaled at ..." and the one-line error
    assert "run stopped, 0 of 5 item(s) applied" in err

    # The cluster comes back at the same address (the plan is bound to it).
    broker = TansuBroker.start(port=int(address.rpartition(":")[2]))
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15000)
        admin.create_topics([NewTopic(topic, 4, 1)])
        admin.close()
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=dead, enable_auto_commit=False)
        consumer.assign([TopicPartition(topic, p) for p in range(4)])
        consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(5, "", -1) for p in range(4)})
        consumer.close()
        assert main([*argv, "--json"]) == 0
    finally:
        broker.stop()
    execution = json.loads(capsys.readouterr().out)["execution"]
    assert execution["resumed"] and execution["complete"]
    assert execution["outcomes"] == {"applied_via_delete_groups": 4, "applied": 1}  # Tansu: no OffsetDelete


def test_dead_broker_prints_one_line_without_verbose(tmp_path) -> None:
    with misbehaving_server("closing") as address:
        env = {**os.environ, "OFFSETOPS_CONNECT_TIMEOUT_MS": str(TIMEOUT_MS)}
        quiet = subprocess.run(
            [sys.executable, "-m", "offsetops.cli", "reload", "--bootstrap", address],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert quiet.returncode == 2
    assert quiet.stderr.splitlines() == [quiet.stderr.strip()]
    assert quiet.stderr.startswith(f"offsetops: error: cannot reach Kafka at {address} (PLAINTEXT)")


@pytest.mark.broker
def test_an_unreachable_advertised_broker_is_named(tmp_path, capsys) -> None:
    """The bootstrap answers, but Metadata sends clients to an address nobody listens on."""
    if find_tansu_binary() is None:
        pytest.skip("tansu binary not found")
    from tests.support.broker import free_port

    elsewhere = free_port()
    broker = TansuBroker.start(advertised_port=elsewhere)
    try:
        code, elapsed = _timed(main, ["reload", "--bootstrap", broker.bootstrap])
    finally:
        broker.stop()
    err = capsys.readouterr().err
    assert code == 2 and elapsed < BOUND_S
    assert f"broker 111 at 127.0.0.1:{elsewhere}, as the cluster advertises it" in err
    assert "advertised.listeners" in err


def test_a_silent_bootstrap_server_leaves_time_for_the_next(kafka_broker) -> None:
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig, check_connection

    with misbehaving_server("silent") as silent:
        config = KafkaClientConfig(f"{silent},{kafka_broker.bootstrap}", connect_timeout_ms=TIMEOUT_MS)
        check, elapsed = _timed(check_connection, config)
    assert check.bootstrap == kafka_broker.bootstrap  # the second server, within the same deadline
    assert elapsed < TIMEOUT_MS / 1000 + 0.5


def test_an_unresolvable_host_is_a_clear_error() -> None:
    from offsetops.coordinator_core.kafka_client import (
        ClusterUnreachable,
        KafkaClientConfig,
        check_connection,
    )

    with pytest.raises(ClusterUnreachable, match=r"cannot resolve no-such-host\.invalid"):
        check_connection(KafkaClientConfig("no-such-host.invalid:9092", connect_timeout_ms=TIMEOUT_MS))


def test_dagster_asset_fails_with_the_one_line_error(tmp_path) -> None:
    from dagster import AssetKey, DagsterInstance, materialize
    from offsetops.assets.definitions import all_assets_and_checks
    from offsetops.assets.resources import OffsetsSourceResource, SlackResource, SparkResource, StateResource

    assets = [a for a in all_assets_and_checks() if getattr(a, "keys", set()) & {AssetKey("raw_segments")}]
    with misbehaving_server("closing") as address, DagsterInstance.ephemeral() as instance:
        resources = {
            "offsets_source": OffsetsSourceResource(bootstrap_servers=address),
            "spark": SparkResource(master="local[1]"),
            "state": StateResource(output_dir=str(tmp_path)),
            "slack": SlackResource(token=None),
        }
        result = materialize(
            assets, resources=resources, instance=instance, partition_key="0", raise_on_error=False
        )
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    error = failure.event_specific_data.error
    assert error.cls_name == "Failure"  # a dagster Failure with our message, not a crash
    assert f"cannot reach Kafka at {address} (PLAINTEXT)" in error.message


@pytest.mark.broker
@pytest.mark.parametrize("executor_name", ["admin", "produce"])
def test_a_cluster_lost_during_the_run_stops_it(executor_name, tmp_path) -> None:
    """The check passed, then the broker went away: the first failed request stops the run."""
    if find_tansu_binary() is None:
        pytest.skip("tansu binary not found")
    from offsetops.coordinator_core.expiration import plan_expiration
    from offsetops.coordinator_core.kafka_client import ClusterUnreachable, KafkaClientConfig
    from offsetops.coordinator_core.loader import load_partition_dir
    from offsetops.coordinator_core.sources.logdir import open_log_dir
    from offsetops.coordinator_core.tombstones.admin import AdminExecutor
    from offsetops.coordinator_core.tombstones.produce import ProduceExecutor
    from offsetops.coordinator_core.tombstones.runner import open_or_create_journal, plan_document

    caches = [load_partition_dir(p) for p in open_log_dir(build_scenario(tmp_path / "src")).partitions]
    plan = plan_expiration(caches, now_ms=NOW, retention_ms=RET, coordinator="kip848")
    broker = TansuBroker.start()
    config = KafkaClientConfig(broker.bootstrap, connect_timeout_ms=TIMEOUT_MS, request_timeout_ms=TIMEOUT_MS)
    executor = AdminExecutor(config) if executor_name == "admin" else ProduceExecutor(config, "mirror")
    try:
        executor.check()
        journal, _ = open_or_create_journal(
            tmp_path / "j", plan_document(plan, executor=executor, source=None)
        )
    finally:
        broker.stop()
    started = time.monotonic()
    with pytest.raises(ClusterUnreachable, match=broker.bootstrap):
        executor.apply(journal, journal.items)
    executor.close()
    assert time.monotonic() - started < BOUND_S + TIMEOUT_MS / 1000  # connect, then one request
    assert journal.statuses() == {}  # no item was marked failed: all still to do on a rerun


@pytest.mark.parametrize(
    "argv",
    [["groups"], ["describe", "--group", "g"], ["history", "--group", "g"], ["failover"]],
    ids=lambda a: a[0],
)
def test_every_reading_command_gives_up_within_the_timeout(argv, request, monkeypatch, capsys) -> None:
    """The commands that load the cache live share the one client configuration and its bound."""
    with _cluster("ssl_to_plaintext", request, monkeypatch) as address:
        code, elapsed = _timed(main, [*argv, "--bootstrap", address])
    err = capsys.readouterr().err
    assert code == 2 and elapsed < BOUND_S, (code, elapsed, err)
    assert f"cannot reach Kafka at {address} (SSL)" in err and "Traceback" not in err
