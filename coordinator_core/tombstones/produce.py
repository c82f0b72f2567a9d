"""Produce raw tombstone records (planned key bytes, null value) to a topic.

Meant for mirror and sandbox clusters that hold a copy of ``__consumer_offsets`` in an ordinary
topic. Each tombstone goes to the partition number of its offsets partition (``same``, the default:
the mirror keeps Kafka's layout) or wherever the producer's key hash puts it (``key``).

Idempotence: the target partitions' end offsets are journaled before the first send; a rerun first
reads from those offsets and marks planned keys that already have a tombstone there as applied (the
process may have died after the broker acknowledged a record but before the journal said so).

Every client is built from the run's :class:`~offsetops.coordinator_core.kafka_client.KafkaClientConfig`; the
cluster is reached once before the first send (:meth:`ProduceExecutor.check`), and a send that fails
because the cluster is gone stops the run (the journal stays resumable) instead of timing out per item.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from offsetops.coordinator_core.kafka_client import (
    KafkaClientConfig,
    check_connection,
    is_connection_error,
    unreachable,
)
from offsetops.coordinator_core.sources.logdir import OFFSETS_TOPIC
from offsetops.coordinator_core.tombstones.journal import APPLIED, ERROR, Journal, fault_point
from offsetops.coordinator_core.tombstones.runner import ExecutorRefused, VerifyResult
from offsetops.coordinator_core.tombstones.verify import classify, latest_values

INTERNAL_TOPIC_WARNING = f"""\
refusing to produce to {OFFSETS_TOPIC} itself. Records written by a producer bypass the group
coordinator: its in-memory cache never sees them until the partition is reloaded (a leader change),
so live groups keep their offsets and re-commit over your tombstones, and what the coordinator
believes diverges from the log. A wrong key, or a record its brokers cannot parse, can make the
partition fail to load and take every group on it offline. Kafka itself only accepts produce
requests to internal topics from the client id "__admin_client". On a live cluster use
--executor admin, which makes the coordinator write the tombstones. If you really mean to write to
the topic of a cluster with no live groups, pass --allow-internal-topic-write."""

PARTITIONING = ("same", "key")


_T = TypeVar("_T")


def _guard(config: KafkaClientConfig, what: str, fn: Callable[[], _T]) -> _T:
    """``fn()``, with a failure that means the cluster is gone turned into ``ClusterUnreachable``."""
    try:
        return fn()
    except Exception as exc:
        if is_connection_error(exc):
            raise unreachable(config, what, exc) from None
        raise


@contextlib.contextmanager
def _consumer(config: KafkaClientConfig, **extra: Any) -> Iterator[Any]:
    """A ``KafkaConsumer`` without a group, built from ``config``; closed on exit."""
    from kafka import KafkaConsumer

    consumer = _guard(
        config,
        "connect",
        lambda: KafkaConsumer(
            **config.client_kwargs(
                KafkaConsumer, enable_auto_commit=False, group_id=None, auto_offset_reset="earliest", **extra
            )
        ),
    )
    try:
        yield consumer
    finally:
        with contextlib.suppress(Exception):
            consumer.close()


def read_partitions(
    config: KafkaClientConfig,
    topic: str,
    start_offsets: dict[int, int] | None,
    *,
    partitions: list[int] | None = None,
    timeout_s: float = 30.0,
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Every record ``(partition, offset, key, value)`` of ``topic`` from ``start_offsets`` (or the
    beginning) up to the end offsets as of the call, in offset order per partition."""
    with _consumer(config) as consumer:
        return _guard(
            config, f"reading {topic}", lambda: _read(consumer, topic, start_offsets, partitions, timeout_s)
        )


