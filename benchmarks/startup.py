"""Whole-process cost of `offsetops`: start-up (`--help`) and `reload --json`, beside aiokafka.

    .venv/bin/pip install 'aiokafka>=0.11'      # the peer's reader; benchmark-only
    .venv/bin/python -m benchmarks.startup --repeat 20 --reload-repeat 5

Every figure is one command run as a fresh process, the way an operator or a script runs it, interpreter
start-up and imports included, stdout to ``/dev/null``; hyperfine-style: ``--warmup`` unmeasured runs,
then the commands interleaved ``--repeat`` times (``--reload-repeat`` for the reloads). Each row gives
the median and the minimum wall seconds, mean and standard deviation, and the median CPU seconds of
the process (user + system, from ``wait4``): on a shared machine CPU seconds are the steadier figure.

The commands:

* ``python -c pass``: the interpreter with this virtualenv's ``site``, the floor of every row;
* ``offsetops --help`` and ``offsetops reload --help``;
* ``offsetops reload PATH --json``: the full reload (CRCs, transactions, validation, the cache) and the
  whole document on stdout;
* ``aiokafka PATH``: the peer, ``python -m benchmarks.startup --peer PATH``: aiokafka's Cython reader
  over each segment, the dict fold of ``benchmarks/reload.py`` (keys decoded with ``struct``, the last
  value per key), the survivors' values decoded, and ``json.dumps`` of the result (each offset and
  group as a dict; members without their protocol bytes) written to stdout. No CRC check, no
  transactions, no validation.

Data: the log dirs of ``benchmarks/reload.py`` (``--sizes``; Kafka 3.9, 200 groups, cleaner dead, about
5,000 live offsets), generated when missing, and with ``--large-live-set SIZE`` one more whose cleaner
runs on every partition with 20,000 groups (at 100MB: about 95,000 live offsets and 4,700 groups, an
18 MB document), where the JSON used to be a large part of the work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.reload import (
    DATA,
    ROOT,
    aiokafka_fold,
    baseline_decode_value,
    compile_bytecode,
    parse_size,
    print_machine,
)

OFFSETOPS = Path(sys.executable).with_name("offsetops")


def _timed(argv: list[str]) -> tuple[float, float]:
    """Run ``argv`` to completion, stdout discarded: (wall seconds, CPU seconds of the process)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err.decode(errors='replace')[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def _measure(commands: dict[str, list[str]], repeat: int, warmup: int) -> dict[str, dict[str, float]]:
    for argv in commands.values():
        for _ in range(warmup):
            _timed(argv)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():  # interleaved: a burst of other work hits every command
            wall, cpu = _timed(argv)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {
        name: {
            "median": statistics.median(walls[name]),
            "min": min(walls[name]),
            "mean": statistics.fmean(walls[name]),
            "sd": statistics.stdev(walls[name]) if len(walls[name]) > 1 else 0.0,
            "cpu": statistics.median(cpus[name]),
        }
        for name in commands
    }


def _print(results: dict[str, dict[str, float]], against: dict[str, str]) -> None:
    """One row per command; ``against`` names, per row, the row it is compared with (peer over ours)."""
    print(f"{'command':<44} {'median s':>9} {'min s':>7} {'mean ± sd':>15} {'cpu s':>7} {'vs':>22}")
    for name, r in results.items():
        vs = ""
        if name in against:
            peer = results[against[name]]
            vs = f"{peer['median'] / r['median']:.2f}x wall, {peer['cpu'] / r['cpu']:.2f}x cpu"
        print(
            f"{name:<44} {r['median']:>9.3f} {r['min']:>7.3f} {r['mean']:>7.3f} ± {r['sd']:<5.3f} "
            f"{r['cpu']:>7.3f} {vs:>22}",
            flush=True,
        )


def run_peer(path: Path) -> None:
    """The peer: aiokafka's reader, a dict fold, the survivors decoded, ``json.dumps`` to stdout."""
    partitions = []
    for pdir in sorted(path.glob("__consumer_offsets-*"), key=lambda p: int(p.name.rpartition("-")[2])):
        latest, _records, _size = aiokafka_fold(sorted(pdir.glob("*.log")), "decoded")
        offsets, groups = [], []
        for key, (rtype, value) in latest.items():
            decoded = None if value is None else baseline_decode_value(rtype, value)
            if decoded is None:
                continue  # a tombstone, or a record type the peer does not read
            if rtype <= 1:
                _t, group, topic, partition = key  # type: ignore[misc]
                offsets.append({"group": group, "topic": topic, "partition": partition, **decoded})
            else:
                members = [
                    dict(
                        zip(
                            ("member_id", "group_instance_id", "client_id", "client_host"), m[:4], strict=True
                        )
                    )
                    for m in decoded.pop("members")
                ]
                groups.append({"group": key[1], **decoded, "members": members})  # type: ignore[index]
        partitions.append(
            {"partition": int(pdir.name.rpartition("-")[2]), "offsets": offsets, "groups": groups}
        )
    sys.stdout.write(json.dumps({"partitions": partitions}))
    sys.stdout.write("\n")


def _large_live_set(size: int, data_dir: str) -> Path:
    """A log dir of ``size`` bytes whose cleaner runs everywhere, with 20,000 groups: a large cache."""
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    path = Path(data_dir) / f"large-live-set-3.9-{size}"
    if not (path / "truth.json").exists():
        if path.exists():
            raise SystemExit(f"{path} is incomplete; remove it and run again")
        simulate(
            SimulationConfig(
                path, groups=20_000, partitions=50, seed=1, target_bytes=size, compacted_fraction=1.0
            )
        )
    return path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100MB", help="comma-separated log dir sizes (benchmarks/reload.py's)")
    p.add_argument(
        "--large-live-set", metavar="SIZE", help="also a log dir of SIZE (100MB: ~95,000 live offsets)"
    )
    p.add_argument("--repeat", type=int, default=20, help="measured runs of each start-up command")
    p.add_argument("--reload-repeat", type=int, default=5, help="measured runs of each reload")
    p.add_argument("--warmup", type=int, default=2, help="unmeasured runs of each command first")
    p.add_argument("--data-dir", default=str(DATA))
    p.add_argument("--peer", metavar="PATH", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.peer:
        run_peer(Path(args.peer))
        return 0
    from benchmarks.reload import ensure_data

    data_args = argparse.Namespace(
        data_dir=args.data_dir, kafka_version="3.9", groups=200, partitions=50, seed=1
    )
    dirs = [ensure_data(parse_size(s), "none", data_args)[0] for s in args.sizes.split(",")]
    if args.large_live_set:
        dirs.append(_large_live_set(parse_size(args.large_live_set), args.data_dir))
    compile_bytecode()
    print("start-up (whole process, stdout to /dev/null)")
    _print(
        _measure(
            {
                "python -c pass": [sys.executable, "-c", "pass"],
                "offsetops --help": [str(OFFSETOPS), "--help"],
                "offsetops reload --help": [str(OFFSETOPS), "reload", "--help"],
            },
            args.repeat,
            args.warmup,
        ),
        {},
    )
    for path in dirs:
        print(f"\n{path.name}: reload --json vs aiokafka + dict fold + json.dumps (whole process)")
        ours, peer = "offsetops reload PATH --json", "aiokafka + dict fold + json.dumps"
        commands = {
            ours: [str(OFFSETOPS), "reload", str(path), "--json"],
            peer: [sys.executable, "-m", "benchmarks.startup", "--peer", str(path)],
        }
        _print(_measure(commands, args.reload_repeat, min(args.warmup, 1)), {ours: peer})
    print_machine()
    return 0


if __name__ == "__main__":
    sys.exit(main())
