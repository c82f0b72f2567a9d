"""One Source: where a run reads ``__consumer_offsets`` from, with the limits every read obeys.

A :class:`Source` is a broker log dir, several brokers' log dirs, or a live cluster (its
:class:`~offsetops.coordinator_core.kafka_client.KafkaClientConfig` carries the connect and request
timeouts), plus the read limits (:class:`ReadLimits`: ``--max-batch-bytes``, CRC checks), the
partitions wanted, and the data-partition log dirs that bound lag. Every capability reads through it
(:meth:`Source.load_caches`, :meth:`Source.live`), so no front end builds a reader and no read drops a
limit. Replica choice is ``replicas.choose_replica``'s; the live read is ``live.LiveSource``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from offsetops.coordinator_core.asof import Cut, load_as_of
from offsetops.coordinator_core.cache import CoordinatorCache, LoadStats
from offsetops.coordinator_core.loader import load_partition_dir
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.sources.logdir import LogDirError, PartitionDir, open_log_dir

if TYPE_CHECKING:
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig
    from offsetops.coordinator_core.sources.live import LiveSource
    from offsetops.coordinator_core.sources.replicas import ReplicaChoice

OFFSETS_TOPIC = "__consumer_offsets"

#: called once per partition read: (the cache, the bytes read, what was read)
OnPartition = Callable[[CoordinatorCache, int, str], None]


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """What every read of the source obeys, whatever the bytes say."""

    #: the largest batch accepted, framed or decompressed (``--max-batch-bytes``)
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    verify_crc: bool = True


@dataclass(frozen=True)
class Source:
    """A log dir (``log_dir``), several brokers' log dirs (``broker_log_dirs``, ``[BROKER_ID=]PATH``)
    or a live cluster (``client``), with its limits, the partitions wanted and the data log dirs."""

    log_dir: str | None = None
    broker_log_dirs: tuple[str, ...] = ()
    client: KafkaClientConfig | None = None
    topic: str = OFFSETS_TOPIC
    partitions: tuple[int, ...] | None = None
    limits: ReadLimits = field(default_factory=ReadLimits)
    #: log dirs holding data-topic partitions (their log start and end bound lag)
    data_log_dirs: tuple[str, ...] = ()
    #: ``--state DIR``: each partition's fold is saved there and the next whole-log read of a log dir
    #: goes on from it (:mod:`~offsetops.coordinator_core.resume`); as-of reads never use it
    state_dir: str | None = None
    #: a resume state store the caller holds instead of ``state_dir``'s files (``resume.MemoryStateStore``,
    #: a following exporter's without ``--state``)
    state_store: Any = field(default=None, compare=False)
    #: the cleaner scan made in the same resumed read of each partition, resumed with the fold
    #: (``cleaner.scan_resume.ScanRiders``: it keeps each partition's outcome)
    scan_riders: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        given = [bool(self.log_dir), bool(self.broker_log_dirs), self.client is not None]
        if sum(given) != 1:
            raise ValueError("a Source is one of: a log dir, several brokers' log dirs, or a live cluster")

    @property
    def is_live(self) -> bool:
        return self.client is not None

    @property
    def resumable(self) -> bool:
        """A resume state was given (``state_dir`` or ``state_store``)."""
        return self.state_dir is not None or self.state_store is not None

    def describe(self) -> str:
        if self.client is not None:
            return f"live cluster {self.client.describe()} ({self.topic})"
        if self.broker_log_dirs:
            return f"{len(self.broker_log_dirs)} brokers' log dirs"
        return f"log dir {self.log_dir}"

    def live(self, topic: str | None = None) -> LiveSource:
        """A reader of the live cluster with this source's limits (``topic``: another topic, e.g. a
        data topic's log offsets)."""
        from offsetops.coordinator_core.sources.live import LiveSource

        if self.client is None:
            raise ValueError(f"{self.describe()} is not a live cluster")
        return LiveSource(self.client, topic=topic or self.topic, max_batch_bytes=self.limits.max_batch_bytes)

    def partition_dirs(self, replicas: list[ReplicaChoice] | None = None) -> list[PartitionDir]:
        """The partition dirs a reload reads: of the log dir, or each partition's chosen copy
        (``replicas`` receives the choices, divergent copies included, for the caller to report)."""
        wanted = list(self.partitions) if self.partitions is not None else None
        if not self.broker_log_dirs:
            return list(open_log_dir(self.log_dir or "", partitions=wanted).partitions)
        from offsetops.coordinator_core.sources.replicas import open_log_dirs, split_broker_prefix

        try:
            specs = [split_broker_prefix(spec) for spec in self.broker_log_dirs]
        except ValueError as exc:
            raise LogDirError(f"--log-dir {exc}") from None
        choices = open_log_dirs(specs, partitions=wanted).choices()
        if replicas is not None:
            replicas.extend(choices)
        return [c.chosen.pdir for c in choices if c.chosen.pdir is not None]

    def load_caches(
        self,
        *,
        num_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
        semantics: str = "java",
        cut: Cut | None = None,
        replicas: list[ReplicaChoice] | None = None,
        on_partition: OnPartition | None = None,
        on_count: Callable[[int], None] | None = None,
    ) -> list[CoordinatorCache]:
        """doLoadGroupsAndOffsets of each wanted partition, whole or up to ``cut``, within the limits;
        ``on_count`` hears how many partitions will be read, ``on_partition`` each one read."""
        cut = cut or Cut()
        kw: dict[str, Any] = {"num_partitions": num_partitions, "semantics": semantics}
        out: list[CoordinatorCache] = []
        if self.client is not None:
            with self.live() as live:
                parts = list(self.partitions) if self.partitions is not None else live.partitions()
                if on_count is not None:
                    on_count(len(parts))
                for part in parts:
                    out.append(self._load_live(live, part, cut, kw))
                    if on_partition is not None:
                        on_partition(out[-1], out[-1].stats.bytes, f"{self.topic}-{part}")
            return out
        limit, crc = self.limits.max_batch_bytes, self.limits.verify_crc
        pdirs = self.partition_dirs(replicas)
        if on_count is not None:
            on_count(len(pdirs))
        for pdir in pdirs:
            if cut.until_offset is None and cut.until_ms is None:
                out.append(self._load_whole(pdir, kw))
            else:

                def batches(errors: list, p: PartitionDir = pdir) -> Any:
                    return p.iter_batches(errors, verify_crc=crc, max_batch_bytes=limit)

                out.append(load_as_of(batches, partition=pdir.partition, cut=cut, **kw))
                _not_resumed(out[-1], "as_of" if self.resumable else "not_requested")
            if on_partition is not None:
                on_partition(out[-1], pdir.size_bytes, f"{pdir.topic}-{pdir.partition}")
        return out

    def _load_whole(self, pdir: PartitionDir, kw: dict[str, Any]) -> CoordinatorCache:
        """One partition dir whole: resumed from ``state_store`` or ``state_dir`` when given and its state
        holds."""
        limit, crc = self.limits.max_batch_bytes, self.limits.verify_crc
        if not self.resumable:
            cache = load_partition_dir(pdir, max_batch_bytes=limit, verify_crc=crc, **kw)
            _not_resumed(cache, "not_requested")
            return cache
        from offsetops.coordinator_core.resume import load_partition_dir_resumable

        store = self._store()
        rider = None if self.scan_riders is None else self.scan_riders.rider(pdir, store)
        return load_partition_dir_resumable(
            pdir, store, max_batch_bytes=limit, verify_crc=crc, rider=rider, **kw
        )

    def _store(self) -> Any:
        """The resume state: the caller's ``state_store``, else the files under ``state_dir``."""
        from offsetops.coordinator_core.resume import StateStore

        return self.state_store if self.state_store is not None else StateStore.at(self.state_dir or "")

    def _load_live(self, live: LiveSource, part: int, cut: Cut, kw: dict[str, Any]) -> CoordinatorCache:
        from offsetops.coordinator_core.sources.live import load_live_partition

        if cut.until_offset is None and cut.until_ms is None:
            if self.resumable:
                from offsetops.coordinator_core.resume.live import load_live_partition_resumable

                return load_live_partition_resumable(
                    live, part, self._store(), verify_crc=self.limits.verify_crc, **kw
                )
            cache = load_live_partition(live, part, **kw)
            _not_resumed(cache, "not_requested")
            return cache

        def batches(errors: list) -> Any:
            return live.iter_batches(part, errors, verify_crc=self.limits.verify_crc)

        cache = load_as_of(batches, partition=part, cut=cut, **kw)
        _not_resumed(cache, "as_of" if self.resumable else "not_requested")
        return cache

    def load_or_empty(
        self, partitions: Sequence[int], *, num_partitions: int, semantics: str
    ) -> list[CoordinatorCache]:
        """:meth:`load_caches` of ``partitions``, with an empty cache (no groups) for one without a log."""
        from dataclasses import replace

        present = set(self.present_partitions())
        wanted = tuple(p for p in partitions if p in present)
        loaded = replace(self, partitions=wanted).load_caches(
            num_partitions=num_partitions, semantics=semantics
        )
        by_part = {c.partition: c for c in loaded}
        return [
            by_part.get(p)
            or CoordinatorCache(partition=p, groups={}, stats=LoadStats(), num_partitions=num_partitions)
            for p in partitions
        ]

    def present_partitions(self) -> list[int]:
        """The partitions the source holds."""
        if self.client is not None:
            with self.live() as live:
                return live.partitions()
        return [p.partition for p in self.partition_dirs()]


def _not_resumed(cache: CoordinatorCache, code: str) -> None:
    """Mark a read from the start that no resume state was asked for (or may be used for)."""
    from offsetops.coordinator_core.resume import REASONS

    cache.stats.resume_reason, cache.stats.resume_detail = code, REASONS[code]
