"""``validate_cache`` alone on published tables: wall time, Spark jobs and py4j round trips per run.

    .venv/bin/offsetops demo --log-dir DIR --out OUT --spark-master 'local[2]'     # once: OUT/tables
    .venv/bin/python benchmarks/validation.py --out-dir OUT --threads 1,4 --repeat 6

To measure another revision, run the script from outside the repository (whose ``offsetops/`` would
shadow it) with ``PYTHONPATH`` on that revision's tree (``benchmarks.main_job.code_tree``) and
``--threads default``.

The tables are read as ``cache_validation`` reads them (every partition) in one local Spark session;
each run validates them into a scratch output dir, ``--threads`` values taken in turn, so runs of each
setting alternate. The clock is the one the demo's validation used (``OUT/reports/validation.json``)
unless ``--now-ms`` is given. Spark jobs are counted through a job group set around each run (the suite's
threads inherit it); py4j round trips by counting the driver's ``send_command`` calls. Every run's
outcomes are compared with the first run's; ``--dump`` writes that run's report fields, to compare two
revisions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

_CALLS = {"n": 0}
_LOCK = threading.Lock()


def count_py4j_round_trips() -> None:
    """Count every command the driver sends to the JVM (one round trip each)."""
    from py4j.clientserver import ClientServerConnection

    send = ClientServerConnection.send_command

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            _CALLS["n"] += 1
        return send(self, *args, **kwargs)

    ClientServerConnection.send_command = counted  # type: ignore[method-assign]


def read_tables(spark: Any, tables_dir: Path, num_partitions: int) -> dict[str, Any]:
    """The reload tables as ``assets.reload.read_cache_tables`` reads them for a run of every partition."""
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from pyspark.sql import functions as F

    out = {}
    for name, schema in TABLE_SCHEMAS.items():
        df = spark.read.schema(schema).parquet(str(tables_dir / name)).select(*schema.fieldNames())
        out[name] = df.where(F.col("offsets_partition").isin(list(range(num_partitions))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out-dir", required=True, help="an `offsetops demo --out` dir (its tables/ and reports/)"
    )
    ap.add_argument("--now-ms", type=int, help="the validation clock (default: the demo's)")
    ap.add_argument("--num-partitions", type=int, default=50)
    ap.add_argument(
        "--threads",
        default="1,4",
        help="comma-separated thread counts, run in turn; 'default' passes none (a revision without it)",
    )
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument(
        "--dump", help="write the first run's report fields (success, counts, outcomes) as JSON here"
    )
    args = ap.parse_args()
    out_dir = Path(args.out_dir)
    now_ms = args.now_ms or json.loads((out_dir / "reports" / "validation.json").read_text())["now_ms"]
    settings = [None if t == "default" else int(t) for t in args.threads.split(",")]

    started = time.perf_counter()
    from offsetops.pipelines.session import build_session

    local = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    spark = build_session(args.master, quiet=True, conf=local)
    print(f"Spark session: {time.perf_counter() - started:.2f} s", flush=True)
    count_py4j_round_trips()
    started = time.perf_counter()
    from offsetops.checks.suite import validate_cache

    print(f"Great Expectations import: {time.perf_counter() - started:.2f} s", flush=True)
    tables = read_tables(spark, out_dir / "tables", args.num_partitions)
    sc = spark.sparkContext
    walls: dict[int | None, list[float]] = {t: [] for t in settings}
    first: list[Any] | None = None
    for i in range(args.repeat):
        threads = settings[i % len(settings)]
        group = f"offsetops-validation-bench-{i}"
        sc.setJobGroup(group, "benchmarks/validation.py")
        _CALLS["n"] = 0
        started = time.perf_counter()
        options = {} if threads is None else {"threads": threads}
        with tempfile.TemporaryDirectory() as scratch:
            report = validate_cache(
                spark,
                tables,
                output_dir=scratch,
                now_ms=now_ms,
                num_partitions=args.num_partitions,
                **options,
            )
        wall = time.perf_counter() - started
        calls = _CALLS["n"]
        jobs = len(sc.statusTracker().getJobIdsForGroup(group))
        outcomes = report.to_dict()["outcomes"]
        if first is None:
            first = outcomes
            if args.dump:
                fields = ("success", "success_error_level", "counts", "outcomes", "decode_errors_sample")
                doc = report.to_dict()
                Path(args.dump).write_text(json.dumps({k: doc[k] for k in fields}, indent=1, sort_keys=True))
        walls[threads].append(wall)
        print(
            f"run {i + 1}: threads {threads or 'default'}: {wall:6.2f} s, {jobs} Spark jobs, "
            f"{calls} py4j round trips, "
            f"{len(report.failed)} of {len(outcomes)} failed, outcomes "
            f"{'equal to run 1' if outcomes == first else 'DIFFER from run 1'}",
            flush=True,
        )
    for threads, values in walls.items():
        if values:
            median = statistics.median(values)
            print(f"threads {threads or 'default'}: median {median:.2f} s over {len(values)} runs")


if __name__ == "__main__":
    main()
