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

With ``--second-run-append MB`` each code runs twice on its own copy of the log dir, into one output
dir: a first run, then about MB of offset commits appended to every partition's active segment, then a
second run (``offsetops demo --resume`` where the revision has it, so the second run may go on from
the first one's resume state). Both runs' wall time, bytes read and every step's time are printed
side by side.

    .venv/bin/python benchmarks/main_job.py --simulate-mb 200 --before main --second-run-append 10
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
    """A ``PYTHONPATH`` entry that imports ``offsetops`` as revision ``rev`` laid it out. The links are
    absolute: a relative one would dangle, and the editable install's worktree would be imported instead."""
    src = scratch.absolute() / "src"
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


def run_once(
    label: str,
    log_dir: Path,
    pythonpath: Path | None,
    master: str,
    scratch: Path,
    out: Path | None = None,
    extra: tuple[str, ...] = (),
) -> dict:
    """One ``offsetops demo`` process on ``log_dir``; into ``out`` (kept) when given, else a scratch
    dir removed afterwards. ``extra``: more demo options."""
    keep = out is not None
    out = out or Path(tempfile.mkdtemp(prefix=f"{label}-", dir=scratch))
    out.mkdir(parents=True, exist_ok=True)
    trace = out / "openat.trace"
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    cmd = [
        "strace", "-ff", "--seccomp-bpf", "-qq", "-e", "trace=openat", "-o", str(trace),
        sys.executable, "-c", CLI, "demo", "--log-dir", str(log_dir), "--out", str(out / "demo"),
        "--spark-master", master, *extra,
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
    for f in out.glob("openat.trace.*"):
        f.unlink()
    if not keep:
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
    """Seconds each step took in the demo's latest run (its Dagster instance's step stats)."""
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        run = instance.get_runs(limit=1)[0]
        stats = instance.get_run_step_stats(run.run_id)
    return {
        s.step_key: round(s.end_time - s.start_time, 1)
        for s in sorted(stats, key=lambda s: s.start_time or 0)
        if s.end_time is not None and s.start_time is not None
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
    ap.add_argument(
        "--second-run-append",
        type=float,
        metavar="MB",
        help="run each code twice on a copy of the log dir, appending about MB of commits in between",
    )
    args = ap.parse_args(argv)
    if shutil.which("strace") is None:
        raise SystemExit("strace is needed to count the segment bytes each run opens")
    log_dir = ensure_data(args)
    if args.second_run_append is not None:
        return second_runs(args, log_dir)
    size = topic_bytes(log_dir)
    scratch = Path(tempfile.mkdtemp(prefix="offsetops-main-job-", dir=ROOT / "build"))
    try:
        codes: list[tuple[str, Path | None]] = list(codes_of(args, scratch))
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


def codes_of(args: argparse.Namespace, scratch: Path) -> list[tuple[str, Path]]:
    """(label, PYTHONPATH entry) of the revisions measured: ``--before`` first when given."""
    codes = [(f"after ({args.after})", code_tree(args.after, scratch / "after"))]
    if args.before:
        codes.insert(0, (f"before ({args.before})", code_tree(args.before, scratch / "before")))
    return codes


def can_resume(path: Path) -> bool:
    """Whether the revision at ``path`` has ``offsetops demo --resume``."""
    return '"--resume"' in (path / "offsetops" / "commands" / "demo.py").read_text()


def append_commits(log_dir: Path, mb: float) -> int:
    """About ``mb`` MB of offset commits appended to every partition's active segment (the resume
    benchmark's appender); the bytes appended."""
    if str(ROOT) not in sys.path:  # run as a script: its own folder is on the path, not the repository
        sys.path.insert(0, str(ROOT))
    from benchmarks.resume import _append

    partitions = len(list(log_dir.glob("__consumer_offsets-*")))
    return _append(log_dir, int(mb * 1_000_000), partitions)


def second_runs(args: argparse.Namespace, log_dir: Path) -> int:
    """Each code: a first run, an append, a second run, on its own copy of ``log_dir``."""
    scratch = Path(tempfile.mkdtemp(prefix="offsetops-main-job-", dir=ROOT / "build"))
    rows: list[tuple[str, str, dict, int]] = []
    try:
        for label, path in codes_of(args, scratch):
            name = label.split()[0]
            copy = scratch / f"{name}-logdir"
            shutil.copytree(log_dir, copy)
            extra = ("--resume",) if can_resume(path) else ()
            out = scratch / f"{name}-out"
            first = run_once(name, copy, path, args.master, scratch, out=out, extra=extra)
            size = topic_bytes(copy)
            appended = append_commits(copy, args.second_run_append)
            second = run_once(name, copy, path, args.master, scratch, out=out, extra=extra)
            for run, r, topic in (("first", first, size), ("second", second, size + appended)):
                rows.append((f"{label}{' --resume' if extra else ''}", run, r, topic))
                print(f"  {label} {run} run: {r['wall_s']:.1f} s, {r['bytes'] / 1e6:.1f} MB read "
                      f"{r['reported'] or ''}; steps {r['steps']}", flush=True)  # fmt: skip
            print(f"  appended {appended / 1e6:.2f} MB", flush=True)
            shutil.rmtree(copy, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"\nlog dir {log_dir}: {topic_bytes(log_dir) / 1e6:.1f} MB, then {args.second_run_append:g} MB "
          f"appended; master {args.master}, {os.cpu_count()} cores, load average {load:.1f}")  # fmt: skip
    steps = list(dict.fromkeys(k for _c, _r, r, _t in rows for k in r["steps"]))
    # A resumed read opens a segment to check and to read its tail only: opened sizes overcount it, the
    # asset's own bytes_read (what its fold walked) does not.
    print("| code | run | wall s | segment bytes opened | x topic | coordinator_cache bytes_read | "
          + " | ".join(f"{s} s" for s in steps) + " |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|" + "---:|" * len(steps))
    for code, run, r, topic in rows:
        reload_read = r["reported"].get("coordinator_cache")
        cells = " | ".join(f"{r['steps'].get(s, float('nan')):.1f}" for s in steps)
        reload_mb = "" if reload_read is None else f"{reload_read / 1e6:.1f} MB"
        print(f"| {code} | {run} | {r['wall_s']:.1f} | {r['bytes'] / 1e6:.1f} MB | "
              f"{r['bytes'] / topic:.2f} | {reload_mb} | {cells} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
