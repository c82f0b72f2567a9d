"""Costs of crafted input that once grew faster than the input (sizes as arguments).

    .venv/bin/python -m benchmarks.hostile_costs --before /tmp/base     # a checkout of an older commit

Three inputs, built by ``tests/support/hostile.py``:

- **keyless**: one zstd batch of ``--keyless-inflated`` bytes of 7-byte keyless records (32 MiB: 4.79
  million records from about 3 KB on disk), each a ``missing_key`` error. Row: peak RSS (``VmHWM``) and
  CPU of ``load_log_dir`` on it, with the errors kept (entries) and counted.
- **txn-tombstones**: ``--producers`` open transactional producers, then ``--tombstones`` offset
  tombstones of other keys. Row: CPU of ``load_log_dir``.
- **resync**: ``--resync-sizes`` of data whose framing is lost at byte 0, with a fake batch header every
  64 bytes claiming to run to the end. Row: CPU of ``load_log_dir``.

Each measurement runs ``load_log_dir`` in a subprocess of its own, native and with ``OFFSETOPS_NATIVE=0``,
in this checkout and, with ``--before DIR``, in another checkout (its own ``.venv``), so the same input
gives the before and after figures side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.bad_input import parse_size
from tests.support.hostile import keyless_zstd_batch, resync_bait, txn_tombstone_segment

REPO = Path(__file__).resolve().parents[1]
_CHILD = """
import json, sys, time
from offsetops.coordinator_core.loader import load_log_dir
def status(field):
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith(field + ':'))
base = status('VmRSS')
t = time.process_time()
(cache,) = load_log_dir(sys.argv[1])
cpu = time.process_time() - t
errors = cache.stats.errors
print(json.dumps({"cpu": cpu, "peak_mb": status('VmHWM') / 1024, "base_mb": base / 1024,
                  "entries": len(errors), "errors": sum(getattr(e, 'count', 1) for e in errors)}))
"""


def _measure(repo: Path, log_dir: Path, native: bool) -> dict:
    env = {**os.environ, "OFFSETOPS_NATIVE": "1" if native else "0"}
    python = repo / ".venv" / "bin" / "python"
    out = subprocess.run([str(python), "-c", _CHILD, str(log_dir)], cwd=repo, env=env, capture_output=True,
                         text=True, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def _log_dir(root: Path, name: str, data: bytes) -> Path:
    pdir = root / name / "__consumer_offsets-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(data)
    return pdir.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--before", type=Path, help="another checkout (with its .venv) to measure on the same input"
    )
    p.add_argument("--keyless-inflated", default="32MiB", help="inflated size of the keyless batch (32MiB)")
    p.add_argument("--producers", type=int, default=8000, help="open transactional producers (8000)")
    p.add_argument("--tombstones", type=int, default=51000, help="tombstones after them (51000)")
    p.add_argument("--resync-sizes", default="1MiB,4MiB", help="sizes of the resync bait (1MiB,4MiB)")
    args = p.parse_args(argv)
    repos = [("after", REPO)] + ([("before", args.before.resolve())] if args.before else [])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        keyless = keyless_zstd_batch(parse_size(args.keyless_inflated))
        cases = [("keyless", f"{len(keyless):,} B zstd, {parse_size(args.keyless_inflated) // 7:,} records",
                  _log_dir(root, "keyless", keyless))]  # fmt: skip
        txn = txn_tombstone_segment(args.producers, args.tombstones)
        cases.append(("txn-tombstones", f"{len(txn):,} B, {args.producers:,} open txns, "
                      f"{args.tombstones:,} tombstones", _log_dir(root, "txn", txn)))  # fmt: skip
        for size in args.resync_sizes.split(","):
            n = parse_size(size)
            cases.append(
                (f"resync {size}", f"{n:,} B, a fake header every 64 B", _log_dir(root, size, resync_bait(n)))
            )
        print(f"{'case':<15} {'input':<48} {'path':<7} {'checkout':<8} {'CPU s':>7} {'peak RSS':>9} "
              f"{'(imports)':>9} {'entries':>9} {'errors':>10}")  # fmt: skip
        for case, detail, log_dir in cases:
            for native in (True, False):
                for label, repo in repos:
                    r = _measure(repo, log_dir, native)
                    path = "native" if native else "python"
                    cells = [f"{case:<15}", f"{detail:<48}", f"{path:<7}", f"{label:<8}", f"{r['cpu']:>7.2f}",
                             f"{r['peak_mb']:>6.0f} MB", f"{r['base_mb']:>6.0f} MB", f"{r['entries']:>9,}",
                             f"{r['errors']:>10,}"]  # fmt: skip
                    print(" ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
