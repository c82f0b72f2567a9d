"""Reload throughput and memory: offsetops (native and pure Python) beside its Python peers, same bytes.

    .venv/bin/python -m benchmarks.reload --sizes 10MB,100MB --compression none,zstd

For each size and codec it generates (or reuses) a simulated log dir under ``benchmarks/data/`` (its
cleaner dead, so every duplicate is still there and the live set stays small), then measures, each in
a fresh subprocess so that peak RSS figures do not contaminate each other:

* ``native``: ``offsetops.coordinator_core.loader.load_log_dir`` with the C fold (decode, cache rebuild, CRCs
  checked, every error path of the reload);
* ``python``: the same with ``OFFSETOPS_NATIVE=0``, the pure-Python reference path;
* ``aiokafka``: aiokafka's Cython reader (``aiokafka.record._crecords.MemoryRecords``, CRCs not checked)
  over each segment with the same dict fold as ``kafka-py``: every key decoded with ``struct`` (what the
  record is: group, topic, partition), the last value per decoded key kept, and only the survivors'
  values decoded;
* ``aiokafka-raw``: the same reader folding on the raw key bytes, no key decoded until the end: the
  fastest fold a user can write on top of it;
* ``floor``: aiokafka's Cython reader touching every record's key and value and nothing else: the cost of
  framing alone, in C;
* ``kafka-py``: kafka-python's ``MemoryRecords``, every key and value decoded, last value per key kept.

Every mode runs ``--repeat`` times (``--repeat-large`` from 1 GB up; modes interleaved, a fresh process
each time) and the median is kept; the spread is printed beside it.

aiokafka is benchmark-only (``pip install offsetops[bench]``); without it those rows are left out.
It prints records/s and MB/s per CPU second (``time.process_time``: the per-core cost, which stays honest
when other work shares the machine; wall seconds are printed too), peak RSS above the interpreter's own
after imports (``VmHWM``, reset after imports), each mode's speed relative to ``native``, the load
average during the run, and the native cost per record across sizes (the curve that should stay flat).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
_UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9}


def parse_size(text: str) -> int:
    text = text.strip().upper()
    for unit, mult in _UNITS.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * mult)
    return int(text)


def _hwm_kb() -> int:
    """Peak RSS of this address space since the last reset, in KiB (``VmHWM``, as tests/support/memory.py)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


