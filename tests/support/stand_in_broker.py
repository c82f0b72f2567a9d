"""A stand-in Kafka broker on loopback whose Fetch answers a test scripts, for the answers a real
broker gives only now and then (empty below the high watermark, throttled, a batch cut at
``max_bytes`` as before KIP-74), which Tansu never gives on demand.

It speaks the real protocol over a real socket (ApiVersions, Metadata, Fetch, ListOffsets;
kafka-python's own message classes encode the responses), so the client under test runs unchanged. It
is a stand-in: one node, one topic, nothing stored; every Fetch goes to ``answer`` and is recorded in
``fetches``; every ListOffsets partition goes to ``offsets_answer`` (when given) and is recorded in
``offset_lookups``.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

NODE_ID = 1
_SERVED = {18: (0, 3), 3: (0, 12), 1: (0, 12), 2: (1, 7)}  # api key -> (min, max) version


@dataclass(frozen=True, slots=True)
class FetchCall:
    """What the client asked for, and when (``time.monotonic``)."""

    offset: int
    max_bytes: int
    max_wait_ms: int
    at: float


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    """What the stand-in answers to one Fetch."""

    records: bytes = b""
    high_watermark: int = 0
    throttle_time_ms: int = 0
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class OffsetLookup:
    """One partition of a ListOffsets request, and when it came (``time.monotonic``)."""

    partition: int
    timestamp: int
    at: float


@dataclass
class StandInBroker:
    """One node serving ``topic`` with ``partitions`` partitions; ``answer`` scripts every Fetch."""

    topic: str
    answer: Callable[[FetchCall], FetchAnswer]
    partitions: int = 1
    fetches: list[FetchCall] = field(default_factory=list)
    port: int = 0
    #: ListOffsets: a lookup -> (error code, offset); None serves no ListOffsets
    offsets_answer: Callable[[OffsetLookup], tuple[int, int]] | None = None
    offset_lookups: list[OffsetLookup] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _respond(self, api_key: int, version: int, body: bytes) -> bytes:
        if api_key == 18:
            request = ApiVersionsRequest.decode(body, version=version, header=True)
            response = ApiVersionsResponse(
                error_code=0,
                api_keys=[
                    ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                    for k, (lo, hi) in _SERVED.items()
                ],
                throttle_time_ms=0,
            )
        elif api_key == 3:
            request = MetadataRequest.decode(body, version=version, header=True)
            response = self._metadata()
        elif api_key == 1:
            request = FetchRequest.decode(body, version=version, header=True)
            response = self._fetch(request)
        elif api_key == 2 and self.offsets_answer is not None:
            request = ListOffsetsRequest.decode(body, version=version, header=True)
            response = self._list_offsets(request)
        else:
            raise ConnectionError(f"the stand-in does not serve api key {api_key}")
        response.API_VERSION = version  # before the header: kafka-python sets it on a request header
        response.with_header(correlation_id=request.header.correlation_id)
        return response.encode(header=True, framed=True)

    def _metadata(self) -> MetadataResponse:
        mr = MetadataResponse
        return mr(
            throttle_time_ms=0,
            brokers=[mr.MetadataResponseBroker(node_id=NODE_ID, host="127.0.0.1", port=self.port, rack=None)],
            cluster_id="stand-in",
            controller_id=NODE_ID,
            topics=[
                mr.MetadataResponseTopic(
                    error_code=0,
                    name=self.topic,
                    is_internal=False,
                    partitions=[
                        mr.MetadataResponseTopic.MetadataResponsePartition(
                            error_code=0,
                            partition_index=p,
                            leader_id=NODE_ID,
                            leader_epoch=0,
                            replica_nodes=[NODE_ID],
                            isr_nodes=[NODE_ID],
                            offline_replicas=[],
                        )
                        for p in range(self.partitions)
                    ],
                )
            ],
        )

    def _fetch(self, request: FetchRequest) -> FetchResponse:
        fr = FetchResponse.FetchableTopicResponse
        topics, throttle = [], 0
        for t in request.topics:
            parts = []
            for p in t.partitions:
                call = FetchCall(p.fetch_offset, p.partition_max_bytes, request.max_wait_ms, time.monotonic())
                self.fetches.append(call)
                a = self.answer(call)
                throttle = max(throttle, a.throttle_time_ms)
                parts.append(
                    fr.PartitionData(
                        partition_index=p.partition,
                        error_code=a.error_code,
                        high_watermark=a.high_watermark,
                        last_stable_offset=a.high_watermark,
                        log_start_offset=0,
                        aborted_transactions=[],
                        preferred_read_replica=-1,
                        records=a.records,
                    )
                )
            topics.append(fr(topic=t.topic, partitions=parts))
        return FetchResponse(throttle_time_ms=throttle, error_code=0, session_id=0, responses=topics)

    def _list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        assert self.offsets_answer is not None
        tr = ListOffsetsResponse.ListOffsetsTopicResponse
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                lookup = OffsetLookup(p.partition_index, p.timestamp, time.monotonic())
                self.offset_lookups.append(lookup)
                error, offset = self.offsets_answer(lookup)
                parts.append(
                    tr.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=error,
                        timestamp=-1,
                        offset=offset,
                        leader_epoch=0,
                    )
                )
            topics.append(tr(name=t.name, partitions=parts))
        return ListOffsetsResponse(throttle_time_ms=0, topics=topics)

    def serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                head = _recv(conn, 4)
                if head is None:
                    return
                (size,) = struct.unpack(">i", head)
                body = _recv(conn, size)
                if body is None:
                    return
                api_key, version = struct.unpack_from(">hh", body, 0)
                conn.sendall(self._respond(api_key, version, body))


def _recv(conn: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


@contextmanager
def stand_in_broker(
    topic: str,
    answer: Callable[[FetchCall], FetchAnswer],
    partitions: int = 1,
    *,
    offsets_answer: Callable[[OffsetLookup], tuple[int, int]] | None = None,
) -> Iterator[StandInBroker]:
    """A :class:`StandInBroker` listening on a free loopback port for the ``with`` block."""
    listener = socket.create_server(("127.0.0.1", 0))
    broker = StandInBroker(
        topic, answer, partitions, port=listener.getsockname()[1], offsets_answer=offsets_answer
    )

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed: the block is over
            threading.Thread(target=broker.serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield broker
    finally:
        listener.close()
