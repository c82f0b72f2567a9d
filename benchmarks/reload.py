"""Reload throughput and memory: our loader against the kafka-python baseline, on the same bytes.

    .venv/bin/python -m benchmarks.reload --sizes 10MB,100MB --compression none,zstd

For each size and codec it generates (or reuses) a simulated log dir under ``benchmarks/data/`` (its
cleaner dead, so every duplicate is still there and the live set stays small), then measures, each in
a fresh subprocess so that peak RSS figures do not contaminate each other:

* ``ours``: ``offsetops.coordinator_core.loader.load_log_dir`` (decode plus cache rebuild, CRCs checked);
* ``baseline``: what a Python user would write: kafka-python's ``MemoryRecords`` over each segment
  file, iterating every batch and record, decoding every key and value with a straightforward
  ``struct`` decoder of the schema, and keeping the last value per key in a dict.

It prints records/s and MB/s per CPU second (``time.process_time``: the per-core cost, which stays
honest when other work shares the machine; wall seconds are printed too), peak RSS above the
interpreter's own (``ru_maxrss`` after imports vs at the end), the speed ratio ours/baseline, and
the cost per record across sizes (the curve that should stay flat).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def _rss_kb() -> int:
    """Peak RSS of this process so far, in KiB (Linux ``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


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


def measure(mode: str, path: Path) -> dict:
    """Runs in the child process: import, note the baseline RSS, do the work, report."""
    import kafka.record  # noqa: F401
    import offsetops.coordinator_core.loader  # noqa: F401 - imports count as the interpreter baseline

    before = _rss_kb()
    start, cpu = time.perf_counter(), time.process_time()
    result = run_ours(path) if mode == "ours" else run_baseline(path)
    # CPU seconds are the per-core cost; wall seconds suffer when other work shares the cores.
    result.update(
        mode=mode,
        seconds=time.process_time() - cpu,
        wall=time.perf_counter() - start,
        rss_base_mb=before / 1024,
        rss_peak_mb=_rss_kb() / 1024,
    )
    return result


def _child(mode: str, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.reload", "--measure", mode, str(path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10MB,100MB", help="comma-separated log dir sizes (10MB,100MB,1GB)")
    p.add_argument("--compression", default="none,zstd", help="comma-separated codecs (none,zstd,mixed,...)")
    p.add_argument("--kafka-version", default="3.9")
    p.add_argument("--groups", type=int, default=200, help="groups in the simulated cluster (the live set)")
    p.add_argument("--partitions", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data-dir", default=str(DATA))
    p.add_argument("--skip-baseline", action="store_true")
    p.add_argument("--measure", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return 0

    rows = []
    print(
        f"{'size':>7} {'codec':>5} {'mode':>8} {'records':>10} {'rec/s':>10} {'MB/s':>7} "
        f"{'ns/rec':>7} {'peakRSS+':>9} {'ratio':>6} {'wall s':>7}  (generation)"
    )
    for compression in args.compression.split(","):
        for size_text in args.sizes.split(","):
            size = parse_size(size_text)
            path, gen_s = ensure_data(size, compression, args)
            ours = _child("ours", path)
            if ours["errors"]:
                raise SystemExit(f"{path}: our reload reported {ours['errors']} errors")
            base = None if args.skip_baseline else _child("baseline", path)
            gen = f"  generated in {gen_s:.0f} s" if gen_s is not None else ""
            for r in (ours, base):
                if r is None:
                    continue
                rps = r["records"] / r["seconds"]
                ratio = f"{rps / (base['records'] / base['seconds']):.2f}x" if (base and r is ours) else ""
                print(
                    f"{size_text:>7} {compression:>5} {r['mode']:>8} {r['records']:>10} {rps:>10.0f} "
                    f"{r['bytes'] / 1e6 / r['seconds']:>7.1f} {1e9 * r['seconds'] / r['records']:>7.0f} "
                    f"{r['rss_peak_mb'] - r['rss_base_mb']:>7.0f}MB {ratio:>6} {r['wall']:>7.1f}{gen}",
                    flush=True,
                )
                gen = ""
            rows.append((compression, size_text, ours, base))
    print("\ncost per record (ours), ns: the curve should be flat across sizes")
    for compression in args.compression.split(","):
        curve = [f"{s}={1e9 * o['seconds'] / o['records']:.0f}" for c, s, o, _b in rows if c == compression]
        print(f"  {compression}: " + "  ".join(curve))
    with open("/proc/cpuinfo") as fh:
        cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "?")
    print(f"\nmachine: {os.cpu_count()} cores, {cpu}, Python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
