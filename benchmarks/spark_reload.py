"""Spark reload scaling: local[1] vs local[2], Arrow vs per-row path, vs the single-process reload.

    .venv/bin/python benchmarks/spark_reload.py --simulate /tmp/bench-logdir --target-mb 40
    .venv/bin/python benchmarks/spark_reload.py --input /path/to/logdir

Each Spark configuration runs in its own process (a JVM has one master); each does one warm-up run
(JVM/JIT, Python workers) and then ``--repeat`` timed runs of the whole job (list, decode, merge,
write Parquet), of which the best is reported. Session start-up is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _child(args: argparse.Namespace) -> None:
    from offsetops.pipelines.reload import ReloadOptions, run_reload
    from offsetops.pipelines.session import build_session

    spark = build_session(args.master, quiet=True, ship_code=False)
    out = tempfile.mkdtemp(prefix="offsetops-bench-")
    options = ReloadOptions()
    run_reload(spark, args.input, out, options, mode=args.mode)  # warm-up
    times = []
    result = None
    for _ in range(args.repeat):
        t = time.perf_counter()
        result = run_reload(spark, args.input, out, options, mode=args.mode)
        times.append(time.perf_counter() - t)
    print(json.dumps({"best_s": min(times), "times_s": times, "counts": result.counts if result else {}}))


def _stages(args: argparse.Namespace) -> None:
    """The Arrow job's stages, timed one after the other: listing and planning, fold and merge (the
    table counts, over the persisted blobs), then each table's Parquet write on its own."""
    from offsetops.pipelines.reload import ReloadOptions, blob_counts, reload_tables, run_reload, write_tables
    from offsetops.pipelines.session import build_session
    from offsetops.pipelines.source import list_log_dir
    from pyspark import StorageLevel

    spark = build_session(args.master, quiet=True, ship_code=False)
    out = tempfile.mkdtemp(prefix="offsetops-bench-")
    run_reload(spark, args.input, out, ReloadOptions())  # warm-up
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        listing = list_log_dir(spark, args.input)
        tables, blobs = reload_tables(spark, listing, ReloadOptions())
        blobs.persist(StorageLevel.MEMORY_AND_DISK)
        t1 = time.perf_counter()
        counts = blob_counts(blobs, list(tables))
        t2 = time.perf_counter()
        writes = {}
        for name, df in tables.items():
            t = time.perf_counter()
            write_tables({name: df}, out, counts)
            writes[name] = round(time.perf_counter() - t, 2)
        blobs.unpersist()
        print(
            f"{args.master}: plan {t1 - t0:.2f} s, fold and merge {t2 - t1:.2f} s, "
            f"writes one by one {sum(writes.values()):.2f} s {writes}",
            flush=True,
        )


def _spark_run(input_path: str, master: str, mode: str, repeat: int) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        "--input",
        input_path,
        "--master",
        master,
        "--mode",
        mode,
        "--repeat",
        str(repeat),
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _single_process(input_path: str, repeat: int) -> float:
    from offsetops.coordinator_core.loader import load_log_dir

    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        load_log_dir(input_path)
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--input", help="an existing broker log dir")
    p.add_argument("--simulate", metavar="DIR", help="simulate a log dir into DIR first (if absent)")
    p.add_argument("--target-mb", type=float, default=40.0, help="simulated log size (default 40 MB)")
    p.add_argument("--segment-kb", type=int, default=1024, help="simulated segment.bytes (default 1 MiB)")
    p.add_argument("--partitions", type=int, default=8, help="simulated partitions (default 8)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument(
        "--stages", action="store_true", help="time the stages of the Arrow job at --master instead"
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--master", default="local[2]", help="with --stages: the master (default local[2])")
    p.add_argument("--mode", default="arrow", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args)
        return 0
    if args.stages:
        _stages(args)
        return 0
    if args.simulate:
        from offsetops.coordinator_core.simulator import SimulationConfig, simulate

        out = Path(args.simulate)
        if not out.exists():
            simulate(
                SimulationConfig(
                    out_dir=out,
                    groups=200,
                    partitions=args.partitions,
                    days=30,
                    seed=3,
                    segment_bytes=args.segment_kb * 1024,
                    target_bytes=int(args.target_mb * 1e6),
                    kafka_version="4.0",
                    compression="mixed",
                )
            )
        args.input = str(out)
    if not args.input:
        p.error("give --input or --simulate")
    files = list(Path(args.input).glob("__consumer_offsets-*/*.log"))
    size = sum(f.stat().st_size for f in files)
    print(
        f"input: {args.input}: {len(files)} segments, {size / 1e6:.1f} MB, cores={os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    single = _single_process(args.input, args.repeat)
    print(f"single process (load_log_dir):      {single:7.2f} s  {size / 1e6 / single:6.1f} MB/s")
    runs = [("local[1]", "arrow"), ("local[2]", "arrow"), ("local[1]", "rows"), ("local[2]", "rows")]
    results = {}
    for master, mode in runs:
        r = _spark_run(args.input, master, mode, args.repeat)
        results[(master, mode)] = r
        print(
            f"spark {master} {mode:5} (whole job):     {r['best_s']:7.2f} s  "
            f"{size / 1e6 / r['best_s']:6.1f} MB/s"
            f"  {r['counts']['offsets']} offsets"
        )
    a1, a2 = results[("local[1]", "arrow")]["best_s"], results[("local[2]", "arrow")]["best_s"]
    r2 = results[("local[2]", "rows")]["best_s"]
    print(f"scaling local[1] -> local[2] (arrow): x{a1 / a2:.2f}")
    print(f"arrow vs rows at local[2]:            x{r2 / a2:.2f} faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
