"""The live reload on Spark executors equals the single-process live reload (Tansu on loopback,
``local[2]`` Spark): every table, stats included; over TLS with the settings shipped to the executors;
and an executor that cannot reach the cluster stops the job with one line."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from offsetops.coordinator_core.kafka_client import KafkaClientConfig
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.records.reader import read_batches
from offsetops.coordinator_core.simulator import SimulationResult
from offsetops.coordinator_core.sources.live import (
    LiveSource,
    LiveSourceError,
    load_live_partition,
    plan_fetch_ranges,
)
from offsetops.coordinator_core.sources.ranges import FetchRange
from offsetops.pipelines.live import run_live_reload
from offsetops.pipelines.reload import ReloadOptions, read_tables
from offsetops.pipelines.schemas import TABLE_SCHEMAS
from offsetops.pipelines.tables import all_cache_rows, comparable

from offsetops.cli import main
from tests.support.broker import BrokerClient, TansuBroker, free_port, mirror_log_dir, replay_batches
from tests.support.bulk_log import STRADDLING_KINDS, BulkBatch, bulk_partition, straddling
from tests.support.tls import TLSBroker, make_test_ca

pytestmark = [pytest.mark.broker, pytest.mark.spark]

PARTITIONS = 3  # of the simulated cluster (sim_txn)


def single_process(
    config: KafkaClientConfig, topic: str, num_partitions: int = PARTITIONS
) -> dict[str, list]:
    """The reference: ``offsetops reload --bootstrap``'s read, one partition after the other."""
    with LiveSource(config, topic=topic) as source:
        caches = [load_live_partition(source, p, num_partitions=num_partitions) for p in source.partitions()]
    return all_cache_rows(caches)


def same_rows(got: dict[str, list], want: dict[str, list], *, drop_producer_ids: bool = False) -> None:
    for name, schema in TABLE_SCHEMAS.items():
        drop = ["elapsed_ms"] if name == "load_stats" else []
        if drop_producer_ids and "producer_id" in schema.fieldNames():
            drop.append("producer_id")
        assert comparable(got[name], schema, drop=drop) == comparable(want[name], schema, drop=drop), name


def assert_same_tables(spark, output: Path, reference: dict[str, list]) -> None:
    tables = read_tables(spark, str(output))
    same_rows({name: [tuple(r) for r in tables[name].collect()] for name in TABLE_SCHEMAS}, reference)


@pytest.fixture(scope="module")
def mirror(kafka_broker: TansuBroker, sim_txn: SimulationResult) -> str:
    topic = f"offsets-mirror-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        mirror_log_dir(bc, sim_txn.out_dir, topic, partitions=PARTITIONS)
    return topic


