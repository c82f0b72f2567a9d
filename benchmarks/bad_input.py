"""Peak memory of a reload on hostile input: zero tails, zip bombs (sizes as arguments).

    .venv/bin/python -m benchmarks.bad_input --zero-tail 1GiB --zstd-bomb 1GiB --gzip-bomb 4.7MB

Each case is a copy of a small real-looking partition (built here: 2,000 offset commits) with one
hostile addition: a sparse zero tail of the given size; a zstd batch whose payload inflates to the
given size; a gzip batch whose *compressed* payload has the given size (zeros at the best ratio, about
1,000:1). ``offsetops reload --json --strict`` runs in a subprocess of its own and reports its
``VmHWM``; wall time and the errors reported are printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import zstandard
from offsetops.coordinator_core.records import build_record_batch
from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value

REPO = Path(__file__).resolve().parents[1]
# VmHWM is the child's own peak; ru_maxrss would carry the parent's high-water mark across exec.
_MEASURE = (
    "import sys\n"
    "from offsetops.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('PEAK_RSS_KB', next(int(l.split()[1]) for l in open('/proc/self/status') "
    "if l.startswith('VmHWM:')), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def parse_size(text: str) -> int:
    units = {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "KB": 1000, "MB": 10**6, "GB": 10**9, "B": 1}
    t = text.strip().upper()
    for unit, mult in units.items():
        if t.endswith(unit):
            return int(float(t[: -len(unit)]) * mult)
    return int(t)


def _partition(root: Path) -> Path:
    pdir = root / "__consumer_offsets-0"
    pdir.mkdir(parents=True)
    key = encode_key(OffsetCommitKey(group="bench", topic="orders", partition=0))
    batches = [
        build_record_batch(
            [(key, encode_value(OffsetCommitValue(3, i, 0, "", 1_700_000_000_000)), 0)], base_offset=i
        )
        for i in range(2000)
    ]
    (pdir / "00000000000000000000.log").write_bytes(b"".join(batches))
    return pdir / "00000000000000000000.log"


def _bomb(codec: int, payload: bytes, base_offset: int) -> bytes:
    from crc32c import crc32c

    head = bytearray(build_record_batch([(b"\x00\x01k", b"v", 0)], base_offset=base_offset)[:61])
    head[21:23] = codec.to_bytes(2, "big")
    batch = head + payload
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


def _zeros_compressed(
    codec: str, *, inflated: int | None = None, compressed: int | None = None
) -> tuple[bytes, int]:
    chunk = bytes(16 << 20)
    c = (
        zstandard.ZstdCompressor(level=3).compressobj()
        if codec == "zstd"
        else zlib.compressobj(9, zlib.DEFLATED, 31)
    )
    parts, fed, size = [], 0, 0
    while (inflated is not None and fed < inflated) or (compressed is not None and size < compressed):
        n = len(chunk) if inflated is None else min(len(chunk), inflated - fed)
        out = c.compress(chunk[:n])
        parts.append(out)
        size += len(out)
        fed += n
    parts.append(c.flush())
    return b"".join(parts), fed


def _measure(root: Path) -> tuple[float, float, int, list[str]]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, "reload", str(root), "--json", "--strict"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    wall = time.perf_counter() - start
    peak = next(int(ln.split()[1]) for ln in proc.stderr.splitlines() if ln.startswith("PEAK_RSS_KB"))
    doc = json.loads(proc.stdout)
    kinds = [e["kind"] for p in doc["partitions"] for e in p["stats"]["errors"]]
    return peak / 1024, wall, proc.returncode, kinds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--zero-tail", default="1GiB", help="sparse zero tail size (default 1GiB)")
    p.add_argument("--zstd-bomb", default="1GiB", help="inflated size of the zstd bomb (default 1GiB)")
    p.add_argument("--gzip-bomb", default="4.7MB", help="compressed size of the gzip bomb (default 4.7MB)")
    args = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        cases = ["baseline", "zero_tail", "zstd_bomb", "gzip_bomb"]
        for case in cases:
            root = base / case
            seg = _partition(root)
            detail = ""
            if case == "zero_tail":
                n = parse_size(args.zero_tail)
                with open(seg, "r+b") as f:
                    f.truncate(os.fstat(f.fileno()).st_size + n)
                detail = f"{n:,} B sparse zeros"
            elif case == "zstd_bomb":
                payload, fed = _zeros_compressed("zstd", inflated=parse_size(args.zstd_bomb))
                with open(seg, "ab") as f:
                    f.write(_bomb(4, payload, 2000))
                detail = f"{len(payload):,} B -> {fed:,} B"
            elif case == "gzip_bomb":
                payload, fed = _zeros_compressed("gzip", compressed=parse_size(args.gzip_bomb))
                with open(seg, "ab") as f:
                    f.write(_bomb(1, payload, 2000))
                detail = f"{len(payload):,} B -> {fed:,} B"
            peak, wall, code, kinds = _measure(root)
            rows.append((case, detail, peak, wall, code, ",".join(kinds) or "-"))
            shutil.rmtree(root)
    print(f"{'case':<10} {'input':<34} {'peak RSS':>9} {'wall s':>7} {'exit':>4}  errors")
    for case, detail, peak, wall, code, kinds in rows:
        print(f"{case:<10} {detail:<34} {peak:>6.0f} MB {wall:>7.1f} {code:>4}  {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
