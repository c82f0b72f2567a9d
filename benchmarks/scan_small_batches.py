"""The cleaner scan of 10 MB of one-record batches, the shape of a resumed read after commits (one batch
per commit, as ``benchmarks.resume``'s appender writes them): ``scan_segment`` over the bytes in memory,
its median seconds and a digest of what it found (equal digests: the same scan).

    .venv/bin/python -m benchmarks.scan_small_batches --repeat 7
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time

from offsetops.coordinator_core.cleaner.scan import ScanInputs, scan_segment
from offsetops.coordinator_core.records import build_record_batch
from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value

NOW = 1_700_000_000_000


def segment(nbytes: int) -> tuple[bytes, int]:
    """About ``nbytes`` of one-commit batches on 20 groups x 12 partitions, every 97th a tombstone."""
    out = bytearray()
    n = 0
    while len(out) < nbytes:
        key = encode_key(OffsetCommitKey(group=f"group-{n % 20}", topic="orders", partition=n % 12))
        value = None if n % 97 == 0 else encode_value(OffsetCommitValue(3, n, commit_timestamp=NOW + n))
        out += build_record_batch([(key, value, NOW + n)], base_offset=n)
        n += 1
    return bytes(out), n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    data, batches = segment(int(args.mb * 1_000_000))
    inputs = ScanInputs(partition=0, dirty_from=batches // 2, active_base=0)
    seconds = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        scan = scan_segment(data, inputs, file="bench.log", base_offset=0, size=len(data), mtime_ms=0)
        seconds.append(time.perf_counter() - started)
    facts = (scan.batches, scan.records, scan.tombstones, scan.superseded_records, scan.reclaimable_bytes,
             scan.top_reclaimed, sorted(scan.keys.items()), scan.segments, scan.errors)  # fmt: skip
    digest = hashlib.sha256(repr(facts).encode()).hexdigest()[:16]
    print(
        f"{batches} batches, {len(data)} bytes: median {statistics.median(seconds):.3f} s "
        f"({', '.join(f'{s:.3f}' for s in seconds)}); scan {digest}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
