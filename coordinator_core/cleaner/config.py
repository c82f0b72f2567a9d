"""The configuration the Log Cleaner applies to ``__consumer_offsets`` (``LogConfig``, ``CleanerConfig``).

Values come, in increasing precedence, from Kafka's defaults for this topic, a live cluster
(``DescribeConfigs`` for the topic and for one broker, :func:`fetch_cluster_config`) and the user
(``--config KEY=VALUE``).
:attr:`CleanerConfig.sources` records where each value came from, so a report can say so.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.kafka_client import (
    KafkaClientConfig,
    KafkaClientError,
    check_connection,
    is_connection_error,
)
from offsetops.coordinator_core.settings import parse_pairs
from offsetops.coordinator_core.sources.logdir import LogDirError
from offsetops.coordinator_core.sources.logdir import read_broker_id as read_log_dir_broker_id

LONG_MAX = 2**63 - 1

#: config key -> (dataclass field, parser). Topic-level names and their broker-level defaults both map
#: to the same field; a topic-level value beats a broker-level one (``LogConfig`` resolution).
_TOPIC_KEYS: dict[str, str] = {
    "cleanup.policy": "cleanup_policy",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "delete.retention.ms": "delete_retention_ms",
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
}
_BROKER_KEYS: dict[str, str] = {
    "log.cleanup.policy": "cleanup_policy",
    "log.cleaner.min.cleanable.ratio": "min_cleanable_dirty_ratio",
    "log.cleaner.min.compaction.lag.ms": "min_compaction_lag_ms",
    "log.cleaner.max.compaction.lag.ms": "max_compaction_lag_ms",
    "log.cleaner.delete.retention.ms": "delete_retention_ms",
    "log.cleaner.enable": "cleaner_enable",
    "log.cleaner.threads": "cleaner_threads",
    "log.cleaner.dedupe.buffer.size": "dedupe_buffer_size",
    "log.cleaner.io.buffer.load.factor": "dedupe_load_factor",
    "log.cleaner.backoff.ms": "cleaner_backoff_ms",
}
# Broker-level names that only act as defaults when the topic has no override of its own.
_BROKER_DEFAULTS_FOR_TOPIC = {k for k, f in _BROKER_KEYS.items() if f in _TOPIC_KEYS.values()}


class ClusterConfigError(KafkaClientError):
    """The live cluster could not be reached or refused DescribeConfigs; the message says which."""


def _parse_bool(text: str) -> bool:
    v = text.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


@dataclass(frozen=True)
class CleanerConfig:
    """Effective cleaner settings for ``__consumer_offsets``; defaults are Kafka's for this topic.

    ``GroupCoordinatorService.groupMetadataTopicConfigs`` (cleanup.policy=compact, segment.bytes
    100 MiB) over ``CleanerConfig``/``LogConfig`` defaults (format notes §5.1-5.2).
    """

    cleanup_policy: str = "compact"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    delete_retention_ms: int = 86_400_000
    segment_bytes: int = 104_857_600
    segment_ms: int = 604_800_000
    cleaner_enable: bool = True
    cleaner_threads: int = 1
    dedupe_buffer_size: int = 134_217_728
    dedupe_load_factor: float = 0.9
    cleaner_backoff_ms: int = 15_000
    #: field name -> "default" | "live" | "user"
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def is_compacted(self) -> bool:
        """``LogConfig.compact``: the policy list contains ``compact``."""
        return "compact" in {p.strip() for p in self.cleanup_policy.split(",")}

    @property
    def dedupe_capacity(self) -> int:
        """Keys one cleaner thread's ``SkimpyOffsetMap`` takes before it stops a pass early.

        Memory per thread is ``dedupe.buffer.size / threads`` (capped at Int.MaxValue); each slot is a
        16-byte MD5 hash plus an 8-byte offset; the map is "full" at ``slots * load factor``.
        """
        per_thread = min(self.dedupe_buffer_size // max(self.cleaner_threads, 1), 2**31 - 1)
        return int((per_thread // 24) * self.dedupe_load_factor)

    @property
    def max_segment_ms(self) -> int:
        """``LogConfig.maxSegmentMs``: the age at which the next append rolls the active segment;
        ``min(segment.ms, max.compaction.lag.ms)`` for a compacted topic."""
        if self.is_compacted and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def source_of(self, field_name: str) -> str:
        return self.sources.get(field_name, "default")

    def with_values(self, values: Mapping[str, str], *, source: str) -> CleanerConfig:
        """A copy with Kafka config keys applied (topic-level beats broker-level within ``values``)."""
        updates: dict[str, Any] = {}
        topic_fields_set: set[str] = set()
        for key, raw in values.items():
            if raw is None:
                continue
            name = _TOPIC_KEYS.get(key)
            if name is not None:
                updates[name] = _convert(name, str(raw), key)
                topic_fields_set.add(name)
        for key, raw in values.items():
            if raw is None:
                continue
            name = _BROKER_KEYS.get(key)
            if name is None or (key in _BROKER_DEFAULTS_FOR_TOPIC and name in topic_fields_set):
                continue
            updates[name] = _convert(name, str(raw), key)
        if not updates:
            return self
        sources = dict(self.sources)
        sources.update(dict.fromkeys(updates, source))
        return dataclasses.replace(self, **updates, sources=sources)

    def layered(
        self,
        broker: tuple[Mapping[str, str], str | None],
        config_file: tuple[Mapping[str, str], str | None],
        live: ClusterConfig | None = None,
    ) -> CleanerConfig:
        """The run model's order for the cleaner's settings: the broker's ``server.properties``, then a
        live cluster's DescribeConfigs, then the config file (``--config KEY=VALUE`` goes on top)."""
        config = self
        if broker[0]:
            config = config.with_values(broker[0], source=broker[1] or "broker")
        if live is not None:
            config = live.apply(config)
        if config_file[0]:
            config = config.with_values(config_file[0], source=config_file[1] or "config file")
        return config

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "sources":
                continue
            out[f.name] = {"value": getattr(self, f.name), "source": self.source_of(f.name)}
        return out


