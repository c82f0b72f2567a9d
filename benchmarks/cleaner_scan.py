"""The cleaner audit's record scan of one partition: whole, and per segment merged in log order (as the
reload's pass runs it); the reload's fold of the same segments alone and with the scan from the same
map of each file; and what the key identity (a 64-bit BLAKE2b digest) costs against Python's salted
``hash``, which cannot be used across processes.

    .venv/bin/python benchmarks/cleaner_scan.py --log-dir benchmarks/data/main-job-200mb --repeat 3

The partition is the log dir's largest (or ``--partition``). Each variant runs ``--repeat`` times,
alternating; the table gives the median seconds and MB/s of segment bytes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from offsetops.coordinator_core.cleaner import scan as scan_module
from offsetops.coordinator_core.cleaner.scan import ScanInputs, dirty_from, scan_partition, scan_segment
from offsetops.coordinator_core.sources.logdir import PartitionDir, open_log_dir

DAY_MS = 86_400_000


def _whole(part: PartitionDir, inputs: ScanInputs) -> object:
    return scan_partition(part, dirty_from=inputs.dirty_from, verify_crc=True)


def _per_segment(part: PartitionDir, inputs: ScanInputs) -> object:
    running = None
    for s in part.segments:
        one = scan_segment(
            s.path.read_bytes(), inputs, file=str(s.path), base_offset=s.base_offset, size=s.size,
            mtime_ms=s.mtime_ms,
        )  # fmt: skip
        running = one if running is None else running.merge(one, inputs.dirty_from)
    return running


def _fold(part: PartitionDir, inputs: ScanInputs, *, scan: bool = False) -> object:
    """The reload's stage 1 over the partition's segments, with or without the scan beside the fold."""
    from offsetops.pipelines.reload import fold_segment
    from offsetops.pipelines.reload_scan import SegmentScanner

    out = []
    for s in part.segments:
        meta = {"file": str(s.path), "base_offset": s.base_offset, "size": s.size, "mtime_ms": s.mtime_ms}
        scanner = SegmentScanner(inputs, **meta) if scan else None
        fold = fold_segment(
            None, file=str(s.path), partition=part.partition, also=scanner.local if scanner else None
        )
        out.append(scanner.result(None, fold) if scanner else fold)
    return out


def _fold_and_scan(part: PartitionDir, inputs: ScanInputs) -> object:
    return _fold(part, inputs, scan=True)


def _salted_hash(key: bytes) -> int:
    return hash(key)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--partition", type=int)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    logdir = open_log_dir(Path(args.log_dir))
    parts = [p for p in logdir.partitions if p.segments]
    part = next((p for p in parts if p.partition == args.partition), None) or max(
        parts, key=lambda p: p.size_bytes
    )
    tp = (part.topic, part.partition)
    first = dirty_from(
        logdir.cleaner_checkpoint.get(tp), logdir.log_start_checkpoint.get(tp), part.segments[0].base_offset
    )
    inputs = ScanInputs(part.partition, first, part.segments[-1].base_offset, True)
    digest = scan_module.key_id
    variants: dict[str, tuple[Callable[..., object], Callable[[bytes], object]]] = {
        "whole, BLAKE2b-64 key id": (_whole, digest),
        "whole, salted hash() (one process only)": (_whole, _salted_hash),
        "per segment + merge, BLAKE2b-64 key id": (_per_segment, digest),
        "reload stage 1: fold alone": (_fold, digest),
        "reload stage 1: fold and scan from one map": (_fold_and_scan, digest),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeat):
        for name, (run, key) in variants.items():
            scan_module.key_id = key  # type: ignore[assignment]
            started = time.perf_counter()
            run(part, inputs)
            times[name].append(time.perf_counter() - started)
    scan_module.key_id = digest
    size = part.size_bytes
    print(f"partition {part.partition}: {len(part.segments)} segments, {size / 1e6:.1f} MB")
    print("| scan | s (median) | MB/s |\n|---|---:|---:|")
    for name, got in times.items():
        med = statistics.median(got)
        print(f"| {name} | {med:.2f} ({', '.join(f'{t:.2f}' for t in got)}) | {size / 1e6 / med:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
