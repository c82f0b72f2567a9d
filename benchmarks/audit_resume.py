"""``offsetops audit --resume-state``: the cleaner audit of a log dir, then again after an append, reading
only what was appended; against the audit without a resume state (every segment read) on the same bytes.

    .venv/bin/python benchmarks/audit_resume.py --log-dir benchmarks/data/main-job-1000mb --append-mb 10

The log dir is copied into a scratch dir first (the original is never written). Each audit is
``offsetops audit COPY --json --no-record`` in a process of its own (wall time, peak RSS); the figures are
each run's wall seconds, the ``read`` it reports (bytes and partitions resumed) and whether the resumed
audit's partitions equal the fresh audit's (the fields of the read aside).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = "import sys; from offsetops.cli import main; sys.exit(main(sys.argv[1:]))"
_READ = ("bytes_read", "resumed", "resume_reason", "resume_detail", "state_error")


def audit(log_dir: Path, *extra: str) -> tuple[float, int, dict]:
    """One ``offsetops audit`` process: wall seconds, peak RSS (KiB) of the children so far, its JSON."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CLI, "audit", str(log_dir), "--json", "--no-record", *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"audit failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, json.loads(done.stdout)


def judged(doc: dict) -> list[dict]:
    return [{k: v for k, v in p.items() if k not in _READ} for p in doc["partitions"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-dir", required=True, help="a broker log dir (copied, never written)")
    ap.add_argument("--append-mb", type=float, default=10.0)
    ap.add_argument("--scratch", help="where the copy goes (default: a temporary dir, removed after)")
    args = ap.parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks.main_job import append_commits

    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="audit-resume-"))
    try:
        copy, state = scratch / "logdir", scratch / "state"
        shutil.copytree(args.log_dir, copy)
        size = sum(f.stat().st_size for f in copy.glob("__consumer_offsets-*/*.log"))
        rows = []
        wall, rss, first = audit(copy, "--resume-state", str(state))
        rows.append(("--resume-state, first run (no state yet)", wall, rss, first["read"]))
        appended = append_commits(copy, args.append_mb)
        wall, rss, second = audit(copy, "--resume-state", str(state))
        rows.append((f"--resume-state, after {appended / 1e6:.2f} MB appended", wall, rss, second["read"]))
        wall, rss, fresh = audit(copy)
        rows.append(("no resume state, same bytes", wall, rss, {"bytes_read": size + appended}))
        load = os.getloadavg()[0]
        print(
            f"log dir {args.log_dir}: {size / 1e6:.1f} MB, {appended / 1e6:.2f} MB appended; load {load:.1f}"
        )
        print("| audit | wall s | bytes read | partitions resumed | peak RSS so far MiB |")
        print("|---|---:|---:|---:|---:|")
        for name, wall, rss, read in rows:
            resumed = read.get("resumed", "")
            print(
                f"| {name} | {wall:.1f} | {read['bytes_read'] / 1e6:.2f} MB | {resumed} | {rss / 1024:.0f} |"
            )
        print(f"resumed audit equals the fresh audit: {judged(second) == judged(fresh)}")
        return 0 if judged(second) == judged(fresh) else 1
    finally:
        if not args.scratch:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
