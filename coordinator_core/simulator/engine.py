"""``simulate()``: run the cluster model and write a broker log dir plus ``truth.json``."""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.clock import write_clock_declaration
from offsetops.coordinator_core.simulator.cluster import Cluster
from offsetops.coordinator_core.simulator.data_topics import write_data_partitions
from offsetops.coordinator_core.simulator.log import PartitionLog
from offsetops.coordinator_core.simulator.model import MS_PER_DAY
from offsetops.coordinator_core.simulator.profile import CODECS, BrokerProfile, broker_profile
from offsetops.coordinator_core.sources.logdir import (
    CLEANER_CHECKPOINT,
    LOG_START_CHECKPOINT,
    OFFSETS_TOPIC,
    RECOVERY_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    write_offset_checkpoint,
)

log = logging.getLogger(__name__)

TRUTH_FILE = "truth.json"
TRUTH_FORMAT = 1
DEFAULT_SEGMENT_BYTES = 100 * 1024 * 1024  # offsets.topic.segment.bytes
START_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z; simulated time starts here for every seed
_CHECK_EVERY = 256  # events between two looks at the log size when --target-bytes is set


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """What to simulate. ``target_bytes``, when set, replaces ``days`` as the stopping rule."""

    out_dir: Path
    groups: int = 100
    partitions: int = 50
    days: float = 1.0
    seed: int = 0
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    target_bytes: int | None = None
    compression: str = "none"  # none|gzip|snappy|lz4|zstd|mixed
    kafka_version: str = "3.9"
    compacted_fraction: float = 0.5  # share of partitions whose cleaner is alive
    data_topics: bool = False  # also write the groups' data-topic partition dirs (lag, out of range)

    def codecs(self, profile: BrokerProfile) -> tuple[int, ...]:
        if self.compression == "mixed":
            return profile.codecs
        if self.compression not in CODECS:
            raise ValueError(
                f"compression must be one of {sorted(CODECS)} or mixed, got {self.compression!r}"
            )
        codec = CODECS[self.compression]
        if codec not in profile.codecs:
            raise ValueError(f"Kafka {profile.kafka_version} cannot write {self.compression} (KIP-110, 2.1)")
        return (codec,)


@dataclass(slots=True)
class SimulationResult:
    out_dir: Path
    truth_path: Path
    bytes_written: int
    simulated_until_ms: int
    elapsed_s: float
    stats: dict[str, Any] = field(default_factory=dict)


def _kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def simulate(
    config: SimulationConfig, *, progress: Callable[[int, int], None] | None = None
) -> SimulationResult:
    """Simulate ``config`` and write the log dir, ``truth.json`` and the clock declaration.

    Deterministic for a seed (file mtimes aside). Memory is bounded by the live groups: batches go
    straight to their segment file, and only the coordinator's cache is kept. ``progress`` is told
    ``(simulated ms so far, bytes written so far)`` every few hundred events.
    """
    started = time.perf_counter()
    profile = broker_profile(config.kafka_version)
    codecs = config.codecs(profile)
    if config.partitions <= 0 or config.groups < 0 or config.segment_bytes < 1024:
        raise ValueError("partitions must be > 0, groups >= 0 and segment bytes >= 1024")
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.glob(f"{OFFSETS_TOPIC}-*")) or (out / TRUTH_FILE).exists():
        raise FileExistsError(f"{out} already holds a log dir; simulate into an empty directory")
    rng = random.Random(config.seed)
    logs = _partition_logs(out, config, profile, rng)
    cluster = Cluster(
        profile=profile, logs=logs, rng=rng, num_groups=config.groups, start_ms=START_MS, codecs=codecs
    )
    _run(cluster, logs, config, progress)
    end_ms = cluster.now
    if progress is not None:
        progress(end_ms - START_MS, sum(p.size_bytes for p in logs))
    for plog in logs:
        plog.close(end_ms)
    _write_broker_files(out, logs, profile, rng, end_ms)
    truth = _truth(config, profile, cluster, logs, end_ms)
    if config.data_topics:
        truth["data_partitions"] = write_data_partitions(
            out, truth["partitions"], seed=config.seed, end_ms=end_ms
        )
    truth_path = out / TRUTH_FILE
    with open(truth_path, "w", encoding="utf-8") as fh:
        json.dump(truth, fh, indent=1, sort_keys=False, ensure_ascii=False)
        fh.write("\n")
    # The data ends at the simulated time: everything that evaluates it must use that clock, not today's.
    write_clock_declaration(
        out,
        end_ms,
        declared_by=f"offsetops simulate, seed {config.seed}, Kafka {profile.kafka_version}",
        broker_version=profile.kafka_version,
    )
    total = sum(p.size_bytes for p in logs)
    stats = cluster.stats.to_json()
    stats["cleaner_passes"] = sum(p.cleaner.passes for p in logs)
    stats["cleaner_records_removed"] = sum(p.cleaner.records_removed for p in logs)
    return SimulationResult(out, truth_path, total, end_ms, time.perf_counter() - started, stats)


