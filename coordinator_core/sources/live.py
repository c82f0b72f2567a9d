"""Read ``__consumer_offsets`` partitions from a running cluster as :class:`RecordBatch` es.

The group coordinator loads a partition by reading its log from the log start to the high watermark
with every batch intact (``GroupMetadataManager.doLoadGroupsAndOffsets``): transactional offset commits
whose transaction is still open, and the COMMIT/ABORT control batches that settle them. kafka-python's
``KafkaConsumer`` hides both (it drops control batches and batch attributes), so this module speaks the
raw protocol: Metadata for leaders, ListOffsets for the bounds, and Fetch with ``isolation_level=0``
(READ_UNCOMMITTED) whose record-set bytes go straight to
:func:`offsetops.coordinator_core.records.reader.read_batches`.

Settings come from the project's one Kafka client configuration
(:class:`offsetops.coordinator_core.kafka_client.KafkaClientConfig`). Every failure to reach or authenticate
to the cluster raises a :class:`~offsetops.coordinator_core.kafka_client.KafkaClientError` within
``connect_timeout_ms``, naming the bootstrap servers and never a secret.

Size: one reader of the Kafka protocol (Metadata, ListOffsets, Fetch, the range plan for the executors)
and its failure handling belong together; what to do with each Fetch answer is in ``fetcher.py``,
the range arithmetic in ``ranges.py``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any

import kafka.errors as kerr
from kafka.net.compat import KafkaNetClient
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest
from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.kafka_client import KafkaClientConfig, check_connection
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.records.batch import RecordBatch
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.records.reader import ErrorSink
from offsetops.coordinator_core.sources.backoff import ExponentialBackoff, RetryDeadline
from offsetops.coordinator_core.sources.fetcher import (
    MAX_PARTITION_FETCH_BYTES,
    MAX_RETRIES,
    RETRIABLE,
    LiveSourceError,
    PartitionFetch,
    complete_prefix,
)
from offsetops.coordinator_core.sources.ranges import DEFAULT_RANGE_OFFSETS, FetchRange, cut_range, owned

__all__ = [
    "CONSUMER_OFFSETS",
    "DEFAULT_RANGE_OFFSETS",
    "FetchRange",
    "LiveSource",
    "LiveSourceError",
    "complete_prefix",
    "cut_range",
    "fold_range",
    "load_live_partition",
    "plan_fetch_ranges",
]

CONSUMER_OFFSETS = "__consumer_offsets"

_TOPIC_AUTHORIZATION_FAILED = 29
# ListOffsets timestamps (ListOffsetsRequest.EARLIEST_TIMESTAMP / LATEST_TIMESTAMP).
_EARLIEST, _LATEST = -2, -1
# Fetch v13+ names topics by id only; v12 still takes the name, and every broker from 2.7 to 4.x
# serves it, so capping here saves a topic-id lookup without losing anything we read.
_FETCH_MAX_VERSION = 12


class _LastError(logging.Handler):
    """Remembers the last warning/error kafka-python logged (its messages carry no secrets)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.message = ""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a bad log record must not break the connect path
            return
        # "Bootstrap failed/not ready" only restates the timeout; keep the cause before it.
        if message.startswith("Bootstrap"):
            return
        if record.levelno >= logging.ERROR or not self.message:
            self.message = message[:300]


