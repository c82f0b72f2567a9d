"""Live reload: one process (``offsetops reload --bootstrap``) vs the Spark executors (``pipeline live``).

    .venv/bin/python benchmarks/live_reload.py --groups 200 --days 0.5 --masters 'local[1],local[2]'
    .venv/bin/python benchmarks/live_reload.py --bootstrap HOST:PORT --topic __consumer_offsets

Without ``--bootstrap`` a simulated ``__consumer_offsets`` (Kafka 4.0 records, transactions, mixed
codecs, 3 partitions) is replayed into a Tansu broker on loopback (the test broker, see
docs/test-broker.md). The single-process read is timed in this process; each Spark master runs in its
own process (a JVM has one master), with one warm-up run and then ``--repeat`` timed runs of the
whole job (plan, fetch and fold, merge, write Parquet), of which the best is reported. Session
start-up is not counted. The tables of the last run are compared, row for row, with the
single-process read; records per second are the records read (``load_stats.records``) over the best
time.

Tansu bounds the work of each Fetch by ``fetch.max.wait.ms`` (docs/test-broker.md), so against the
test broker the reads ask for ``--fetch-max-wait-ms`` 5000 (a Kafka broker with data below the high
watermark answers at once, whatever the wait).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _config(args: argparse.Namespace):
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig

    return KafkaClientConfig(args.bootstrap, fetch_max_wait_ms=args.fetch_max_wait_ms)


def _comparable(tables: dict[str, list]) -> dict[str, list]:
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.tables import comparable

    return {
        name: comparable(tables[name], schema, drop=["elapsed_ms"] if name == "load_stats" else [])
        for name, schema in TABLE_SCHEMAS.items()
    }


def _child(args: argparse.Namespace) -> None:
    from offsetops.pipelines.live import run_live_reload
    from offsetops.pipelines.reload import ReloadOptions, read_tables
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.session import build_session

    spark = build_session(args.master, quiet=True, ship_code=False)
    out = tempfile.mkdtemp(prefix="offsetops-bench-live-")
    config = _config(args)
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
    tables = read_tables(spark, out)
    got = _comparable({name: [tuple(r) for r in tables[name].collect()] for name in TABLE_SCHEMAS})
    reference = pickle.loads(Path(args.reference).read_bytes())
    differ = [name for name in TABLE_SCHEMAS if got[name] != reference[name]]
    doc = {"best_s": min(times), "times_s": times, "ranges": result.ranges, "differ": differ}
    print(json.dumps(doc))


def _single(args: argparse.Namespace) -> tuple[float, dict[str, list]]:
    from offsetops.coordinator_core.sources.live import LiveSource, load_live_partition
    from offsetops.pipelines.tables import all_cache_rows

    best, rows = float("inf"), {}
    for _ in range(args.repeat + 1):
        t = time.perf_counter()
        with LiveSource(_config(args), topic=args.topic) as source:
            parts = source.partitions()
            caches = [load_live_partition(source, p, num_partitions=args.num_partitions) for p in parts]
        best = min(best, time.perf_counter() - t)
        rows = all_cache_rows(caches)
    return best, rows


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
    p.add_argument("--fetch-max-wait-ms", type=int, default=None, help="default: 5000 on Tansu, else 500")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--master", help=argparse.SUPPRESS)
    p.add_argument("--reference", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.fetch_max_wait_ms is None:
        args.fetch_max_wait_ms = 500 if args.bootstrap else 5000
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
        load = os.getloadavg()[0]
        single_s, single_rows = _single(args)
        records = sum(row[3] for row in single_rows["load_stats"])  # load_stats.records
        counts = {name: len(rows) for name, rows in single_rows.items()}
        reference = Path(tempfile.mkdtemp(prefix="offsetops-bench-live-")) / "reference.pickle"
        reference.write_bytes(pickle.dumps(_comparable(single_rows)))
        print(f"load average at start: {load:.1f} on {os.cpu_count()} cores; {records:,} records read")
        print(f"single process          : {single_s:7.2f} s  {records / single_s:>10,.0f} rec/s  {counts}")
        for master in args.masters.split(","):
            child = [
                sys.executable, __file__, "--child", "--master", master, "--bootstrap", args.bootstrap,
                "--topic", args.topic, "--num-partitions", str(args.num_partitions),
                "--max-range-offsets", str(args.max_range_offsets), "--repeat", str(args.repeat),
                "--fetch-max-wait-ms", str(args.fetch_max_wait_ms), "--reference", str(reference),
            ]  # fmt: skip
            done = subprocess.run(child, capture_output=True, text=True, check=True, cwd=ROOT)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            same = "yes" if not result["differ"] else f"NO ({', '.join(result['differ'])})"
            best = result["best_s"]
            print(
                f"executors {master:<14}: {best:7.2f} s  {records / best:>10,.0f} rec/s  "
                f"{result['ranges']} ranges, same tables as the single process: {same}"
            )
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
