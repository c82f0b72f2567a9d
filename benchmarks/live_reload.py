"""Live reload: one process (``offsetops reload --bootstrap``) vs the Spark executors (``pipeline live``).

    .venv/bin/python benchmarks/live_reload.py --groups 200 --days 0.5 --masters 'local[1],local[2]'
    .venv/bin/python benchmarks/live_reload.py --bootstrap HOST:PORT --topic __consumer_offsets

Without ``--bootstrap`` a simulated ``__consumer_offsets`` (Kafka 4.0 records, transactions, mixed
codecs, 3 partitions) is replayed into a Tansu broker on loopback (the test broker, see
docs/test-broker.md). The single-process read is timed in this process; each Spark master runs in its
own process (a JVM has one master), with one warm-up run and then ``--repeat`` timed runs of the
whole job (plan, fetch and fold, merge, write Parquet), of which the best is reported. Session
start-up is not counted. Every run's row counts are printed so equal results can be checked.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _child(args: argparse.Namespace) -> None:
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig
    from offsetops.pipelines.live import run_live_reload
    from offsetops.pipelines.reload import ReloadOptions
    from offsetops.pipelines.session import build_session

    spark = build_session(args.master, quiet=True, ship_code=False)
    out = tempfile.mkdtemp(prefix="offsetops-bench-live-")
    config = KafkaClientConfig(args.bootstrap)
    options = ReloadOptions(num_partitions=args.num_partitions)

    def once():
        return run_live_reload(
            spark, config, out, options, topic=args.topic, max_range_offsets=args.max_range_offsets
        )

    once()  # warm-up
    times, result = [], None
    for _ in range(args.repeat):
        t = time.perf_counter()
        result = once()
        times.append(time.perf_counter() - t)
    assert result is not None
    doc = {"best_s": min(times), "times_s": times, "ranges": result.ranges, "counts": result.counts}
    print(json.dumps(doc))


def _single(bootstrap: str, topic: str, num_partitions: int, repeat: int) -> tuple[float, dict[str, int]]:
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig
    from offsetops.coordinator_core.sources.live import LiveSource, load_live_partition
    from offsetops.pipelines.tables import all_cache_rows

    best, counts = float("inf"), {}
    for _ in range(repeat + 1):
        t = time.perf_counter()
        with LiveSource(KafkaClientConfig(bootstrap), topic=topic) as source:
            parts = source.partitions()
            caches = [load_live_partition(source, p, num_partitions=num_partitions) for p in parts]
        best = min(best, time.perf_counter() - t)
        counts = {k: len(v) for k, v in all_cache_rows(caches).items()}
    return best, counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", help="an existing cluster (default: a Tansu broker with simulated data)")
    p.add_argument("--topic", default="offsets-mirror")
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--days", type=float, default=0.5)
    p.add_argument("--num-partitions", type=int, default=3)
    p.add_argument("--masters", default="local[1],local[2]")
    p.add_argument("--max-range-offsets", type=int, default=50_000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--master", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(args)
        return
    broker = None
    # Stop the broker we start on Ctrl-C and on SIGTERM alike (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not args.bootstrap:
        from offsetops.coordinator_core.simulator import SimulationConfig, simulate

        from tests.support.broker import BrokerClient, TansuBroker, mirror_log_dir

        work = Path(tempfile.mkdtemp(prefix="offsetops-bench-live-"))
        sim = simulate(
            SimulationConfig(
                out_dir=work / "logdir",
                groups=args.groups,
                partitions=args.num_partitions,
                days=args.days,
                seed=1,
                kafka_version="4.0",
                compression="mixed",
            )
        )
        broker = TansuBroker.start()
        args.bootstrap = broker.bootstrap
        with BrokerClient(broker.bootstrap) as bc:
            mirror_log_dir(bc, sim.out_dir, args.topic, partitions=args.num_partitions)
    try:
        single_s, single_counts = _single(args.bootstrap, args.topic, args.num_partitions, args.repeat)
        load = os.getloadavg()[0]
        print(f"load average at start: {load:.1f} on {os.cpu_count()} cores")
        print(f"single process          : {single_s:7.2f} s  {single_counts}")
        for master in args.masters.split(","):
            child = [
                sys.executable, __file__, "--child", "--master", master, "--bootstrap", args.bootstrap,
                "--topic", args.topic, "--num-partitions", str(args.num_partitions),
                "--max-range-offsets", str(args.max_range_offsets), "--repeat", str(args.repeat),
            ]  # fmt: skip
            done = subprocess.run(child, capture_output=True, text=True, check=True, cwd=ROOT)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            same = result["counts"] == single_counts
            print(
                f"executors {master:<14}: {result['best_s']:7.2f} s  {result['ranges']} ranges, "
                f"same row counts: {same}"
            )
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
