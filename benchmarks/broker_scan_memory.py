"""Peak memory of the central run reading broker scans: one at the size limit, and one far above it.

    .venv/bin/python -m benchmarks.broker_scan_memory --size 60MB

A scan of about ``--size`` bytes is built from a real scan of a small simulated log dir, its batch
digests repeated (as a busy partition's dirty range would hold them). Each read runs in a fresh process
that prints its peak resident set (``VmHWM``): the file's size, the peak, and the peak per MB of file.
A 100 MB file (sparse) is read too: above the 64 MiB limit it is refused before a byte is read. The
resident set once the scans are read is what is kept (the batch digests, about 230 bytes each).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from offsetops.coordinator_core.cleaner.collect import scan_broker, write_broker_scan
from offsetops.coordinator_core.simulator import SimulationConfig, simulate
from offsetops.coordinator_core.sources.logdir import open_log_dir

from benchmarks.reload import parse_size

_READ = (
    "import sys\n"
    "from offsetops.coordinator_core.cleaner.collect import read_broker_scans\n"
    "try:\n"
    "    scans = read_broker_scans(sys.argv[1])\n"
    "    kept = sum(len(c.digests or ()) for s in scans for c in s.copies)\n"
    "    rss = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS:'))\n"
    "    print(f'{kept} digests kept, {len(scans.findings)} finding(s), {rss // 1024} MiB resident after',"
    " file=sys.stderr)\n"
    "except Exception as exc:\n"
    "    print('refused:', exc, file=sys.stderr)\n"
    "print('PEAK_RSS_KB', next(int(l.split()[1]) for l in open('/proc/self/status') "
    "if l.startswith('VmHWM:')), file=sys.stderr)\n"
)


def _peak(scans_dir: Path) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", _READ, str(scans_dir)], capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    return int(lines[-1].split()[1]), lines[0]


def _baseline(tmp: Path) -> int:
    empty = tmp / "empty"
    empty.mkdir()
    return _peak(empty)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("60MB"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        logdir = tmp / "logdir"
        simulate(SimulationConfig(out_dir=logdir, groups=20, partitions=2, days=0.05, seed=2))
        scan = scan_broker(open_log_dir(logdir), 1, now_ms=1_800_000_000_000)
        doc = scan.to_json()
        per_digest = len(json.dumps(doc["copies"][0]["digests"][0])) + 1
        wanted = max(1, (args.size - len(json.dumps(doc))) // per_digest)
        seed = [d for c in doc["copies"] for d in c["digests"]]
        doc["copies"][0]["digests"] = (seed * (wanted // len(seed) + 1))[:wanted]
        full = tmp / "full"
        full.mkdir()
        (full / "broker-1.json").write_text(json.dumps(doc, separators=(",", ":")))
        huge = tmp / "huge"
        huge.mkdir()
        write_broker_scan(scan, huge)
        with open(huge / "broker-2.json", "wb") as fh:
            fh.truncate(100 * 1024 * 1024)
        base = _baseline(tmp)
        print(f"interpreter and imports: {base / 1024:.0f} MiB peak")
        for label, where in (("scan at the limit", full), ("scan of 100 MB beside a small one", huge)):
            size = sum(p.stat().st_size for p in where.iterdir())
            peak, what = _peak(where)
            grown = (peak - base) / 1024
            print(
                f"{label:<36} {size / 1e6:7.1f} MB of files  peak {peak / 1024:6.0f} MiB  "
                f"(+{grown:.0f} MiB, {grown / (size / 1e6):.1f} MiB per MB)  {what[:90]}"
            )


if __name__ == "__main__":
    main()
