"""LiveSource against a real Kafka-protocol broker (Tansu on loopback), plus its config handling.

Tansu does not expose ``__consumer_offsets`` (its coordinator keeps state in its storage engine), so
the batches of real segment files are replayed byte for byte into an ordinary topic and read back.
"""

from __future__ import annotations

import socket
import time
import uuid
from pathlib import Path

import pytest
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.kafka_client import KafkaClientConfig, KafkaClientError
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.live import LiveSource, complete_prefix

from tests.support.broker import (
    BrokerClient,
    TansuBroker,
    authenticating_tansu,
    end_txn_marker,
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
    config = KafkaClientConfig(bootstrap_servers=kafka_broker.bootstrap, fetch_max_bytes=4096)
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
    with LiveSource(KafkaClientConfig(bootstrap_servers=kafka_broker.bootstrap), topic=topic) as source:
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
    with LiveSource(KafkaClientConfig(bootstrap_servers=kafka_broker.bootstrap), topic=topic) as source:
        got = list(source.iter_batches(0, [], start_offset=1, end_offset=4))
    # The batch holding offset 1 comes whole (Fetch semantics); the batch at 4 is past the end.
    assert [(b.base_offset, b.last_offset) for b in got] == [(0, 2), (3, 3)]


@pytest.mark.broker
def test_missing_topic_is_a_clear_error(kafka_broker: TansuBroker) -> None:
    config = KafkaClientConfig(bootstrap_servers=kafka_broker.bootstrap)
    with (
        LiveSource(config, topic=_topic("nope")) as source,
        pytest.raises(KafkaClientError, match="does not exist"),
    ):
        source.partitions()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_broker_fails_fast_naming_the_address() -> None:
    address = f"127.0.0.1:{_closed_port()}"
    config = KafkaClientConfig(
        bootstrap_servers=address,
        security_protocol="SASL_PLAINTEXT",
        sasl_plain_username="ops",
        sasl_plain_password="hunter2-secret",
        connect_timeout_ms=2000,
    )
    started = time.monotonic()
    with pytest.raises(KafkaClientError) as info:
        LiveSource(config).partitions()
    assert time.monotonic() - started < 8
    assert address in str(info.value)
    assert "hunter2-secret" not in str(info.value)


def test_rejected_sasl_login_fails_within_the_timeout() -> None:
    """A broker that demands authentication and knows no such user: a clear, bounded failure."""
    with authenticating_tansu() as port:
        config = KafkaClientConfig(
            bootstrap_servers=f"127.0.0.1:{port}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="mallory",
            sasl_plain_password="wrong-password-123",
            connect_timeout_ms=3000,
        )
        started = time.monotonic()
        with pytest.raises(KafkaClientError) as info:
            LiveSource(config).partitions()
        assert time.monotonic() - started < 8
        assert f"127.0.0.1:{port}" in str(info.value)
        assert "wrong-password-123" not in str(info.value)


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
