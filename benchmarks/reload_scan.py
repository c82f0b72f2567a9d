"""The Spark reload with and without the cleaner audit's scan in its pass, in one session, alternating.

    .venv/bin/python benchmarks/reload_scan.py --log-dir benchmarks/data/main-job-1000mb --repeat 2

Each round runs ``run_reload`` (list, fold, merge, write the tables) without and then with a
``CleanerScanRequest``: the difference is what the scan adds to the reload's pass (the scan's own
Spark job, which it replaces, is not run). The output goes to a scratch dir under ``build/``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)
    from offsetops.coordinator_core.cleaner.config import CleanerConfig
    from offsetops.pipelines.reload import run_reload
    from offsetops.pipelines.reload_scan import CleanerScanRequest
    from offsetops.pipelines.session import build_session

    spark = build_session(args.master, app_name="offsetops-bench-reload-scan", quiet=True)
    (ROOT / "build").mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="offsetops-reload-scan-", dir=ROOT / "build"))
    request = CleanerScanRequest("bench", CleanerConfig(), 1_800_000_000_000, scratch / "scan.json")
    times: dict[str, list[float]] = {"reload": [], "reload + cleaner scan": []}
    try:
        for _ in range(args.repeat):
            for name, scan in (("reload", None), ("reload + cleaner scan", request)):
                started = time.perf_counter()
                run_reload(spark, args.log_dir, str(scratch / "tables"), scan=scan)
                times[name].append(time.perf_counter() - started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"| run_reload ({args.master}) | s (median; runs) |\n|---|---:|")
    for name, got in times.items():
        print(f"| {name} | {statistics.median(got):.1f} ({', '.join(f'{t:.1f}' for t in got)}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