def _partition_logs(
    out: Path, config: SimulationConfig, profile: BrokerProfile, rng: random.Random
) -> list[PartitionLog]:
    """One log per offsets partition, a ``compacted_fraction`` of them compacted, each with its epoch."""
    compacted = set(
        rng.sample(range(config.partitions), round(config.partitions * config.compacted_fraction))
    )
    logs = [
        PartitionLog(
            root=out,
            partition=p,
            segment_bytes=config.segment_bytes,
            compacted=p in compacted,
            delete_horizon=profile.delete_horizon,
            leader_epoch=rng.randint(0, 5),
        )
        for p in range(config.partitions)
    ]
    for plog in logs:
        plog.epochs.append((plog.leader_epoch, 0))
    return logs


def _run(
    cluster: Cluster,
    logs: list[PartitionLog],
    config: SimulationConfig,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Run the cluster for ``config.days``, or until the logs hold ``config.target_bytes``, telling
    ``progress`` every few hundred events."""
    if config.target_bytes is not None:
        target = config.target_bytes
        counter = 0
        last_report = [time.perf_counter()]

        def reached() -> bool:
            nonlocal counter
            counter += 1
            if counter % _CHECK_EVERY:
                return False
            size = sum(p.size_bytes for p in logs)
            if progress is not None:
                progress(cluster.now - START_MS, size)
            if time.perf_counter() - last_report[0] > 10:
                last_report[0] = time.perf_counter()
                log.info(
                    "simulated %.2f days, %.1f MB of %.1f MB",
                    (cluster.now - START_MS) / MS_PER_DAY,
                    size / 1e6,
                    target / 1e6,
                )
            return size >= target

        cluster.run_until(None, reached)
    elif progress is not None:
        events = 0

        def report() -> bool:
            nonlocal events
            events += 1
            if events % _CHECK_EVERY == 0:
                progress(cluster.now - START_MS, sum(p.size_bytes for p in logs))
            return False

        cluster.run_until(START_MS + int(config.days * MS_PER_DAY), report)
    else:
        cluster.run_until(START_MS + int(config.days * MS_PER_DAY))


def _truth(
    config: SimulationConfig, profile: BrokerProfile, cluster: Cluster, logs: list[PartitionLog], end_ms: int
) -> dict[str, Any]:
    """``truth.json``: what the simulated coordinator holds per partition, and how it got there."""
    return {
        "format": TRUTH_FORMAT,
        "kafka_version": profile.kafka_version,
        "semantics": profile.semantics,
        "offset_value_version": profile.offset_value_version,
        "group_value_version": profile.group_value_version,
        "seed": config.seed,
        "num_partitions": config.partitions,
        "compression": config.compression,
        "start_ms": START_MS,
        "simulated_until_ms": end_ms,
        "partitions": [
            {
                "partition": plog.partition,
                "compacted": plog.compacted,
                "log_end_offset": plog.next_offset,
                "groups": cluster.truth_groups(plog.partition),
            }
            for plog in logs
        ],
        "open_transactions": cluster.open_transactions(),
        "stats": cluster.stats.to_json(),
    }


def _write_broker_files(
    out: Path, logs: list[PartitionLog], profile: BrokerProfile, rng: random.Random, end_ms: int
) -> None:
    """``meta.properties``, ``partition.metadata`` and the log dir's checkpoint files."""
    topic_id = uuid.UUID(int=rng.getrandbits(128))
    cluster_id = _kafka_uuid(uuid.UUID(int=rng.getrandbits(128)))
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(end_ms / 1000))
    if profile.kraft:
        directory_id = _kafka_uuid(uuid.UUID(int=rng.getrandbits(128)))
        meta = f"#\n#{stamp}\nnode.id=1\ndirectory.id={directory_id}\nversion=1\ncluster.id={cluster_id}\n"
    else:
        meta = f"#\n#{stamp}\nbroker.id=1\nversion=0\ncluster.id={cluster_id}\n"
    (out / "meta.properties").write_text(meta)
    if profile.at_least(2, 8):
        for plog in logs:
            (plog.dir / "partition.metadata").write_text(f"version: 0\ntopic_id: {_kafka_uuid(topic_id)}\n")
    leo = {(OFFSETS_TOPIC, p.partition): p.next_offset for p in logs}
    write_offset_checkpoint(out / RECOVERY_CHECKPOINT, leo)
    write_offset_checkpoint(out / REPLICATION_CHECKPOINT, leo)
    compacted = [p for p in logs if p.compacted]
    write_offset_checkpoint(
        out / CLEANER_CHECKPOINT,
        {(OFFSETS_TOPIC, p.partition): p.first_dirty_offset for p in compacted if p.cleaner.passes},
    )
    write_offset_checkpoint(
        out / LOG_START_CHECKPOINT,
        {(OFFSETS_TOPIC, p.partition): p.segments[0].base_offset for p in compacted},
    )
    for name in (RECOVERY_CHECKPOINT, REPLICATION_CHECKPOINT, CLEANER_CHECKPOINT, LOG_START_CHECKPOINT):
        os.utime(out / name, (end_ms / 1000, end_ms / 1000))
