"""Appending to a simulated log dir as a broker's coordinator would: offset commits at the end of a
partition's active segment, at the offsets that follow its last batch (follow mode's tests and benchmark)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from offsetops.coordinator_core.sources.logdir import list_segments

#: (group, topic, partition, committed offset)
Commit = tuple[str, str, int, int]
#: offsets.topic.num.partitions of :func:`follow_simulated`
FOLLOW_PARTITIONS = 4


@pytest.fixture(scope="session")
def follow_simulated(tmp_path_factory) -> Path:
    """A small simulated log dir (Kafka 3.9, 16 groups on 4 partitions); read-only: copy it to append."""
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    out = tmp_path_factory.mktemp("follow-sim") / "logdir"
    simulate(SimulationConfig(out_dir=out, groups=16, partitions=FOLLOW_PARTITIONS, days=0.05, seed=5))
    return out


@pytest.fixture
def follow_logdir(follow_simulated: Path, tmp_path: Path) -> Path:
    """A copy of :func:`follow_simulated` of the test's own, to append to."""
    return Path(shutil.copytree(follow_simulated, tmp_path / "logdir"))


def active_segment(pdir: Path) -> Path:
    """The partition's last segment (the one the broker appends to)."""
    segments, _anomalies = list_segments(pdir, None)
    if not segments:
        raise ValueError(f"{pdir} has no segment")
    return segments[-1].path


def next_offset(pdir: Path) -> int:
    """The offset the next batch of the partition gets: one past the last batch's last offset."""
    segments, _anomalies = list_segments(pdir, None)
    last = -1
    for seg in reversed(segments):
        errors: list = []
        for batch in iter_segment_batches(seg.path, errors=errors):
            last = max(last, batch.last_offset)
        if last >= 0:
            return last + 1
    return segments[0].base_offset if segments else 0


def commit_batches(commits: Sequence[Commit], *, base_offset: int, now_ms: int, per_batch: int = 50) -> bytes:
    """Offset commits (value v3) in batches of ``per_batch`` records, at offsets from ``base_offset``."""
    from offsetops.coordinator_core.records.builder import build_record_batch

    out = []
    for first in range(0, len(commits), per_batch):
        chunk = commits[first : first + per_batch]
        records = [
            (
                encode_key(OffsetCommitKey(group=g, topic=t, partition=p)),
                encode_value(OffsetCommitValue(3, offset, 0, "", now_ms)),
                now_ms,
            )
            for g, t, p, offset in chunk
        ]
        out.append(build_record_batch(records, base_offset=base_offset + first))
    return b"".join(out)


def append_commits(pdir: Path, commits: Sequence[Commit], *, now_ms: int, per_batch: int = 50) -> int:
    """Append ``commits`` to the partition's active segment; returns the bytes appended."""
    data = commit_batches(commits, base_offset=next_offset(pdir), now_ms=now_ms, per_batch=per_batch)
    with open(active_segment(pdir), "ab") as fh:
        fh.write(data)
    return len(data)


def groups_for(partition: int, n: int, prefix: str, num_partitions: int) -> list[str]:
    """``n`` group ids (``prefix-i``) that ``partition_for`` maps to ``partition``."""
    out, i = [], 0
    while len(out) < n:
        if partition_for(f"{prefix}-{i}", num_partitions) == partition:
            out.append(f"{prefix}-{i}")
        i += 1
    return out
