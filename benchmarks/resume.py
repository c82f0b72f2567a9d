"""``offsetops reload --state``: a whole-process reload of a large log dir, fresh and then resumed after
an append, each in a process of its own.

    .venv/bin/python -m benchmarks.resume --size 1GB --append 10MB --repeat 3

The log dir is the reload benchmark's (``benchmarks/reload.py``: ``offsetops simulate``, Kafka 3.9,
200 groups on 50 partitions, cleaner dead, generated once under ``benchmarks/data/``). A copy of it
gets ``--append`` bytes of offset commits spread over every partition's active segment (groups that
``partition_for`` puts there, batches built with ``records/builder.py`` at the next offsets), then:

* ``startup``: ``offsetops reload`` of an empty partition dir (interpreter, imports, output);
* ``fresh``: ``offsetops reload COPY`` without a state (every byte read);
* ``fresh+save``: the same with ``--state DIR`` and an empty DIR (every byte read, the states written);
* ``resumed``: ``offsetops reload COPY --state DIR`` with the states saved before the append (only the
  appended bytes read), DIR restored before each run.

Wall and CPU seconds (user + system) of the whole process (text output, read and dropped; one
``resumed --json`` run beside it, whose document holds every offset of the cache), the median of
``--repeat`` runs with the spread; the bytes each read (``bytes_read`` summed over
partitions) and the state dir's size. ``fresh+save`` runs before the append, the others after it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.reload import DATA, ROOT, compile_bytecode, ensure_data, parse_size

OFFSETOPS = str(Path(sys.executable).with_name("offsetops"))


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system) of one ``offsetops`` process, and its text output."""
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([OFFSETOPS, *argv], capture_output=True, check=False, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"offsetops {' '.join(argv)} failed: {done.stderr.decode()[-400:]}")
    used = after.ru_utime - cpu.ru_utime + after.ru_stime - cpu.ru_stime
    return wall, used, done.stdout.decode()


def _append(logdir: Path, nbytes: int, partitions: int) -> int:
    """Append about ``nbytes`` of offset commits to every partition's last segment; returns the bytes."""
    from offsetops.coordinator_core.loader import load_partition_dir
    from offsetops.coordinator_core.partitioner import partition_for
    from offsetops.coordinator_core.records import build_record_batch
    from offsetops.coordinator_core.schema import (
        OffsetCommitKey,
        OffsetCommitValue,
        encode_key,
        encode_value,
    )
    from offsetops.coordinator_core.sources.logdir import open_log_dir

    groups: dict[int, list[str]] = {}
    for i in range(20 * partitions):
        name = f"bench-appended-{i}"
        groups.setdefault(partition_for(name, partitions), []).append(name)
    written = 0
    for pdir in open_log_dir(logdir).partitions:
        nxt = (load_partition_dir(pdir).stats.last_offset or -1) + 1
        now = 1_700_000_000_000 + nxt
        out = bytearray()
        n = 0
        while len(out) < nbytes // partitions:
            group = groups[pdir.partition][n % len(groups[pdir.partition])]
            key = encode_key(OffsetCommitKey(group=group, topic="orders", partition=n % 12))
            value = encode_value(OffsetCommitValue(version=3, offset=n, commit_timestamp=now + n))
            out += build_record_batch([(key, value, now + n)], base_offset=nxt + n)
            n += 1
        with open(pdir.segments[-1].path, "ab") as fh:
            fh.write(out)
        written += len(out)
    return written


def _median(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{ordered[(len(ordered) - 1) // 2]:.2f} ({ordered[0]:.2f}-{ordered[-1]:.2f})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="1GB", help="the log dir's size (the reload benchmark's data)")
    p.add_argument("--append", default="10MB", help="bytes appended before the resumed run")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--data-dir", default=str(DATA))
    p.add_argument("--work-dir", default=str(ROOT / "build" / "bench-resume"))
    args = p.parse_args()
    size, extra = parse_size(args.size), parse_size(args.append)
    data = argparse.Namespace(data_dir=args.data_dir, kafka_version="3.9", groups=200, partitions=50, seed=1)
    base, _ = ensure_data(size, "none", data)
    compile_bytecode()
    work = Path(args.work_dir)
    shutil.rmtree(work, ignore_errors=True)
    copy, state, saved, empty = work / "logdir", work / "state", work / "state-saved", work / "empty"
    shutil.copytree(base, copy)
    (empty / "__consumer_offsets-0").mkdir(parents=True)
    env = {**os.environ, "OFFSETOPS_NATIVE": os.environ.get("OFFSETOPS_NATIVE", "1")}
    names = ("startup", "fresh", "fresh+save", "resumed")
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    read: dict[str, int] = {}

    def measure(name: str, argv: list[str]) -> str:
        wall, cpu, out = _run(argv, env)
        walls[name].append(wall)
        cpus[name].append(cpu)
        read[name] = sum(int(n) for n in re.findall(r"read (\d+) bytes", out))
        return out

    for _ in range(args.repeat):
        measure("startup", ["reload", str(empty)])
        shutil.rmtree(state, ignore_errors=True)
        measure("fresh+save", ["reload", str(copy), "--state", str(state)])
    shutil.copytree(state, saved)
    appended = _append(copy, extra, 50)
    logged = sum(f.stat().st_size for f in copy.rglob("*.log"))
    for _ in range(args.repeat):
        measure("fresh", ["reload", str(copy)])
        read["fresh"] = logged  # no --state: every byte, and no line that says so
        shutil.rmtree(state)
        shutil.copytree(saved, state)
        out = measure("resumed", ["reload", str(copy), "--state", str(state)])
        assert out.count("  resumed at offset") == 50, "a partition was not resumed"
    # the JSON document of the same run: the whole cache printed, which a fresh run prints too
    shutil.rmtree(state)
    shutil.copytree(saved, state)
    wall, cpu, out = _run(["reload", str(copy), "--state", str(state), "--json"], env)
    walls["resumed --json"], cpus["resumed --json"] = [wall], [cpu]
    read["resumed --json"] = sum(p["stats"]["bytes_read"] for p in json.loads(out)["partitions"])
    names = (*names, "resumed --json")
    state_bytes = sum(f.stat().st_size for f in saved.glob("*.state"))
    print(f"log dir {base.name}: {sum(f.stat().st_size for f in base.rglob('*.log')):,} bytes; "
          f"appended {appended:,} bytes over 50 partitions; state dir {state_bytes:,} bytes")  # fmt: skip
    print("| run | wall s, median (min-max) | CPU s, median (min-max) | bytes read |")
    print("|---|---|---|---|")
    for name in names:
        print(f"| {name} | {_median(walls[name])} | {_median(cpus[name])} | {read.get(name, 0):,} |")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
