"""The Tansu test broker: it starts, answers, keeps raw batches byte for byte, and stops."""

from __future__ import annotations

import socket
import struct
import uuid

import pytest

from tests.support.broker import (
    BrokerClient,
    BrokerUnavailable,
    TansuBroker,
    api_versions_ok,
    end_txn_marker,
    find_tansu_binary,
    kafka_python_batch,
    tansu_broker,
)

pytestmark = pytest.mark.broker


def _batches(buf: bytes) -> list[tuple[int, int, int, int]]:
    """(base offset, attributes, producer id, producer epoch) per v2 batch in a record set."""
    out = []
    pos = 0
    while pos + 12 <= len(buf):
        base, size = struct.unpack_from(">qi", buf, pos)
        (attributes,) = struct.unpack_from(">h", buf, pos + 21)
        pid, epoch = struct.unpack_from(">qh", buf, pos + 43)
        out.append((base, attributes, pid, epoch))
        pos += 12 + size
    return out


def test_broker_answers_api_versions(kafka_broker: TansuBroker) -> None:
    host, port = kafka_broker.bootstrap.rsplit(":", 1)
    assert host == "127.0.0.1"
    assert api_versions_ok(host, int(port))
    assert kafka_broker.process.poll() is None


def test_raw_batches_keep_producer_state_and_control_flag(kafka_broker: TansuBroker) -> None:
    topic = f"raw-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic)
        pid, epoch = bc.init_producer_id()
        bc.produce_raw(topic, 0, kafka_python_batch([(b"k", b"v")]))
        bc.produce_raw(
            topic,
            0,
            kafka_python_batch(
                [(b"t", b"x")], producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True
            ),
        )
        bc.produce_raw(
            topic,
            0,
            kafka_python_batch(
                [end_txn_marker(commit=True)],
                producer_id=pid,
                producer_epoch=epoch,
                transactional=True,
                control=True,
            ),
        )
        raw = bc.fetch_raw(topic, 0)
    assert _batches(raw) == [
        (0, 0x00, -1, -1),
        (1, 0x10, pid, epoch),
        (2, 0x30, pid, epoch),
    ]


def test_unknown_producer_id_is_refused(kafka_broker: TansuBroker) -> None:
    """Tansu checks producer ids (Kafka would too): replays must InitProducerId first."""
    topic = f"pid-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic)
        with pytest.raises(RuntimeError, match="error 59"):
            bc.produce_raw(
                topic,
                0,
                kafka_python_batch([(b"k", b"v")], producer_id=987_654, producer_epoch=0, base_sequence=0),
            )


def test_start_and_stop_release_the_port() -> None:
    with tansu_broker() as broker:
        port = broker.port
        assert api_versions_ok("127.0.0.1", port)
    assert broker.process.poll() is not None
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def test_missing_binary_skips_with_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALF_TANSU_BIN", "/nonexistent/tansu")
    assert find_tansu_binary() is None
    with pytest.raises(BrokerUnavailable, match="no tansu binary"):
        TansuBroker.start()
    with pytest.raises(pytest.skip.Exception, match="tansu binary not found"), tansu_broker():
        pass