#: Valid ranges, as Kafka's ConfigDef validators state them (``TopicConfig``/``CleanerConfig``).
_RANGES: dict[str, tuple[float, float]] = {
    "min_cleanable_dirty_ratio": (0.0, 1.0),
    "min_compaction_lag_ms": (0, LONG_MAX),
    "max_compaction_lag_ms": (1, LONG_MAX),
    "delete_retention_ms": (0, LONG_MAX),
    "segment_bytes": (14, 2**31 - 1),  # LegacyRecord.RECORD_OVERHEAD_V0
    "segment_ms": (1, LONG_MAX),
    "cleaner_threads": (0, 2**31 - 1),
    "dedupe_buffer_size": (0, LONG_MAX),
    "dedupe_load_factor": (0.0, 1.0),
    "cleaner_backoff_ms": (0, LONG_MAX),
}


def _convert(name: str, raw: str, key: str) -> Any:
    kind = type(CleanerConfig.__dataclass_fields__[name].default)
    try:
        if kind is bool:
            return _parse_bool(raw)
        if kind is int:
            value: Any = int(raw.strip())
        elif kind is float:
            value = float(raw.strip())
        else:
            return raw.strip()
    except ValueError as exc:
        raise ValueError(f"config {key}={raw!r}: {exc}") from exc
    low, high = _RANGES.get(name, (-LONG_MAX, LONG_MAX))
    if not low <= value <= high:  # also rejects NaN
        raise ValueError(f"config {key}={raw!r}: value must be in [{low:g}, {high:g}]")
    return value


def known_config_keys() -> list[str]:
    return sorted(set(_TOPIC_KEYS) | set(_BROKER_KEYS))


def parse_config_overrides(items: Iterable[str]) -> dict[str, str]:
    """``["k=v", ...]`` from the command line into a dict; unknown keys are an error (typos)."""
    out = {key: value.strip() for key, value in parse_pairs(items, option="--config").items()}
    known = set(known_config_keys())
    unknown = [key for key in out if key not in known]
    if unknown:
        raise ValueError(f"unknown config {unknown[0]!r}; known: {', '.join(sorted(known))}")
    return out


@dataclass(frozen=True)
class ClusterConfig:
    """What a live cluster said about itself: raw topic and broker configs (DescribeConfigs), log-dir
    sizes (DescribeLogDirs), and what it could not answer."""

    bootstrap: str
    broker_id: int | None
    topic_configs: dict[str, str]
    broker_configs: dict[str, str]
    #: partition -> size in bytes on ``broker_id``, from DescribeLogDirs (None when unsupported)
    log_dir_sizes: dict[int, int] | None
    notes: tuple[str, ...] = ()

    def apply(self, base: CleanerConfig) -> CleanerConfig:
        merged = dict(self.broker_configs)
        merged.update(self.topic_configs)
        return base.with_values(merged, source="live")

    def to_json(self) -> dict[str, Any]:
        return {
            "bootstrap": self.bootstrap,
            "broker_id": self.broker_id,
            "topic_config_entries": len(self.topic_configs),
            "broker_config_entries": len(self.broker_configs),
            "log_dir_sizes": self.log_dir_sizes,
            "notes": list(self.notes),
        }


