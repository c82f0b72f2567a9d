"""Reload of a Kafka 4.2 log dir with share and streams groups: cost, and equality with the ground truth.

    .venv/bin/python -m benchmarks.share_streams --size 20MB --groups 200

Data: a simulated Kafka 4.2 log dir of about ``--size`` bytes (seed 1, cleaner dead, reused under
``benchmarks/data/``): classic, consumer, share and streams groups (10% each of the last two). The
reload (native fold, Java semantics) is timed per CPU second; the share and streams replay is timed
on its own over the same records; the reload is compared with the simulator's truth.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.materialize import Materializer
from offsetops.coordinator_core.simulator import SimulationConfig, diff_truth, load_truth, simulate

from benchmarks.reload import parse_size

DATA = Path(__file__).resolve().parent / "data"
PARTITIONS = 10


def _logdir(size: int, groups: int) -> Path:
    out = DATA / f"share-streams-4.2-{size}-{groups}"
    if not (out / "truth.json").exists():
        simulate(
            SimulationConfig(
                out_dir=out,
                groups=groups,
                partitions=PARTITIONS,
                seed=1,
                target_bytes=size,
                compacted_fraction=0.0,
                kafka_version="4.2",
            )
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("20MB"))
    ap.add_argument("--groups", type=int, default=200)
    args = ap.parse_args()
    logdir = _logdir(args.size, args.groups)
    nbytes = sum(f.stat().st_size for f in logdir.rglob("*.log"))

    replay_s = 0.0
    original = Materializer._build_kip848

    def timed(self: Materializer, topic_ids: dict[str, str]) -> None:
        nonlocal replay_s
        c0 = time.process_time()
        original(self, topic_ids)
        replay_s += time.process_time() - c0

    Materializer._build_kip848 = timed  # type: ignore[method-assign]  # time one step of the real reload
    c0, w0 = time.process_time(), time.perf_counter()
    caches = load_log_dir(logdir, num_partitions=PARTITIONS, semantics="java")
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    Materializer._build_kip848 = original  # type: ignore[method-assign]

    records = sum(c.stats.records for c in caches)
    modern = sum(n for c in caches for t, n in c.stats.records_by_type.items() if 9 <= t <= 24)
    kinds = Counter(g.group_type for c in caches for g in c.groups.values())
    print(f"log dir {logdir} ({nbytes / 1e6:.1f} MB, {records:,} records, {modern:,} share/streams records)")
    print("groups: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    rate = f"{records / cpu:,.0f} rec/s  {nbytes / 1e6 / cpu:.1f} MB/s"
    print(f"reload  {cpu:7.2f} s CPU {wall:7.2f} s wall  {rate}")
    share = f"{replay_s:.3f} s CPU ({100 * replay_s / cpu:.1f}% of the reload)"
    print(f"consumer, share and streams groups rebuilt from their records: {share}")
    diffs = diff_truth(load_truth(logdir), [c.to_json() for c in caches])
    print(
        "reload equals the ground truth"
        if not diffs
        else "DIFFERS from the ground truth:\n" + "\n".join(diffs)
    )


if __name__ == "__main__":
    main()