class LiveSource:
    """Partitions of one topic on a running cluster, read as record batches.

    ``topic`` defaults to ``__consumer_offsets``; tests replay real segments into another topic.
    Connects lazily; use as a context manager or call :meth:`close`.
    """

    def __init__(
        self,
        config: KafkaClientConfig,
        *,
        topic: str = CONSUMER_OFFSETS,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    ):
        self.config = config
        self.topic = topic
        #: the bound on one batch, framed or decompressed, as for segment files (``--max-batch-bytes``)
        self.max_batch_bytes = max_batch_bytes
        self._client: Any = None
        self._leaders: dict[int, int] = {}
        self._leader_epochs: dict[int, int] = {}
        self._cluster_id: str | None = None
        self._throttled_until = 0.0

    def __repr__(self) -> str:
        return f"LiveSource({self.config!r}, topic={self.topic!r})"

    def __enter__(self) -> LiveSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            # Closing a half-open client must not mask the error that brought us here.
            with contextlib.suppress(Exception):
                client.close()

    # -- connection -------------------------------------------------------------------------------

    def _where(self) -> str:
        return self.config.describe()

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client

        timeout_ms = self.config.connect_timeout_ms
        # Reach the cluster once, bounded, before kafka-python tries (its TLS handshake has no deadline).
        check_connection(self.config)
        try:
            client = KafkaNetClient(
                **self.config.client_kwargs(
                    KafkaNetClient,
                    # A fetch may carry one batch bigger than fetch_max_bytes (KIP-74), and we grow the size.
                    receive_message_max_bytes=MAX_PARTITION_FETCH_BYTES + (1 << 20),
                )
            )
        except (ValueError, TypeError, OSError, kerr.KafkaError) as exc:
            raise LiveSourceError(
                self.config.redact(f"cannot set up a client for {self._where()}: {exc}")
            ) from None
        # kafka-python retries a failing connection until the deadline and then only says "timed out";
        # keep the last thing it logged so the error tells an operator *why* (refused, TLS, SASL).
        last = _LastError()
        kafka_log = logging.getLogger("kafka")
        kafka_log.addHandler(last)
        try:
            # Bootstrap = connect, TLS, SASL, ApiVersions and a first Metadata, bounded in time.
            client.check_version(timeout_ms=timeout_ms)
        except (kerr.SaslAuthenticationFailedError, kerr.AuthorizationError) as exc:
            client.close()
            raise LiveSourceError(
                self.config.redact(f"authentication to {self._where()} failed: {exc}")
            ) from None
        except kerr.KafkaTimeoutError:
            client.close()
            cause = f"; last error: {last.message}" if last.message else ""
            raise LiveSourceError(
                self.config.redact(
                    f"cannot reach {self._where()} within {timeout_ms / 1000:g}s{cause} "
                    "(check the address, that the broker is up, the listener's security protocol and the "
                    "SASL credentials)"
                )
            ) from None
        except (kerr.KafkaError, OSError) as exc:
            client.close()
            raise LiveSourceError(self.config.redact(f"cannot connect to {self._where()}: {exc}")) from None
        finally:
            kafka_log.removeHandler(last)
        self._client = client
        return client

    def _call(self, request: Any, node_id: int | None = None) -> Any:

        client = self._connect()
        if node_id is None:
            node_id = client.least_loaded_node(bootstrap_fallback=True)
        try:
            return client.send_and_receive(node_id, request, timeout_ms=self.config.request_timeout_ms)
        except (kerr.SaslAuthenticationFailedError, kerr.AuthorizationError) as exc:
            raise LiveSourceError(
                self.config.redact(f"authentication to {self._where()} failed: {exc}")
            ) from None
        except (kerr.KafkaError, OSError) as exc:
            raise LiveSourceError(
                self.config.redact(
                    f"{type(request).__name__} to broker {node_id} of {self._where()} failed: {exc}"
                )
            ) from None

    # -- metadata ---------------------------------------------------------------------------------

    def _refresh_metadata(self) -> dict[int, int]:

        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=self.topic)],
            allow_auto_topic_creation=False,
        )
        response = self._call(request)
        # Teach the client every broker, so requests can go to partition leaders it has not met yet.
        self._client.cluster.update_metadata(response)
        topic = next((t for t in response.topics if t.name == self.topic), None)
        if topic is None or topic.error_code == 3:
            raise LiveSourceError(f"topic {self.topic!r} does not exist on {self._where()}")
        if topic.error_code == _TOPIC_AUTHORIZATION_FAILED:
            raise LiveSourceError(
                f"not authorized to describe topic {self.topic!r} on {self._where()} "
                "(reading __consumer_offsets needs DESCRIBE and READ on it)"
            )
        if topic.error_code not in (0, 5):
            raise LiveSourceError(
                f"Metadata for {self.topic!r} on {self._where()} failed with error {topic.error_code}"
            )
        self._leaders = {p.partition_index: p.leader_id for p in topic.partitions}
        self._leader_epochs = {p.partition_index: _epoch(p) for p in topic.partitions}
        self._cluster_id = getattr(response, "cluster_id", None) or None
        return self._leaders

    def leader_state(self, partition: int) -> tuple[str | None, int]:
        """The cluster id and the partition's current leader epoch (-1 when the broker does not say),
        from a fresh Metadata response: what a resumed live read checks its state against."""
        self._refresh_metadata()
        if partition not in self._leaders:
            raise LiveSourceError(f"{self.topic}-{partition} does not exist on {self._where()}")
        return self._cluster_id, self._leader_epochs.get(partition, -1)

    def partitions(self) -> list[int]:
        """The topic's partition ids, sorted."""
        return sorted(self._refresh_metadata())

    def _leader(self, partition: int, *, refresh: bool = False) -> int:
        if refresh or partition not in self._leaders or self._leaders[partition] < 0:
            self._refresh_metadata()
        if partition not in self._leaders:
            raise LiveSourceError(f"{self.topic}-{partition} does not exist on {self._where()}")
        leader = self._leaders[partition]
        if leader < 0:
            raise LiveSourceError(f"{self.topic}-{partition} has no leader on {self._where()}")
        return leader

    # -- offsets ----------------------------------------------------------------------------------

    def _list_offsets(self, timestamp: int, partitions: list[int] | None = None) -> dict[int, int]:

        if partitions is None:
            partitions = self.partitions()
        todo = set(partitions)
        result: dict[int, int] = {}
        retry: dict[int, str] = {}
        # Retriable errors (a leader moving) are asked again after a back-off, as the Java admin
        # client's ListOffsets does: retry.backoff.ms doubling to retry.backoff.max.ms, at most
        # MAX_RETRIES times and within request.timeout.ms.
        deadline = RetryDeadline(
            ExponentialBackoff(self.config.retry_backoff_ms, self.config.retry_backoff_max_ms),
            self.config.request_timeout_ms,
        )
        for attempt in range(MAX_RETRIES + 1):
            if attempt and not deadline.wait():
                break
            by_leader: dict[int, list[int]] = {}
            for p in sorted(todo):
                by_leader.setdefault(self._leader(p, refresh=attempt > 0), []).append(p)
            retry = {}
            for leader, parts in by_leader.items():
                topic_req = ListOffsetsRequest.ListOffsetsTopic(
                    name=self.topic,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                            partition_index=p, current_leader_epoch=-1, timestamp=timestamp, max_num_offsets=1
                        )
                        for p in parts
                    ],
                )
                # isolation_level=0: the high watermark, not the last stable offset, so a read
                # includes transactions that are still open, as the coordinator's load does.
                request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[topic_req])
                response = self._call(request, leader)
                for t in response.topics:
                    for pr in t.partitions:
                        if pr.error_code == 0:
                            result[pr.partition_index] = pr.offset
                        elif pr.error_code in RETRIABLE:
                            retry[pr.partition_index] = RETRIABLE[pr.error_code]
                        else:
                            raise LiveSourceError(
                                f"ListOffsets {self.topic}-{pr.partition_index} on {self._where()} "
                                f"failed with error {pr.error_code}"
                            )
            todo = set(retry)
            if not todo:
                return result
        raise LiveSourceError(
            f"ListOffsets on {self._where()} kept failing for {deadline.waited_s:.1f} s "
            f"({deadline.attempts + 1} attempts): "
            + ", ".join(f"{self.topic}-{p}: {e}" for p, e in sorted(retry.items()))
        )

    def end_offsets(self, partitions: list[int] | None = None) -> dict[int, int]:
        """High watermark per partition (READ_UNCOMMITTED end offset)."""
        return self._list_offsets(_LATEST, partitions)

    def start_offsets(self, partitions: list[int] | None = None) -> dict[int, int]:
        """Log start offset per partition."""
        return self._list_offsets(_EARLIEST, partitions)

    # -- fetch ------------------------------------------------------------------------------------

    def _fetch(self, partition: int, offset: int, max_bytes: int, leader: int) -> Any:

        # KIP-219: a throttled client must not send to the broker before the throttle time is over.
        pause = self._throttled_until - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        fp = FetchRequest.FetchTopic.FetchPartition(
            partition=partition,
            current_leader_epoch=-1,
            fetch_offset=offset,
            log_start_offset=-1,
            partition_max_bytes=max_bytes,
        )
        request = FetchRequest(
            max_version=_FETCH_MAX_VERSION,
            replica_id=-1,
            max_wait_ms=self.config.fetch_max_wait_ms,
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=self.topic, partitions=[fp])],
            forgotten_topics_data=[],
            rack_id="",
        )
        response = self._call(request, leader)
        throttle_ms = max(0, int(getattr(response, "throttle_time_ms", 0) or 0))
        self._throttled_until = time.monotonic() + min(throttle_ms, self.config.request_timeout_ms) / 1000
        for t in response.responses:
            for pd in t.partitions:
                if pd.partition_index == partition:
                    return pd
        raise LiveSourceError(f"Fetch response from {self._where()} has no {self.topic}-{partition}")

    def iter_range(
        self, rng: FetchRange, errors: ErrorSink, *, verify_crc: bool = True
    ) -> Iterator[RecordBatch]:
        """The batches ``rng`` owns (:meth:`FetchRange.owns`), fetched from its start to its end."""
        yield from owned(
            rng,
            self.iter_batches(
                rng.partition, errors, start_offset=rng.start, end_offset=rng.end, verify_crc=verify_crc
            ),
        )

    def iter_batches(
        self,
        partition: int,
        errors: ErrorSink,
        *,
        start_offset: int | None = None,
        end_offset: int | None = None,
        verify_crc: bool = True,
    ) -> Iterator[RecordBatch]:
        """Every batch of ``partition`` from the log start (or ``start_offset``) to the high watermark
        taken when the read starts (or ``end_offset``), control and transactional batches included;
        each batch once, in offset order.

        Decode problems go to ``errors`` as :class:`DecodeError` s, as for segment files; the
        DecodeError's ``file`` names the topic-partition and the fetch offset.
        """
        if start_offset is None:
            start_offset = self.start_offsets([partition])[partition]
        if end_offset is None:
            end_offset = self.end_offsets([partition])[partition]
        yield from PartitionFetch(self, partition, errors, start_offset, end_offset, verify_crc).batches()