def _read(
    consumer: Any,
    topic: str,
    start_offsets: dict[int, int] | None,
    partitions: list[int] | None,
    timeout_s: float,
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    from kafka.structs import TopicPartition

    if partitions is None:
        partitions = sorted(consumer.partitions_for_topic(topic) or ())
    tps = [TopicPartition(topic, p) for p in partitions]
    if not tps:
        return []
    consumer.assign(tps)
    ends = consumer.end_offsets(tps)
    begins = consumer.beginning_offsets(tps)
    for tp in tps:
        start = (start_offsets or {}).get(tp.partition, begins[tp])
        consumer.seek(tp, max(start, begins[tp]))
    out: list[tuple[int, int, bytes | None, bytes | None]] = []
    deadline = time.monotonic() + timeout_s
    while any(consumer.position(tp) < ends[tp] for tp in tps):
        if time.monotonic() > deadline:
            raise TimeoutError(f"reading {topic} did not reach the end offsets within {timeout_s:.0f}s")
        for tp, records in consumer.poll(timeout_ms=500).items():
            for r in records:
                if r.offset < ends[tp]:
                    out.append((tp.partition, r.offset, r.key, r.value))
    out.sort(key=lambda r: (r[0], r[1]))
    return out


class ProduceExecutor:
    """Send each planned tombstone as a record with a null value, acknowledged by all replicas."""

    name = "produce"

    def __init__(
        self,
        config: KafkaClientConfig,
        topic: str,
        *,
        partitioning: str = "same",
        allow_internal_topic_write: bool = False,
        timeout_s: float = 30.0,
    ) -> None:
        if topic == OFFSETS_TOPIC and not allow_internal_topic_write:
            raise ExecutorRefused(INTERNAL_TOPIC_WARNING)
        if partitioning not in PARTITIONING:
            raise ExecutorRefused(f"--target-partition must be one of {PARTITIONING}")
        if topic == OFFSETS_TOPIC and partitioning != "same":
            raise ExecutorRefused(
                f"a tombstone for {OFFSETS_TOPIC} must go to the partition its group maps to "
                "(partition_for); --target-partition key would put it where the coordinator never reads it"
            )
        self.config = config
        self.topic = topic
        self.partitioning = partitioning
        self.internal = topic == OFFSETS_TOPIC
        self.timeout_s = timeout_s
        self._producer: Any = None

    def target(self) -> dict[str, Any]:
        bootstrap = self.config.bootstrap_servers
        return {"bootstrap": bootstrap, "topic": self.topic, "partitioning": self.partitioning}

    def check(self) -> None:
        """Reach the cluster once, within the connect timeout, before the first send."""
        check_connection(self.config)

    def close(self) -> None:
        if self._producer is not None:
            producer, self._producer = self._producer, None
            # A producer that lost its cluster must not hold the run for close()'s full timeout.
            with contextlib.suppress(Exception):
                producer.close(timeout=min(self.timeout_s, self.config.connect_timeout_ms / 1000))

    def _partitions(self, items: list[dict[str, Any]]) -> tuple[list[int], set[int]]:
        """The target partitions the items touch, and every partition of the topic."""
        with _consumer(self.config) as consumer:
            available = _guard(self.config, "Metadata", lambda: consumer.partitions_for_topic(self.topic))
        if not available:
            raise ExecutorRefused(f"topic {self.topic!r} does not exist on {self.config.describe()}")
        if self.partitioning == "key":
            return sorted(available), set(available)
        wanted = sorted({i["offsets_partition"] for i in items})
        missing = [p for p in wanted if p not in available]
        if missing:
            raise ExecutorRefused(
                f"topic {self.topic!r} has {len(available)} partitions but the plan has tombstones for "
                f"offsets partition(s) {missing}; give the mirror {OFFSETS_TOPIC}'s partition count, or "
                "use --target-partition key"
            )
        return wanted, set(available)

    def _end_offsets(self, partitions: list[int]) -> dict[int, int]:
        from kafka.structs import TopicPartition

        with _consumer(self.config) as consumer:
            ends = _guard(
                self.config,
                "ListOffsets",
                lambda: consumer.end_offsets([TopicPartition(self.topic, p) for p in partitions]),
            )
        return {tp.partition: off for tp, off in ends.items()}

    def apply(self, journal: Journal, todo: list[dict[str, Any]]) -> None:
        from kafka import KafkaProducer
        from kafka.errors import KafkaError

        prepared = journal.events("produce_prepared")
        if prepared:
            start = {int(p): o for p, o in prepared[0]["end_offsets"].items()}
            seen = read_partitions(
                self.config, self.topic, start, partitions=sorted(start), timeout_s=self.timeout_s
            )
            tombstoned = {k for _p, _o, k, v in seen if k is not None and v is None}
            reconciled = [i for i in todo if bytes.fromhex(i["key_hex"]) in tombstoned]
            if reconciled:
                journal.record([i["item_id"] for i in reconciled], APPLIED, f"found in {self.topic}")
            todo = [i for i in todo if bytes.fromhex(i["key_hex"]) not in tombstoned]
        else:
            partitions, _ = self._partitions(journal.items)
            journal.event(
                "produce_prepared", end_offsets={str(p): o for p, o in self._end_offsets(partitions).items()}
            )
        if not todo:
            return
        self._partitions(todo)
        self._producer = _guard(
            self.config,
            "connect",
            lambda: KafkaProducer(
                **self.config.client_kwargs(
                    KafkaProducer,
                    acks="all",
                    retries=5,
                    max_in_flight_requests_per_connection=1,
                    linger_ms=0,
                    client_id="__admin_client" if self.internal else "offsetops-tombstones",
                )
            ),
        )
        now_ms = journal.plan["now_ms"]
        for item in todo:
            partition = item["offsets_partition"] if self.partitioning == "same" else None
            try:
                md = self._producer.send(
                    self.topic,
                    key=bytes.fromhex(item["key_hex"]),
                    value=None,
                    partition=partition,
                    timestamp_ms=now_ms,
                ).get(timeout=self.timeout_s)
            except KafkaError as exc:
                if is_connection_error(exc):
                    # Not journaled as an error: the record may have landed; a resume reconciles it.
                    raise unreachable(self.config, "Produce", exc) from None
                journal.record([item["item_id"]], ERROR, f"{type(exc).__name__}: {exc}")
                continue
            fault_point("send")
            journal.record([item["item_id"]], APPLIED, f"partition {md.partition} offset {md.offset}")

    def verify(self, journal: Journal) -> list[VerifyResult]:
        """Read the touched partitions from the beginning; each key's latest record must be null."""
        if self.partitioning == "same":
            parts = sorted({i["offsets_partition"] for i in journal.items})
        else:
            parts = None
        records = read_partitions(self.config, self.topic, None, partitions=parts, timeout_s=self.timeout_s)
        latest = latest_values((k, v) for _p, _o, k, v in records)
        return classify(journal.items, latest)