def _reset_hwm() -> int:
    """Reset ``VmHWM`` to the current resident set (``clear_refs`` 5) and return it, in KiB."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return _hwm_kb()


# -- the baseline: kafka-python plus a plain struct decoder ----------------------------------------

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")


def _str(buf: bytes, pos: int) -> tuple[str | None, int]:
    (n,) = _H.unpack_from(buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    return buf[pos : pos + n].decode(), pos + n


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    (n,) = _I.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    return buf[pos : pos + n], pos + n


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def baseline_decode_key(key: bytes) -> tuple:
    (rtype,) = _H.unpack_from(key, 0)
    group, pos = _str(key, 2)
    if rtype <= 1:
        topic, pos = _str(key, pos)
        (partition,) = _I.unpack_from(key, pos)
        return (rtype, group, topic, partition)
    return (rtype, group)


def baseline_decode_value(rtype: int, value: bytes) -> dict | None:
    # The peers' own hand-written decoder, on purpose: offsetops' schema tables are measured against it.
    (version,) = _H.unpack_from(value, 0)
    pos = 2
    if rtype <= 1:
        (offset,) = _Q.unpack_from(value, pos)
        pos += 8
        epoch = -1
        if version >= 3:
            (epoch,) = _I.unpack_from(value, pos)
            pos += 4
        if version >= 4:
            n, pos = _uvarint(value, pos)
            metadata = value[pos : pos + n - 1].decode()
            pos += n - 1
        else:
            metadata, pos = _str(value, pos)
        (commit_ts,) = _Q.unpack_from(value, pos)
        pos += 8
        expire_ts = -1
        if version == 1:
            (expire_ts,) = _Q.unpack_from(value, pos)
        return {
            "offset": offset,
            "leader_epoch": epoch,
            "metadata": metadata,
            "commit_timestamp": commit_ts,
            "expire_timestamp": expire_ts,
        }
    if rtype == 2 and version <= 3:
        protocol_type, pos = _str(value, pos)
        (generation,) = _I.unpack_from(value, pos)
        pos += 4
        protocol, pos = _str(value, pos)
        leader, pos = _str(value, pos)
        state_ts = -1
        if version >= 2:
            (state_ts,) = _Q.unpack_from(value, pos)
            pos += 8
        (count,) = _I.unpack_from(value, pos)
        pos += 4
        members = []
        for _ in range(count):
            member_id, pos = _str(value, pos)
            instance_id = None
            if version >= 3:
                instance_id, pos = _str(value, pos)
            client_id, pos = _str(value, pos)
            client_host, pos = _str(value, pos)
            rebalance = -1
            if version >= 1:
                (rebalance,) = _I.unpack_from(value, pos)
                pos += 4
            (session,) = _I.unpack_from(value, pos)
            pos += 4
            subscription, pos = _bytes(value, pos)
            assignment, pos = _bytes(value, pos)
            members.append(
                (member_id, instance_id, client_id, client_host, rebalance, session, subscription, assignment)
            )
        return {
            "protocol_type": protocol_type,
            "generation": generation,
            "protocol": protocol,
            "leader": leader,
            "current_state_timestamp": state_ts,
            "members": members,
        }
    return None  # KIP-848 and other types: the obvious user skips what they do not know


def run_baseline(path: Path) -> dict:
    from kafka.record import MemoryRecords
    from offsetops.coordinator_core.sources.logdir import open_log_dir

    records = 0
    size = 0
    latest: dict[bytes, object] = {}
    for pdir in open_log_dir(path).partitions:
        latest = {}
        for seg in pdir.segments:
            data = seg.path.read_bytes()
            size += len(data)
            mr = MemoryRecords(data)
            while mr.has_next():
                batch = mr.next_batch()
                control = batch.is_control_batch
                for rec in batch:
                    records += 1
                    if control:
                        continue
                    k = baseline_decode_key(rec.key)
                    latest[rec.key] = None if rec.value is None else baseline_decode_value(k[0], rec.value)
    return {"records": records, "bytes": size}


def _segment_files(path: Path):
    from offsetops.coordinator_core.sources.logdir import open_log_dir

    for pdir in open_log_dir(path).partitions:
        yield [seg.path for seg in pdir.segments]


def aiokafka_fold(
    segments: list[Path], fold: str | None
) -> tuple[dict[object, tuple[int, bytes | None]], int, int]:
    """One partition through aiokafka's Cython reader: the last ``(record type, value)`` per key (``fold``
    ``"decoded"``: keys decoded per record; ``"raw"``: keys as bytes; None: the floor, nothing kept),
    the records read and the bytes."""
    from aiokafka.record._crecords import MemoryRecords

    records = size = 0
    latest: dict[object, tuple[int, bytes | None]] = {}
    for seg in segments:
        data = seg.read_bytes()
        size += len(data)
        mr = MemoryRecords(data)
        while True:
            batch = mr.next_batch()
            if batch is None:
                break
            control = batch.is_control_batch
            for rec in batch:
                records += 1
                key, value = rec.key, rec.value
                if control or fold is None:
                    continue
                if fold == "decoded":
                    k = baseline_decode_key(key)
                    latest[k] = (k[0], value)
                else:
                    latest[key] = (-1, value)
    return latest, records, size


def run_aiokafka(path: Path, fold: str | None) -> dict:
    """``fold``: ``"decoded"`` (keys decoded per record), ``"raw"`` (keys as bytes) or None (the floor)."""
    records = size = 0
    for segments in _segment_files(path):
        latest, n, nbytes = aiokafka_fold(segments, fold)
        records, size = records + n, size + nbytes
        for key, (rtype, value) in latest.items():
            if value is not None:
                baseline_decode_value(rtype if rtype >= 0 else baseline_decode_key(key)[0], value)  # type: ignore[arg-type]
    return {"records": records, "bytes": size}


def run_ours(path: Path) -> dict:
    from offsetops.coordinator_core.loader import load_log_dir

    caches = load_log_dir(path, semantics="java")
    errors = sum(len(c.stats.errors) for c in caches)
    return {
        "records": sum(c.stats.records for c in caches),
        "bytes": sum(c.stats.bytes for c in caches),
        "groups": sum(len(c.groups) for c in caches),
        "offsets": sum(c.offset_count for c in caches),
        "errors": errors,
    }


MODES = ("native", "python", "aiokafka", "aiokafka-raw", "floor", "kafka-py")
_AIOKAFKA = ("aiokafka", "aiokafka-raw", "floor")


def measure(mode: str, path: Path) -> dict:
    """Runs in the child process: import what the mode needs, reset the peak RSS, do the work, report."""
    import resource

    from offsetops.coordinator_core.sources import logdir  # noqa: F401 - every mode lists segments with it

    if mode in ("native", "python"):
        import offsetops.coordinator_core.loader  # noqa: F401 - imports count as the interpreter baseline
        from offsetops.coordinator_core.records import native

        if mode == "native" and not native.NATIVE:
            raise SystemExit("the native fold is not built (or OFFSETOPS_NATIVE=0)")
    elif mode in _AIOKAFKA:
        import aiokafka.record._crecords  # noqa: F401
    else:
        import kafka.record  # noqa: F401
    before = _reset_hwm()
    start, cpu = time.perf_counter(), time.process_time()
    if mode in ("native", "python"):
        result = run_ours(path)
    elif mode == "aiokafka":
        result = run_aiokafka(path, fold="decoded")
    elif mode == "aiokafka-raw":
        result = run_aiokafka(path, fold="raw")
    elif mode == "floor":
        result = run_aiokafka(path, fold=None)
    else:
        result = run_baseline(path)
    # CPU seconds are the per-core cost; wall seconds suffer when other work shares the cores.
    seconds = time.process_time() - cpu
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result.update(
        mode=mode,
        seconds=seconds,
        wall=time.perf_counter() - start,
        # The whole process: interpreter start-up and the mode's own imports included.
        process_seconds=usage.ru_utime + usage.ru_stime,
        rss_base_mb=before / 1024,
        rss_peak_mb=_hwm_kb() / 1024,
    )
    return result


def _child(mode: str, path: Path) -> dict:
    env = dict(os.environ, OFFSETOPS_NATIVE="0" if mode == "python" else "1")
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.reload", "--measure", mode, str(path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median_run(runs: list[dict]) -> dict:
    """The run with the median CPU seconds (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    pick = dict(ordered[(len(ordered) - 1) // 2])
    pick["spread"] = (ordered[0]["seconds"], ordered[-1]["seconds"])
    return pick


def ensure_data(size: int, compression: str, args: argparse.Namespace) -> tuple[Path, float | None]:
    """The log dir for (size, codec): reused when present, else simulated (returns generation seconds)."""
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    path = Path(args.data_dir) / f"{args.kafka_version}-{compression}-{size}"
    if (path / "truth.json").exists():
        return path, None
    if path.exists():
        raise SystemExit(f"{path} is incomplete; remove it and run again")
    result = simulate(
        SimulationConfig(
            path,
            groups=args.groups,
            partitions=args.partitions,
            seed=args.seed,
            target_bytes=size,
            compression=compression,
            kafka_version=args.kafka_version,
            compacted_fraction=0.0,
        )
    )
    return path, result.elapsed_s


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10MB,100MB", help="comma-separated log dir sizes (10MB,100MB,1GB)")
    p.add_argument("--compression", default="none,zstd", help="comma-separated codecs (none,zstd,mixed,...)")
    p.add_argument("--kafka-version", default="3.9")
    p.add_argument("--groups", type=int, default=200, help="groups in the simulated cluster (the live set)")
    p.add_argument("--partitions", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data-dir", default=str(DATA))
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {','.join(MODES)}")
    p.add_argument("--skip-baseline", action="store_true", help="leave out kafka-py (the slowest)")
    p.add_argument("--skip-python", action="store_true", help="leave out the pure-Python reload")
    p.add_argument("--repeat", type=int, default=3, help="runs per mode (interleaved); the median is kept")
    p.add_argument("--repeat-large", type=int, default=1, help="runs per mode from 1 GB up (default 1)")
    p.add_argument("--measure", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return 0

    try:
        import aiokafka.record._crecords  # noqa: F401

        peers = True
    except ImportError:
        peers = False
        print("aiokafka not installed (pip install offsetops[bench]): its rows are left out")
    modes = [m for m in args.modes.split(",") if peers or m not in _AIOKAFKA]
    if args.skip_baseline:
        modes = [m for m in modes if m != "kafka-py"]
    if args.skip_python:
        modes = [m for m in modes if m != "python"]
    rows = []
    print(
        f"{'size':>7} {'codec':>5} {'mode':>12} {'records':>10} {'rec/s/cpu':>10} {'MB/s/cpu':>8} "
        f"{'ns/rec':>7} {'peakRSS+':>9} {'vs native':>9} {'cpu s':>6} {'(min-max)':>11} {'proc s':>6} "
        f"{'wall s':>7}  (generation)"
    )
    for compression in args.compression.split(","):
        for size_text in args.sizes.split(","):
            size = parse_size(size_text)
            path, gen_s = ensure_data(size, compression, args)
            runs: dict[str, list[dict]] = {mode: [] for mode in modes}
            repeat = args.repeat_large if size >= 10**9 else args.repeat
            for _ in range(max(repeat, 1)):
                for mode in modes:  # interleaved, so a burst of other work does not land on one mode
                    r = _child(mode, path)
                    if r.get("errors"):
                        raise SystemExit(f"{path}: the {mode} reload reported {r['errors']} errors")
                    runs[mode].append(r)
            results = {mode: _median_run(rs) for mode, rs in runs.items()}
            if "native" in results and "python" in results:
                for key in ("records", "bytes", "groups", "offsets"):
                    if results["native"][key] != results["python"][key]:
                        raise SystemExit(f"{path}: native and python disagree on {key}")
            gen = f"  generated in {gen_s:.0f} s" if gen_s is not None else ""
            native = results.get("native")
            for mode, r in results.items():
                rps = r["records"] / r["seconds"]
                ratio = f"{r['seconds'] / native['seconds']:.2f}x" if native else ""
                lo, hi = r["spread"]
                print(
                    f"{size_text:>7} {compression:>5} {mode:>12} {r['records']:>10} {rps:>10.0f} "
                    f"{r['bytes'] / 1e6 / r['seconds']:>8.1f} {1e9 * r['seconds'] / r['records']:>7.0f} "
                    f"{r['rss_peak_mb'] - r['rss_base_mb']:>7.0f}MB {ratio:>9} {r['seconds']:>6.2f} "
                    f"{f'{lo:.2f}-{hi:.2f}':>11} {r['process_seconds']:>6.2f} {r['wall']:>7.2f}{gen}",
                    flush=True,
                )
                gen = ""
            rows.append((compression, size_text, results))
    _print_curve_and_machine(args.compression.split(","), rows)
    return 0


def _print_curve_and_machine(compressions: list[str], rows: list[tuple[str, str, dict]]) -> None:
    print("\ncost per record (native), ns: the curve should be flat across sizes")
    for compression in compressions:
        curve = [
            f"{s}={1e9 * r['native']['seconds'] / r['native']['records']:.0f}"
            for c, s, r in rows
            if c == compression and "native" in r
        ]
        print(f"  {compression}: " + "  ".join(curve))
    print_machine()


def compile_bytecode() -> None:
    """Write the bytecode caches of offsetops and of these benchmarks before anything is measured, as an
    installed package has them (pip compiles what it installs, and so did the peers' install). A checkout
    run with ``PYTHONDONTWRITEBYTECODE`` (or from a read-only tree) would otherwise compile every module
    again in every measured process: about 0.1 CPU s of each ``offsetops`` run, none of the peer's."""
    import compileall

    for folder in ("offsetops", "coordinator_core", "pipelines", "checks", "assets", "benchmarks"):
        if not compileall.compile_dir(ROOT / folder, quiet=1):
            raise SystemExit(f"{ROOT / folder}: a module does not compile")
    print(f"bytecode compiled; load average before the run (1/5/15 min): {_load_average()}")


def _load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def print_machine() -> None:
    """The load average after the run and the machine: the context every figure needs."""
    print(f"\nload average after the run (1/5/15 min): {_load_average()}")
    with open("/proc/cpuinfo") as fh:
        cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "?")
    print(f"\nmachine: {os.cpu_count()} cores, {cpu}, Python {sys.version.split()[0]}")


if __name__ == "__main__":
    sys.exit(main())
