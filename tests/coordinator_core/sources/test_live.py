"""LiveSource against a real Kafka-protocol broker (Tansu on loopback), plus its config handling.

Tansu does not expose ``__consumer_offsets`` (its coordinator keeps state in its storage engine), so
the batches of real segment files are replayed byte for byte into an ordinary topic and read back.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from coordinator_core.errors import DecodeError
from coordinator_core.records.reader import iter_segment_batches
from coordinator_core.sources.live import (
    LiveConfig,
    LiveSource,
    LiveSourceError,
    complete_prefix,
    parse_properties,
)
from tests.support.broker import (
    BrokerClient,
    TansuBroker,
    end_txn_marker,
    find_tansu_binary,
    free_port,
    kafka_python_batch,
)
from tests.support.shared import REAL_KAFKA_DIR

SEGMENTS = [
    "DanielMorales9__kafkafun/__consumer_offsets-13/00000000000000000000.log",
    "DanielMorales9__kafkafun/__consumer_offsets-39/00000000000000000000.log",
]
# Tansu stores magic 2 only and answers a magic-0/1 Produce with UNKNOWN_PRODUCER_ID (59), so legacy
# segments are checked at the framing level below instead of through the broker.
LEGACY_SEGMENT = "xpxwo100__bullShit/__consumer_offsets-40/00000000000000000000.log"


def _segment(rel: str) -> Path:
    path = REAL_KAFKA_DIR / rel
    if not path.is_file():
        pytest.skip(f"real Kafka segment not found: {path}")
    return path


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _key_values(batches: list) -> list[tuple[bytes | None, bytes | None]]:
    return [
        (k if k is None else bytes(k), v if v is None else bytes(v))
        for b in batches
        for (_o, _t, k, v) in b.iter_records()
    ]


@pytest.mark.broker
@pytest.mark.parametrize("rel", SEGMENTS, ids=lambda r: r.split("/")[0] + ":" + r.split("/")[1])
def test_replayed_segment_reads_back_record_for_record(kafka_broker: TansuBroker, rel: str) -> None:
    errors: list[DecodeError] = []
    file_batches = list(iter_segment_batches(_segment(rel), errors=errors))
    assert errors == []
    topic = _topic("replay")
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic)
        for batch in file_batches:
            bc.produce_raw(topic, 0, batch.raw())
    # A small fetch size forces many Fetch round trips through the offset bookkeeping.
    config = LiveConfig(bootstrap_servers=kafka_broker.bootstrap, fetch_max_bytes=4096)
    live_errors: list[DecodeError] = []
    with LiveSource(config, topic=topic) as source:
        assert source.partitions() == [0]
        live = list(source.iter_batches(0, live_errors))
        end = source.end_offsets()[0]
    assert live_errors == []
    assert len(live) == len(file_batches)
    assert _key_values(live) == _key_values(file_batches)
    assert [b.magic for b in live] == [b.magic for b in file_batches]
    assert live[-1].next_offset == end


@pytest.mark.broker
def test_open_transactions_and_control_batches_are_kept(kafka_broker: TansuBroker) -> None:
    topic = _topic("txn")
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic, partitions=2)
        pid, epoch = bc.init_producer_id()
        bc.produce_raw(topic, 1, kafka_python_batch([(b"plain", b"1")]))
        bc.produce_raw(
            topic,
            1,
            kafka_python_batch(
                [(b"t1", b"a"), (b"t2", b"b")],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=0,
                transactional=True,
            ),
        )
        bc.produce_raw(
            topic,
            1,
            kafka_python_batch(
                [end_txn_marker(commit=False, coordinator_epoch=7)],
                producer_id=pid,
                producer_epoch=epoch,
                transactional=True,
                control=True,
            ),
        )
        # Left open on purpose: READ_UNCOMMITTED must still return it.
        bc.produce_raw(
            topic,
            1,
            kafka_python_batch(
                [(b"t3", b"c")], producer_id=pid, producer_epoch=epoch, base_sequence=2, transactional=True
            ),
        )
    errors: list[DecodeError] = []
    with LiveSource(LiveConfig(bootstrap_servers=kafka_broker.bootstrap), topic=topic) as source:
        assert source.partitions() == [0, 1]
        assert source.end_offsets() == {0: 0, 1: 5}
        assert list(source.iter_batches(0, errors)) == []
        batches = list(source.iter_batches(1, errors))
    assert errors == []
    shape = [(b.base_offset, b.last_offset, b.producer_id, b.is_transactional, b.is_control) for b in batches]
    assert shape == [
        (0, 0, -1, False, False),
        (1, 2, pid, True, False),
        (3, 3, pid, True, True),
        (4, 4, pid, True, False),
    ]
    assert next(iter(batches[2].iter_records()))[2:] == end_txn_marker(commit=False, coordinator_epoch=7)


@pytest.mark.broker
def test_start_offset_inside_a_batch_and_end_offset_bound(kafka_broker: TansuBroker) -> None:
    topic = _topic("bounds")
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic)
        bc.produce_raw(topic, 0, kafka_python_batch([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]))
        bc.produce_raw(topic, 0, kafka_python_batch([(b"d", b"4")]))
        bc.produce_raw(topic, 0, kafka_python_batch([(b"e", b"5")]))
    with LiveSource(LiveConfig(bootstrap_servers=kafka_broker.bootstrap), topic=topic) as source:
        got = list(source.iter_batches(0, [], start_offset=1, end_offset=4))
    # The batch holding offset 1 comes whole (Fetch semantics); the batch at 4 is past the end.
    assert [(b.base_offset, b.last_offset) for b in got] == [(0, 2), (3, 3)]


@pytest.mark.broker
def test_missing_topic_is_a_clear_error(kafka_broker: TansuBroker) -> None:
    with (
        LiveSource(LiveConfig(bootstrap_servers=kafka_broker.bootstrap), topic=_topic("nope")) as source,
        pytest.raises(LiveSourceError, match="does not exist"),
    ):
        source.partitions()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_broker_fails_fast_naming_the_address() -> None:
    address = f"127.0.0.1:{_closed_port()}"
    config = LiveConfig(
        bootstrap_servers=address, sasl_plain_password="hunter2-secret", connect_timeout_ms=2000
    )
    started = time.monotonic()
    with pytest.raises(LiveSourceError) as info:
        LiveSource(config).partitions()
    assert time.monotonic() - started < 8
    assert address in str(info.value)
    assert "hunter2-secret" not in str(info.value)


def test_default_connect_timeout_is_bounded() -> None:
    assert LiveConfig(bootstrap_servers="h:9092").connect_timeout_ms <= 10_000


@pytest.mark.broker
def test_rejected_sasl_login_fails_within_the_timeout() -> None:
    """A broker that demands authentication and knows no such user: a clear, bounded failure."""
    tansu = find_tansu_binary()
    if tansu is None:
        pytest.skip("tansu binary not found")
    # A dedicated broker: the shared one runs without --authentication.
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            str(tansu),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
            "--authentication",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        config = LiveConfig(
            bootstrap_servers=f"127.0.0.1:{port}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="mallory",
            sasl_plain_password="wrong-password-123",
            connect_timeout_ms=3000,
        )
        started = time.monotonic()
        with pytest.raises(LiveSourceError) as info:
            LiveSource(config).partitions()
        assert time.monotonic() - started < 8
        assert f"127.0.0.1:{port}" in str(info.value)
        assert "wrong-password-123" not in str(info.value)
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def test_repr_hides_the_password() -> None:
    config = LiveConfig(
        bootstrap_servers="b1:9093,b2:9093",
        security_protocol="sasl_ssl",
        sasl_mechanism="PLAIN",
        sasl_plain_username="svc",
        sasl_plain_password="p@ss-w0rd",
    )
    for text in (repr(config), str(config), repr(LiveSource(config)), f"{config}"):
        assert "p@ss-w0rd" not in text
        assert "'***'" in text
        assert "b1:9093,b2:9093" in text
    assert config.security_protocol == "SASL_SSL"
    assert config.client_kwargs()["sasl_plain_password"] == "p@ss-w0rd"


def test_from_env() -> None:
    config = LiveConfig.from_env(
        {
            "OFFSETOPS_BOOTSTRAP_SERVERS": "k1:9092,k2:9092",
            "OFFSETOPS_SECURITY_PROTOCOL": "SASL_SSL",
            "OFFSETOPS_SASL_MECHANISM": "scram-sha-512",
            "OFFSETOPS_SASL_USERNAME": "ops",
            "OFFSETOPS_SASL_PASSWORD": "s3cr3t",
            "OFFSETOPS_SSL_CAFILE": "/etc/ca.pem",
            "OFFSETOPS_REQUEST_TIMEOUT_MS": "5000",
        }
    )
    assert config.servers == ["k1:9092", "k2:9092"]
    assert (config.sasl_mechanism, config.sasl_plain_username, config.sasl_plain_password) == (
        "SCRAM-SHA-512",
        "ops",
        "s3cr3t",
    )
    assert config.ssl_cafile == "/etc/ca.pem"
    assert config.request_timeout_ms == 5000
    with pytest.raises(LiveSourceError, match="OFFSETOPS_BOOTSTRAP_SERVERS"):
        LiveConfig.from_env({})


def test_from_file_reads_client_properties(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text(
        "# written for kafka-console-consumer\n"
        "bootstrap.servers=broker-1:9096, broker-2:9096\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="offsetops" \\\n'
        '    password="pa\\"ss";\n'
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/etc/kafka/ca.pem\n"
        "max.poll.records=500\n"
    )
    config = LiveConfig.from_file(props)
    assert config.servers == ["broker-1:9096", "broker-2:9096"]
    assert config.security_protocol == "SASL_SSL"
    assert config.sasl_mechanism == "SCRAM-SHA-256"
    assert config.sasl_plain_username == "offsetops"
    assert config.sasl_plain_password == 'pa\\"ss'
    assert config.ssl_cafile == "/etc/kafka/ca.pem"
    assert "pa\\" not in repr(config)


def test_from_file_refuses_jks_and_missing_bootstrap(tmp_path: Path) -> None:
    jks = tmp_path / "jks.properties"
    jks.write_text("bootstrap.servers=b:9093\nssl.truststore.location=/x/truststore.jks\n")
    with pytest.raises(LiveSourceError, match="PEM"):
        LiveConfig.from_file(jks)
    empty = tmp_path / "empty.properties"
    empty.write_text("security.protocol=SSL\n")
    with pytest.raises(LiveSourceError, match=r"bootstrap\.servers"):
        LiveConfig.from_file(empty)
    with pytest.raises(LiveSourceError, match="cannot read"):
        LiveConfig.from_file(tmp_path / "absent.properties")


def test_parse_properties_syntax() -> None:
    assert parse_properties("a=1\n! note\nb : 2\nc 3\n  d=x \\\n   y\n") == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "x y",
    }


def test_complete_prefix_cuts_a_partial_tail() -> None:
    head = kafka_python_batch([(b"k1", b"v1"), (b"k2", b"v2")])
    tail = bytearray(kafka_python_batch([(b"k3", b"v3")]))
    tail[0:8] = (2).to_bytes(8, "big")  # base offset 2, as the broker would assign
    whole = head + bytes(tail)
    first = len(head)
    assert complete_prefix(whole) == (len(whole), 3, True)
    for cut in (first + 1, first + 11, first + 20, len(whole) - 1):
        assert complete_prefix(whole[:cut]) == (first, 2, True)
    assert complete_prefix(whole[:5]) == (0, None, True)
    broken = bytearray(whole)
    broken[first + 8 : first + 12] = (3).to_bytes(4, "big")  # a length below any batch's minimum
    assert complete_prefix(bytes(broken)) == (len(broken), 2, False)


def test_complete_prefix_on_real_legacy_messages() -> None:
    data = _segment(LEGACY_SEGMENT).read_bytes()
    errors: list[DecodeError] = []
    batches = list(iter_segment_batches(_segment(LEGACY_SEGMENT), errors=errors))
    assert errors == [] and batches[0].magic == 1
    assert complete_prefix(data) == (len(data), batches[-1].last_offset + 1, True)
    cut = batches[10].position + 3
    assert complete_prefix(data[:cut]) == (batches[10].position, batches[9].last_offset + 1, True)