@pytest.mark.slow
def test_distributed_live_reload_equals_the_single_process_one(
    spark, kafka_broker: TansuBroker, mirror: str, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "live"
    argv = [
        "pipeline",
        "live",
        "--bootstrap",
        kafka_broker.bootstrap,
        "--topic",
        mirror,
        "--output",
        str(out),
    ]
    argv += ["--master", "local[2]", "--num-partitions", str(PARTITIONS), "--max-range-offsets", "10000"]
    code = main(argv)
    printed, err = capsys.readouterr()
    assert code == 0, err
    ranges = int(re.search(r"3 partitions in (\d+) fetch ranges", printed).group(1))
    assert ranges > 2 * PARTITIONS, printed  # the big partitions were cut, several times each
    reference = single_process(KafkaClientConfig(kafka_broker.bootstrap), mirror)
    assert reference["offsets"] and reference["pending_offsets"], "open transactions must be exercised"
    assert_same_tables(spark, out, reference)


# -- a million offsets ------------------------------------------------------------------------------------

BULK_PARTITIONS = 2
BULK_OFFSETS = 520_000  # per partition
BULK_CUT = 100_000  # --max-range-offsets: every cut lies inside a batch (bulk_partition makes it so)


@pytest.fixture(scope="module")
def bulk_mirror(kafka_broker: TansuBroker) -> tuple[str, dict[int, list[BulkBatch]]]:
    """Two partitions of over half a million offsets each, in large compressed batches, on the broker."""
    cuts = range(BULK_CUT, BULK_OFFSETS, BULK_CUT)
    logs = {p: bulk_partition(seed=p + 1, offsets=BULK_OFFSETS, cuts=cuts) for p in range(BULK_PARTITIONS)}
    topic = f"bulk-offsets-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic, partitions=BULK_PARTITIONS)
        for p, batches in logs.items():
            replay_batches(bc, topic, p, ((b.producer_id, b.data) for b in batches))
    return topic, logs


def folded(logs: dict[int, list[BulkBatch]]) -> dict[str, list]:
    """The tables of the batches as they were produced, folded without a broker."""
    caches = []
    for p, batches in sorted(logs.items()):
        fold = PartitionFold(partition=p)
        records = b"".join(b.data for b in batches)
        fold.add_batches(read_batches(records, file="produced", partition=p, errors=fold.stats.errors))
        fold.stats.segments = 0  # a live read has no segment files
        caches.append(fold.finish(num_partitions=BULK_PARTITIONS))
    return all_cache_rows(caches)


@pytest.mark.slow
def test_pipeline_live_over_a_million_offsets_cut_inside_batches(
    spark, kafka_broker: TansuBroker, bulk_mirror, tmp_path: Path, capsys
) -> None:
    """``pipeline live`` over 1,040,000 offsets in ranges of 100,000, each cut inside a batch (plain
    compressed, compacted with gaps, transactional): the tables equal the single-process read, and
    both equal the log as produced, every record read once."""
    topic, logs = bulk_mirror
    assert sum(batches[-1].last_offset + 1 for batches in logs.values()) >= 1_000_000
    cut_inside = [
        straddling(batches, c) for batches in logs.values() for c in range(BULK_CUT, BULK_OFFSETS, BULK_CUT)
    ]
    assert all(cut_inside) and {b.kind for b in cut_inside if b} == set(STRADDLING_KINDS)
    # Tansu bounds the work of a Fetch by fetch.max.wait.ms (docs/test-broker.md): give it the time a
    # Kafka broker would not need. 1 MiB fetches make every range resume after several responses.
    props = tmp_path / "client.properties"
    props.write_text(
        f"bootstrap.servers={kafka_broker.bootstrap}\nfetch.max.wait.ms=5000\nmax.partition.fetch.bytes=1048576\n"
    )
    out = tmp_path / "live"
    argv = ["pipeline", "live", "--client-config", str(props), "--topic", topic, "--output", str(out)]
    argv += [
        "--master",
        "local[2]",
        "--num-partitions",
        str(BULK_PARTITIONS),
        "--max-range-offsets",
        str(BULK_CUT),
    ]
    code = main(argv)
    printed, err = capsys.readouterr()
    assert code == 0, err
    expected = sum(-(-(batches[-1].last_offset + 1) // BULK_CUT) for batches in logs.values())
    assert f"{BULK_PARTITIONS} partitions in {expected} fetch ranges" in printed, printed
    reference = single_process(KafkaClientConfig.from_file(props), topic, num_partitions=BULK_PARTITIONS)
    assert reference["offsets"] and reference["pending_offsets"], "open transactions must be exercised"
    # The replay swaps each producer id for one the broker issued (BrokerClient.replay).
    same_rows(reference, folded(logs), drop_producer_ids=True)
    assert_same_tables(spark, out, reference)


@pytest.mark.slow
def test_an_executor_that_cannot_reach_the_cluster_stops_the_job_in_one_line(spark, tmp_path: Path) -> None:
    config = KafkaClientConfig(f"127.0.0.1:{free_port()}", connect_timeout_ms=1500)
    with pytest.raises(LiveSourceError) as caught:
        run_live_reload(spark, config, str(tmp_path / "out"), topic="t", ranges=[FetchRange(0, 0, 10)])
    message = str(caught.value)
    assert message.startswith("fetching t-0 from offset 0 failed on executor ")
    assert config.bootstrap_servers in message and "Traceback" not in message and "\n" not in message


@pytest.mark.slow
def test_executors_fetch_over_tls_with_the_shipped_settings(
    spark, kafka_tls_broker: TLSBroker, sim_txn: SimulationResult, tmp_path: Path, capfd
) -> None:
    tb = kafka_tls_broker
    # The client key is encrypted: an executor can only open it with the shipped ssl.key.password.
    config = KafkaClientConfig(
        tb.bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(tb.ca.ca_cert),
        ssl_certfile=str(tb.ca.client_cert),
        ssl_keyfile=str(tb.ca.client_key),
        ssl_password=tb.ca.client_key_password,
        connect_timeout_ms=3000,
    )
    from kafka.net.compat import KafkaNetClient

    tls = {
        k: v
        for k, v in config.client_kwargs(KafkaNetClient).items()
        if k not in ("bootstrap_servers", "client_id", "request_timeout_ms")
    }
    topic = f"tls-mirror-{uuid.uuid4().hex[:8]}"
    with BrokerClient(tb.bootstrap, **tls) as bc:
        mirror_log_dir(bc, sim_txn.out_dir, topic, partitions=PARTITIONS, only=[2])  # the smallest one
    with LiveSource(config, topic=topic) as source:
        ranges = plan_fetch_ranges(source, max_offsets=40)
    assert len([r for r in ranges if r.partition == 2]) > 1
    options = ReloadOptions(num_partitions=PARTITIONS)
    run_live_reload(spark, config, str(tmp_path / "tls"), options, topic=topic, ranges=ranges)
    assert_same_tables(spark, tmp_path / "tls", single_process(config, topic))

    # The same ranges with another CA: the executors verify the broker with the shipped CA, and fail.
    other = make_test_ca(tmp_path / "other-pki")
    with pytest.raises(LiveSourceError) as caught:
        run_live_reload(
            spark,
            config.replace(ssl_cafile=str(other.ca_cert)),
            str(tmp_path / "bad"),
            options,
            topic=topic,
            ranges=ranges,
        )
    assert "on executor" in str(caught.value) and "TLS certificate verification failed" in str(caught.value)
    printed = capfd.readouterr()
    assert tb.ca.client_key_password not in str(caught.value) + printed.out + printed.err


@pytest.mark.slow
def test_executors_attempt_sasl_with_the_shipped_settings(
    spark, kafka_broker: TansuBroker, tmp_path: Path, capfd
) -> None:
    """Tansu refuses every SASL mechanism: the executors' error shows they attempted SASL SCRAM (a
    plaintext client would have read the topic), and the password appears nowhere."""
    canary = "sasl-executor-canary-51d7"
    config = KafkaClientConfig(
        kafka_broker.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="offsetops",
        sasl_plain_password=canary,
        connect_timeout_ms=3000,
    )
    with pytest.raises(LiveSourceError) as caught:
        run_live_reload(spark, config, str(tmp_path / "out"), topic="t", ranges=[FetchRange(0, 0, 10)])
    message = str(caught.value)
    assert "on executor" in message and "SASL handshake refused" in message and "SCRAM-SHA-512" in message
    printed = capfd.readouterr()
    assert canary not in message + printed.out + printed.err


def test_cli_names_an_unreachable_cluster_before_starting_spark(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setenv("OFFSETOPS_CONNECT_TIMEOUT_MS", "1000")
    address = f"127.0.0.1:{free_port()}"
    code = main(["pipeline", "live", "--bootstrap", address, "--output", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"offsetops pipeline live: cannot reach Kafka at {address}")
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()
