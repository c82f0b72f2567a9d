"""Where a log dir's reload spends its CPU: the fold of the segments, the survivors decoded into the
cache, and the cache's JSON, each summed over the partitions.

    .venv/bin/python -m benchmarks.reload_phases benchmarks/data/3.9-none-100000000 [--repeat 3]

The fold is ``PartitionFold`` over ``fold_segments`` (CRC-32C, record parse, last writer wins,
transactions; native when the twin is built, ``OFFSETOPS_NATIVE=0`` for the pure-Python path), the
decode is ``PartitionFold.finish`` (``Materializer``), the JSON ``cache_json.caches_chunks``. CPU
seconds of this process (``time.process_time``), best of ``--repeat`` runs; the interpreter and the
imports are not in them (``offsetops reload EMPTY_DIR --json`` gives those).
"""

from __future__ import annotations

import argparse
import time

from offsetops.coordinator_core.cache_json import caches_chunks
from offsetops.coordinator_core.loader import PartitionFold, fold_segments
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.sources.logdir import open_log_dir


def phases(path: str, num_partitions: int) -> tuple[float, float, float, int, int]:
    """CPU seconds of (fold, decode, JSON), the offsets and the groups of the caches."""
    fold_s = decode_s = 0.0
    caches = []
    for pdir in open_log_dir(path).partitions:
        start = time.process_time()
        fold = PartitionFold(partition=pdir.partition, semantics="java")
        fold_segments(fold, pdir, verify_crc=True, max_batch_bytes=DEFAULT_MAX_BATCH_BYTES)
        folded = time.process_time()
        caches.append(fold.finish(num_partitions=num_partitions))
        fold_s += folded - start
        decode_s += time.process_time() - folded
    start = time.process_time()
    for _chunk in caches_chunks(caches):
        pass
    json_s = time.process_time() - start
    return fold_s, decode_s, json_s, sum(c.offset_count for c in caches), sum(len(c.groups) for c in caches)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="a log dir (the folder holding __consumer_offsets-N/)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--num-partitions", type=int, default=50)
    args = p.parse_args(argv)
    runs = [phases(args.path, args.num_partitions) for _ in range(max(args.repeat, 1))]
    fold_s, decode_s, json_s, offsets, groups = min(runs, key=lambda r: r[0] + r[1] + r[2])
    print(f"{args.path}: {offsets:,} offsets, {groups:,} groups")
    total = fold_s + decode_s + json_s
    print(f"fold {fold_s:.3f} CPU s, decode {decode_s:.3f}, JSON {json_s:.3f}, total {total:.3f}")


if __name__ == "__main__":
    main()
