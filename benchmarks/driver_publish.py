"""``coordinator_cache``'s publish of a resumed read: the same rows published through Spark (session,
DataFrames, the per-partition facts as Spark jobs, seven partitioned writes) and from the driver
(facts from the rows, pyarrow writes, unchanged partitions left alone), side by side.

    .venv/bin/python -m benchmarks.driver_publish --log-dir benchmarks/data/main-job-200mb --repeat 3

The rows are the log dir's reload tables, read once on the driver (the fold a resumed run holds). Then,
in one process:

* ``spark start``: the local session (``local[2]``, as the demo's), once;
* ``spark publish``: DataFrames of the rows, ``partition_facts`` and ``summarise``, ``publish_tables``
  into a fresh tables dir (what the Spark path of the step does after the read);
* ``driver publish, all written``: ``partition_facts_from_rows``, ``summarise`` and ``publish_rows`` into
  a fresh tables dir (a first run: every partition written);
* ``driver publish, unchanged``: the same rows again into the same dir (a run where nothing changed;
  ``load_stats`` rows are written again only when their elapsed time differs, here it does not);
* ``driver publish, one partition changed``: the offsets of one partition changed, the rest kept.

Median and spread of ``--repeat`` runs, seconds; the files written. Nothing is timed in a test.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return times, result


def _row(label: str, times: list[float], note: str = "") -> str:
    spread = f"{min(times):.2f}-{max(times):.2f}" if len(times) > 1 else ""
    return f"| {label} | {statistics.median(times):.2f} | {spread} | {note} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-dir", default=str(ROOT / "benchmarks" / "data" / "main-job-200mb"))
    ap.add_argument("--partitions", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)

    from offsetops.assets.published_tables import publish_tables
    from offsetops.assets.resources import StateResource
    from offsetops.coordinator_core.sources.source import Source
    from offsetops.pipelines.cache_facts import partition_facts, partition_facts_from_rows, summarise
    from offsetops.pipelines.driver_publish import publish_rows
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.session import build_session
    from offsetops.pipelines.tables import all_cache_rows

    log_dir = Path(args.log_dir)
    if not log_dir.is_dir():
        raise SystemExit(f"{log_dir}: not a directory (run benchmarks/main_job.py once to simulate it)")
    partitions = list(range(args.partitions))
    started = time.perf_counter()
    caches = Source(log_dir=str(log_dir)).load_or_empty(
        partitions, num_partitions=args.partitions, semantics="java"
    )
    rows = all_cache_rows(caches)
    read_s = time.perf_counter() - started
    scratch = Path(tempfile.mkdtemp(prefix="offsetops-driver-publish-", dir=ROOT / "build"))
    try:
        spark_start, session = _timed(
            lambda: build_session(args.master, app_name="offsetops-bench", quiet=True, ship_code=False), 1
        )
        runs = iter(range(1 << 30))

        def spark_publish() -> None:
            state = StateResource(output_dir=str(scratch / f"spark-{next(runs)}"))
            tables = {t: session.createDataFrame(rows[t], schema) for t, schema in TABLE_SCHEMAS.items()}
            summarise(tables, partition_facts(tables))
            publish_tables(session, tables, state, partitions)

        def driver_publish(target: Path, these: dict[str, list[Any]]) -> Any:
            outcome = publish_rows({t: str(target / t) for t in TABLE_SCHEMAS}, these, partitions)
            summarise(TABLE_SCHEMAS, partition_facts_from_rows(outcome.rows))
            return outcome

        spark_s, _ = _timed(spark_publish, args.repeat)
        first_s, first = _timed(lambda: driver_publish(scratch / f"driver-{next(runs)}", rows), args.repeat)
        kept = scratch / "driver-kept"
        driver_publish(kept, rows)
        same_s, same = _timed(lambda: driver_publish(kept, rows), args.repeat)
        changed = dict(
            rows, offsets=[(r[0], *r[1:4], r[4] + 1, *r[5:]) if r[0] == 0 else r for r in rows["offsets"]]
        )
        flips = iter(range(1 << 30))
        one_s, one = _timed(
            lambda: driver_publish(kept, changed if next(flips) % 2 == 0 else rows), args.repeat
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    counts = ", ".join(f"{t} {len(r)}" for t, r in rows.items())
    print(f"log dir {log_dir}: {args.partitions} partitions read on the driver in {read_s:.1f} s; {counts}")
    print("| step | s (median) | spread | files written |")
    print("|---|---:|---:|---|")
    print(_row("spark start", spark_start, "once per process"))
    print(_row("spark publish (DataFrames, facts, seven writes)", spark_s))
    print(_row("driver publish, all written", first_s, f"{sum(first.written.values())} partition files"))
    print(_row("driver publish, unchanged", same_s, f"{sum(same.written.values())} partition files"))
    print(
        _row("driver publish, one partition changed", one_s, f"{sum(one.written.values())} partition files")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