# -- fetch ranges: the live reload, whole or cut -------------------------------------------------------


def _epoch(partition: Any) -> int:
    """A Metadata partition's leader epoch (v7+), or -1."""
    epoch = getattr(partition, "leader_epoch", -1)
    return epoch if isinstance(epoch, int) and epoch >= 0 else -1


def plan_fetch_ranges(
    source: LiveSource,
    partitions: Iterable[int] | None = None,
    *,
    max_offsets: int = DEFAULT_RANGE_OFFSETS,
) -> list[FetchRange]:
    """Cut the partitions (default: all of the topic) into :class:`FetchRange` s of at most
    ``max_offsets`` offsets, from ListOffsets (log start and high watermark, READ_UNCOMMITTED).

    Ranges come in partition and offset order. A partition that does not exist raises
    :class:`LiveSourceError` naming it.
    """
    wanted = sorted(set(partitions)) if partitions is not None else source.partitions()
    if not wanted:
        return []
    starts = source.start_offsets(wanted)
    ends = source.end_offsets(wanted)
    return [r for p in wanted for r in cut_range(p, starts[p], ends[p], max_offsets)]


def fold_range(
    source: LiveSource, rng: FetchRange, *, semantics: str = "java", verify_crc: bool = True
) -> PartitionFold:
    """Fold the batches ``rng`` owns: the unit of the distributed live reload, and (one whole range
    per partition) of the single-process one, so both fold exactly alike."""
    started = time.perf_counter()
    fold = PartitionFold(partition=rng.partition, semantics=semantics)
    fold.add_batches(source.iter_range(rng, fold.stats.errors, verify_crc=verify_crc))
    # A live read has no segment files. The fold counts a new "file" per Fetch label, a figure that
    # would depend on fetch sizes and cut points; report none, as a log dir with no segment would.
    fold.stats.segments = 0
    fold.stats.elapsed_ms = (time.perf_counter() - started) * 1000
    return fold


def load_live_partition(
    source: LiveSource,
    partition: int,
    *,
    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
    semantics: str = "java",
) -> CoordinatorCache:
    """doLoadGroupsAndOffsets of one partition read from the cluster: log start to high watermark."""
    started = time.perf_counter()
    [rng] = plan_fetch_ranges(source, [partition], max_offsets=1 << 62)
    cache = fold_range(source, rng, semantics=semantics).finish(num_partitions=num_partitions)
    cache.stats.elapsed_ms = (time.perf_counter() - started) * 1000
    return cache
