"""Cost of a broker scan (the collector's work) against the plain audit of the same log dir.

    .venv/bin/python -m benchmarks.broker_scan --size 50MB

Data: a simulated log dir of about ``--size`` bytes (seed 1, cleaner dead so the whole log is dirty and
every batch gets a digest; reused under ``benchmarks/data/``). Prints CPU and wall seconds, MB/s, the
size of ``broker-<id>.json``, and the time the central audit takes to judge three copies of the scan
(the divergence check compares every digest).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.cleaner.collect import (
    audit_broker_scans,
    read_broker_scans,
    scan_broker,
    write_broker_scan,
)
from offsetops.coordinator_core.simulator import SimulationConfig, simulate
from offsetops.coordinator_core.sources.logdir import open_log_dir

from benchmarks.reload import parse_size

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"


def _logdir(size: int) -> Path:
    out = DATA / f"broker-scan-{size}"
    if not (out / "truth.json").exists():
        simulate(
            SimulationConfig(
                out_dir=out, groups=100, partitions=10, seed=1, target_bytes=size, compacted_fraction=0.0
            )
        )
    return out


def _timed(label: str, fn, nbytes: int):
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    print(f"{label:<44} {cpu:7.2f} s CPU {wall:7.2f} s wall  {nbytes / 1e6 / max(cpu, 1e-9):7.1f} MB/s")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("50MB"))
    args = ap.parse_args()
    root = _logdir(args.size)
    logdir = open_log_dir(root)
    nbytes = sum(p.size_bytes for p in logdir.partitions)
    print(f"log dir {root}: {len(logdir.partitions)} partitions, {nbytes / 1e6:.1f} MB")
    now = 1_800_000_000_000
    _timed(
        "audit_log_dir (files at hand)",
        lambda: audit_log_dir(logdir, now_ms=now, record_history=False),
        nbytes,
    )
    scan = _timed("scan_broker (audit scan + digests)", lambda: scan_broker(logdir, 0, now_ms=now), nbytes)
    digests = sum(len(c.digests or ()) for c in scan.copies)
    with tempfile.TemporaryDirectory() as tmp:
        for broker in (0, 1, 2):
            scan.broker_id = broker
            scan.copies = [dataclasses.replace(c, broker_id=broker) for c in scan.copies]
            path = write_broker_scan(scan, tmp)
        print(f"broker-<id>.json: {path.stat().st_size / 1e6:.1f} MB for {digests:,} batch digests")
        scans = _timed("read 3 scans", lambda: read_broker_scans(tmp), 3 * nbytes)
        _timed(
            "audit_broker_scans (3 brokers, compare)",
            lambda: audit_broker_scans(scans, now_ms=now, record_history=False),
            3 * nbytes,
        )


if __name__ == "__main__":
    main()
