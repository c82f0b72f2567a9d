"""The main job (``offsetops demo``: every asset and check, local Spark) on one log dir: wall time and
the segment bytes each run reads, for the code at two git revisions side by side.

    .venv/bin/python benchmarks/main_job.py --simulate-mb 200 --before 86e81c3 --repeat 2

Each run is ``offsetops demo --log-dir DIR`` in a process of its own, under ``strace -ff --seccomp-bpf
-e trace=openat`` (only ``openat`` stops the process, so the trace costs little): the bytes read are
the sizes of the ``__consumer_offsets`` segment files the run's processes (driver, Spark workers)
opened, each open counted (every reader of a segment reads it whole). The ``--before`` revision
and the ``--after`` one (default ``HEAD``) are extracted with ``git archive`` into a scratch dir and
run from there with the same virtualenv and the same compiled fold (the repository's worktrees are
left alone, and edits in progress are not measured). The runs of the two codes alternate.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Top-level folders installed under the ``offsetops`` namespace (as setup.py maps them).
NAMESPACED = ("coordinator_core", "pipelines", "checks", "assets")
CLI = "import sys; from offsetops.cli import main; sys.exit(main(sys.argv[1:]))"
OPENAT = re.compile(r'openat\([^,]+, "([^"]+)", [^)]*\) = (-?\d+)')


def ensure_data(args: argparse.Namespace) -> Path:
    """The log dir: ``--log-dir``, or a simulated one of ``--simulate-mb`` (reused when present)."""
    if args.log_dir:
        return Path(args.log_dir).absolute()
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    path = Path(args.data_dir).absolute() / f"main-job-{args.simulate_mb}mb"
    if not (path / "truth.json").exists():
        if path.exists():
            raise SystemExit(f"{path} is incomplete; remove it and run again")
        started = time.perf_counter()
        simulate(
            SimulationConfig(
                path,
                groups=200,
                partitions=50,
                seed=1,
                target_bytes=args.simulate_mb * 1_000_000,
                kafka_version="4.2",
            )
        )
        print(f"simulated {path} in {time.perf_counter() - started:.0f} s", flush=True)
    return path


def code_tree(rev: str, scratch: Path) -> Path:
    """A ``PYTHONPATH`` entry that imports ``offsetops`` as revision ``rev`` laid it out."""
    src = scratch / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    native = next((ROOT / "coordinator_core" / "records").glob("_cfold*.so"), None)
    if native is not None:  # the same C source at both revisions unless the diff says otherwise
        shutil.copy2(native, src / "coordinator_core" / "records" / native.name)
    path = scratch / "path"
    shutil.copytree(src / "offsetops", path / "offsetops", symlinks=True)
    for top in NAMESPACED:
        (path / "offsetops" / top).symlink_to(src / top)
    return path


def segment_bytes_opened(trace: Path, log_dir: Path) -> tuple[int, int]:
    """(opens, bytes) of the ``__consumer_offsets`` segment files opened in the traces ``trace.<tid>``
    (``strace -ff``: one file per thread, so no call is split across lines by another thread's)."""
    opens = total = 0
    sizes: dict[str, int] = {}
    lines = (
        line
        for f in sorted(trace.parent.glob(trace.name + ".*"))
        for line in f.read_text(errors="replace").splitlines()
    )
    for line in lines:
        m = OPENAT.search(line)
        if m is None or int(m.group(2)) < 0:
            continue
        path = Path(m.group(1))
        if path.suffix != ".log" or not path.parent.name.startswith("__consumer_offsets-"):
            continue
        if path.parent.parent.resolve() != log_dir.resolve():
            continue
        if m.group(1) not in sizes:
            sizes[m.group(1)] = path.stat().st_size
        opens += 1
        total += sizes[m.group(1)]
    return opens, total


def run_once(label: str, log_dir: Path, pythonpath: Path | None, master: str, scratch: Path) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=scratch))
    trace = out / "openat.trace"
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    cmd = [
        "strace", "-ff", "--seccomp-bpf", "-qq", "-e", "trace=openat", "-o", str(trace),
        sys.executable, "-c", CLI, "demo", "--log-dir", str(log_dir), "--out", str(out / "demo"),
        "--spark-master", master,
    ]  # fmt: skip
    started = time.perf_counter()
    # Not from the repository root, whose offsetops/ would shadow the revision on PYTHONPATH.
    proc = subprocess.run(cmd, env=env, cwd=out, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 1):  # 1: the run succeeded and found CRITICAL partitions
        raise SystemExit(f"{label}: demo exited {proc.returncode}\n{proc.stderr[-3000:]}")
    opens, read = segment_bytes_opened(trace, log_dir)
    reported = out / "demo" / "reports" / "bytes_read"
    by_asset = {
        p.stem: json.loads(p.read_text())["bytes_read"] for p in sorted(reported.glob("*.json"))
    }  # fmt: skip
    steps = step_seconds(out / "demo" / "dagster_home")
    shutil.rmtree(out, ignore_errors=True)
    return {
        "label": label,
        "wall_s": wall,
        "opens": opens,
        "bytes": read,
        "reported": by_asset,
        "steps": steps,
    }