def read_broker_id(log_dir: str | os.PathLike[str]) -> int | None:
    """``broker.id`` (ZooKeeper) or ``node.id`` (KRaft) from the log dir's ``meta.properties``, or None."""
    try:
        return read_log_dir_broker_id(log_dir)
    except LogDirError:
        return None


def _values(entries: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, entry in entries.items():
        value = entry.get("value") if isinstance(entry, Mapping) else entry
        if value is not None:
            out[str(name)] = str(value)
    return out


def fetch_cluster_config(
    client: KafkaClientConfig,
    *,
    topic: str = "__consumer_offsets",
    broker_id: int | None = None,
) -> ClusterConfig:
    """DescribeConfigs for the topic and one broker, and DescribeLogDirs where the broker supports it.

    ``broker_id`` defaults to the first broker the cluster reports. The connection is checked first,
    within ``client.connect_timeout_ms``. Raises :class:`ClusterConfigError` (or
    :class:`~offsetops.coordinator_core.kafka_client.ClusterUnreachable`) with a readable message.
    """
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.errors import KafkaError

    bootstrap = client.bootstrap_servers
    notes: list[str] = []
    check_connection(client)
    try:
        admin = KafkaAdminClient(**client.client_kwargs(KafkaAdminClient, client_id="offsetops-audit"))
    except (KafkaError, OSError) as exc:
        raise ClusterConfigError(client.redact(f"cannot reach {client.describe()}: {exc}")) from None
    try:
        try:
            cluster = admin.describe_cluster()
            brokers = sorted(int(b.get("broker_id", b.get("node_id"))) for b in cluster.get("brokers", []))
        except (KafkaError, TypeError) as exc:
            raise ClusterConfigError(client.redact(f"{bootstrap}: describe cluster failed: {exc}")) from None
        if broker_id is None or (brokers and broker_id not in brokers):
            if broker_id is not None:
                notes.append(
                    f"broker {broker_id} from meta.properties is not in this cluster; used {brokers[0]}"
                )
            broker_id = brokers[0] if brokers else None
        try:
            topic_raw = admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic)],
                config_filter="all",  # pyright: ignore[reportCallIssue]  # kafka-python 3.0; stubs are 2.x
            )
            topic_configs = _values(topic_raw.get("topic", {}).get(topic, {}))
        except KafkaError as exc:
            raise ClusterConfigError(
                client.redact(f"{bootstrap}: DescribeConfigs for topic {topic} failed: {exc}")
            ) from None
        broker_configs: dict[str, str] = {}
        if broker_id is not None:
            try:
                broker_raw = admin.describe_configs(
                    [ConfigResource(ConfigResourceType.BROKER, str(broker_id))],
                    config_filter="all",  # pyright: ignore[reportCallIssue]  # kafka-python 3.0; stubs are 2.x
                )
                broker_configs = _values(broker_raw.get("broker", {}).get(str(broker_id), {}))
            except KafkaError as exc:
                raise ClusterConfigError(
                    client.redact(f"{bootstrap}: DescribeConfigs for broker {broker_id} failed: {exc}")
                ) from None
        if not topic_configs:
            notes.append(f"the cluster returned no config entries for topic {topic}; defaults assumed")
        if broker_id is not None and not broker_configs:
            notes.append(f"the cluster returned no config entries for broker {broker_id}; defaults assumed")
        sizes: dict[int, int] | None = None
        try:
            # kafka-python 3.0's signature; the type stubs pyright bundles describe 2.x
            result = admin.describe_log_dirs(
                topic_partitions=[topic],  # pyright: ignore[reportCallIssue]
                brokers=[broker_id],  # pyright: ignore[reportCallIssue]
            )
            sizes = _log_dir_sizes(result, topic)
        except KafkaError as exc:
            if is_connection_error(exc):
                raise ClusterConfigError(
                    client.redact(f"{bootstrap}: lost the cluster at DescribeLogDirs: {exc}")
                ) from None
            notes.append(f"DescribeLogDirs not available ({type(exc).__name__}); live sizes omitted")
        return ClusterConfig(bootstrap, broker_id, topic_configs, broker_configs, sizes, tuple(notes))
    finally:
        admin.close()


def _log_dir_sizes(result: Any, topic: str) -> dict[int, int]:
    """Partition sizes out of kafka-python's DescribeLogDirs dicts (field names vary by version)."""
    sizes: dict[int, int] = {}
    for broker in result or []:
        for log_dir in broker.get("log_dirs", []):
            for t in log_dir.get("topics", []):
                if t.get("name", t.get("topic")) != topic:
                    continue
                for p in t.get("partitions", []):
                    idx = p.get("partition_index", p.get("partition"))
                    size = p.get("partition_size", p.get("size"))
                    if idx is not None and size is not None:
                        sizes[int(idx)] = int(size)
    return sizes
