"""Where one ``exporter --follow`` update spends its time, stage by stage, in one process.

    .venv/bin/python -m benchmarks.follow_stages --size 1GB --append 10MB --repeat 3

The follow benchmark's data (``benchmarks/follow.py``: the reload benchmark's log dir, Kafka 3.9, 200
groups on 50 partitions) is copied to ``benchmarks/data/follow-stages-<size>``; the exporter's own
snapshot and collector objects (``ExporterSnapshots``, ``OffsetsCollector``, the resume state in
memory) follow it in this process. Each round appends ``--append`` bytes of offset commits as the
follow benchmark does and runs one look and update; printed per round: the update's wall and CPU
seconds, the exposition's size, and the CPU and wall milliseconds of each stage (this thread's CPU
clock and a perf counter around the functions named below), then the cost of a look that finds
nothing. On a shared machine the CPU milliseconds are the figures to compare.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.follow import GROUPS, PARTITIONS, RECORD_BYTES, append, prepare_appends  # noqa: E402
from benchmarks.reload import DATA, ensure_data, parse_size  # noqa: E402

#: (module, attribute path, label): the stages of one update, in the order they run
STAGES = (
    ("offsetops.coordinator_core.follow", "Follower.look", "look (marks of every partition)"),
    ("offsetops.coordinator_core.resume.logdir", "resume_from", "resume state read"),
    ("offsetops.coordinator_core.resume.logdir", "fold_segments", "fold of the appended bytes"),
    ("offsetops.coordinator_core.resume.logdir", "_save", "resume state saved"),
    ("offsetops.coordinator_core.loader", "PartitionFold.finish", "finish (whole)"),
    ("offsetops.coordinator_core.loader", "PartitionFold.finish_reusing", "finish (reusing survivors)"),
    ("offsetops.commands._exporter_snapshots", "source_log_offsets", "data partitions' log offsets"),
    ("offsetops.coordinator_core.metrics_snapshot", "describe_groups", "group views (every group)"),
    ("offsetops.coordinator_core.metrics_pieces", "SnapshotPieces.views", "group views (what moved)"),
    ("offsetops.commands._exporter_snapshots", "compute_snapshot", "snapshot (expiration, failover)"),
    ("offsetops.commands.exporter", "OffsetsCollector._render", "exposition"),
)


def instrument(times: dict[str, list[float]]) -> None:
    """Wrap each stage that exists in this version of the code with a perf counter."""
    for module_name, path, label in STAGES:
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            continue  # a version of the code without that stage
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        if not hasattr(owner, name):
            continue
        setattr(owner, name, _timed(getattr(owner, name), label, times))


def _timed(fn: Callable[..., Any], label: str, times: dict[str, list[float]]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = times.setdefault(label, [0.0, 0.0])
            spent[0] += time.thread_time() - cpu
            spent[1] += time.perf_counter() - wall

    return wrapper


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="1GB", help="size of the simulated log dir (10MB .. 1GB)")
    p.add_argument("--append", default="10MB", help="bytes of commits appended per round")
    p.add_argument("--repeat", type=int, default=3, help="rounds")
    args = p.parse_args(argv)
    size, append_bytes = parse_size(args.size), parse_size(args.append)
    gen = argparse.Namespace(
        data_dir=str(DATA), kafka_version="3.9", groups=GROUPS, partitions=PARTITIONS, seed=1
    )
    source, _ = ensure_data(size, "none", gen)
    logdir = DATA / f"follow-stages-{args.size}"
    shutil.rmtree(logdir, ignore_errors=True)
    shutil.copytree(source, logdir)

    from offsetops.cli import build_parser
    from offsetops.commands._exporter_snapshots import ExporterSnapshots
    from offsetops.commands._run import resolve_args
    from offsetops.commands.exporter import OffsetsCollector

    times: dict[str, list[float]] = {}
    instrument(times)
    ns = build_parser().parse_args(["exporter", str(logdir), "--num-partitions", str(PARTITIONS),
                                    "--follow", "--interval", "86400"])  # fmt: skip
    resolve_args(ns)
    ns.offsets_topic = "__consumer_offsets"
    snapshots = ExporterSnapshots(ns)
    kw = {"exposition": snapshots.exposition} if hasattr(snapshots, "exposition") else {}
    collector = OffsetsCollector(snapshots.full, follow=snapshots.follow, **kw)
    collector.refresh()
    try:
        for r in range(1, args.repeat + 1):
            now_ms = int(time.time() * 1000)
            append(
                prepare_appends(logdir, max(append_bytes // RECORD_BYTES // GROUPS, 1), now_ms * 1000, now_ms)
            )
            times.clear()
            cpu, wall = time.process_time(), time.perf_counter()
            collector.follow()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"round {r}: update {wall:.3f} s wall, {cpu:.3f} s CPU; exposition "
                  f"{len(collector.exposition()):,} bytes")  # fmt: skip
            for _m, _p, label in STAGES:
                if label in times:
                    cpu_s, wall_s = times[label]
                    print(f"  {label:36s} {cpu_s * 1000:7.1f} ms CPU ({wall_s * 1000:7.1f} ms wall)")
            cpu, wall = time.thread_time(), time.perf_counter()
            collector.follow()
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            label = "a look that finds nothing"
            print(f"  {label:36s} {cpu * 1000:7.1f} ms CPU ({wall * 1000:7.1f} ms wall)")
    finally:
        snapshots.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