#: The steps whose time the table shows: the reads of the segments, and the metrics.
STEPS = ("coordinator_cache", "cleaner_audit", "offsets_metrics")


def step_seconds(home: Path) -> dict[str, float]:
    """Seconds each of :data:`STEPS` took in the demo's run (its Dagster instance's step stats)."""
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        [run] = instance.get_runs(limit=1)
        stats = instance.get_run_step_stats(run.run_id)
    return {
        s.step_key: round(s.end_time - s.start_time, 1)
        for s in stats
        if s.step_key in STEPS and s.end_time is not None and s.start_time is not None
    }


def topic_bytes(log_dir: Path) -> int:
    return sum(p.stat().st_size for p in log_dir.glob("__consumer_offsets-*/*.log"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-dir", help="a broker log dir (default: a simulated one)")
    ap.add_argument("--simulate-mb", type=int, default=200, help="size of the simulated log dir (MB)")
    ap.add_argument("--data-dir", default=str(ROOT / "benchmarks" / "data"))
    ap.add_argument("--before", help="git revision to compare with (e.g. the main branch)")
    ap.add_argument("--after", default="HEAD", help="git revision measured as after (default HEAD)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)
    if shutil.which("strace") is None:
        raise SystemExit("strace is needed to count the segment bytes each run opens")
    log_dir = ensure_data(args)
    size = topic_bytes(log_dir)
    scratch = Path(tempfile.mkdtemp(prefix="offsetops-main-job-", dir=ROOT / "build"))
    try:
        codes: list[tuple[str, Path | None]] = [
            (f"after ({args.after})", code_tree(args.after, scratch / "after"))
        ]
        if args.before:
            codes.insert(0, (f"before ({args.before})", code_tree(args.before, scratch / "before")))
        runs: list[dict] = []
        for i in range(args.repeat):
            for label, path in codes:
                r = run_once(label.split()[0], log_dir, path, args.master, scratch)
                r["label"] = label
                runs.append(r)
                print(f"  run {i + 1} {label}: {r['wall_s']:.1f} s, {r['opens']} segment opens, "
                      f"{r['bytes'] / 1e6:.1f} MB read {r['reported'] or ''}; steps {r['steps']}",
                      flush=True)  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nlog dir {log_dir}: {size / 1e6:.1f} MB of __consumer_offsets segments, master {args.master}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")  # fmt: skip
    print("| code | wall s (median of runs) | segment bytes read per run | x topic size | segment opens | "
          + " | ".join(f"{s} s" for s in STEPS) + " |")  # fmt: skip
    print("|---|---:|---:|---:|---:|" + "---:|" * len(STEPS))
    for label, _path in codes:
        mine = [r for r in runs if r["label"] == label]
        wall = statistics.median(r["wall_s"] for r in mine)
        read = mine[-1]["bytes"]
        each = ", ".join(f"{r['wall_s']:.1f}" for r in mine)
        opens = mine[-1]["opens"]
        steps = " | ".join(
            f"{statistics.median(r['steps'].get(s, float('nan')) for r in mine):.1f}" for s in STEPS
        )
        print(
            f"| {label} | {wall:.1f} ({each}) | {read / 1e6:.1f} MB | {read / size:.2f} | {opens} | {steps} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
