"""A seeded sweep of mutated copies of the real segments through ``reload --json --strict`` (and a sample
through ``dump`` and through subprocesses with their peak RSS measured).

For every input: no traceback, no hang, exit 0 without errors and 1 with errors (notices such as a zero
tail do not count), and the rebuilt cache equal to the unmutated one unless an error was reported, so
that every change in the cache is explained by a reported error. Zip bombs and zero tails of 1 GiB run
in subprocesses whose peak RSS must stay under 500 MB.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from offsetops.coordinator_core.records import build_record_batch, compress, iter_segment_batches
from offsetops.coordinator_core.records.batch import V2_HEADER_SIZE
from offsetops.coordinator_core.records.compression import GZIP, LZ4, SNAPPY, ZSTD

from offsetops.cli import main
from tests.support.memory import PRINT_PEAK_KB, peak_rss_mb, start_peak_rss
from tests.support.mutation import add_sparse_zero_tail, bomb_batch, fix_crc, records
from tests.support.shared import REAL_KAFKA_DIR

pytestmark = pytest.mark.slow

SEED = 20261122
INPUTS = 520
GIB = 1 << 30
RSS_LIMIT_MB = 500
REPO = Path(__file__).resolve().parents[2]


def _partitions() -> list[Path]:
    if not REAL_KAFKA_DIR.is_dir():
        pytest.skip("real Kafka fixtures not found")
    return sorted(p for p in REAL_KAFKA_DIR.glob("*/__consumer_offsets-*") if any(p.glob("*.log")))


def _run(argv: list[str], timeout: int = 60) -> tuple[int, str, str]:
    """The CLI in-process, with a hard time limit (a hang fails the test instead of stalling it)."""

    def on_alarm(_sig, _frame):
        raise TimeoutError(f"offsetops {' '.join(argv)} did not finish in {timeout} s")

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def _groups(doc: dict) -> list:
    return [(p["partition"], p["groups"]) for p in doc["partitions"]]


# -- mutations: each changes the copy of one partition dir and returns a label ----------------------------


def _segment(rng: random.Random, pdir: Path) -> Path:
    return rng.choice(sorted(pdir.glob("*.log")))


def _batch_positions(seg: Path) -> list[tuple[int, int]]:
    return [(b.position, b.size) for b in iter_segment_batches(seg, errors=[])]


def bit_flips(rng: random.Random, pdir: Path) -> str:
    seg = _segment(rng, pdir)
    data = bytearray(seg.read_bytes())
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    seg.write_bytes(bytes(data))
    return "bit_flips"


def header_overwrite(rng: random.Random, pdir: Path) -> str:
    seg = _segment(rng, pdir)
    pos, _size = rng.choice(_batch_positions(seg))
    data = bytearray(seg.read_bytes())
    for _ in range(rng.randint(1, 4)):
        data[pos + rng.randrange(min(61, len(data) - pos))] = rng.randrange(256)
    seg.write_bytes(bytes(data))
    return "header_overwrite"


def length_field(rng: random.Random, pdir: Path) -> str:
    seg = _segment(rng, pdir)
    pos, size = rng.choice(_batch_positions(seg))
    data = bytearray(seg.read_bytes())
    value = rng.choice(
        [-1, 0, 5, 13, 48, size - 13, size - 11, size + 1, 1 << 20, 2**31 - 1, rng.randrange(-(2**31), 2**31)]
    )
    struct.pack_into(">i", data, pos + 8, value)
    seg.write_bytes(bytes(data))
    return "length_field"


def truncation(rng: random.Random, pdir: Path) -> str:
    """A cut inside a batch (a cut exactly between batches leaves a valid, shorter log: nothing to see)."""
    seg = _segment(rng, pdir)
    boundaries = {pos for pos, _size in _batch_positions(seg)}
    cut = rng.randrange(seg.stat().st_size)
    while cut in boundaries:
        cut += 1
    with open(seg, "r+b") as f:
        f.truncate(cut)
    return "truncation"


def garbage(rng: random.Random, pdir: Path) -> str:
    seg = _segment(rng, pdir)
    data = seg.read_bytes()
    at = rng.randrange(len(data) + 1)
    junk = rng.randbytes(rng.randint(1, 300))
    seg.write_bytes(data[:at] + junk + data[at:])
    return "garbage"


def zero_tail(rng: random.Random, pdir: Path) -> str:
    add_sparse_zero_tail(_segment(rng, pdir), rng.choice([1, 11, 12, 4096, 1 << 20, 64 << 20]))
    return "zero_tail"


def zero_region(rng: random.Random, pdir: Path) -> str:
    seg = _segment(rng, pdir)
    data = bytearray(seg.read_bytes())
    at = rng.randrange(len(data))
    n = rng.randint(1, 2000)
    data[at : at + n] = bytes(len(data[at : at + n]))
    seg.write_bytes(bytes(data))
    return "zero_region"


def crafted_value(rng: random.Random, pdir: Path) -> str:
    seg = _segment(rng, pdir)
    located = [r for r in records(seg) if r.value_at is not None and len(r.value) >= 4]
    if not located:
        return bit_flips(rng, pdir)
    r = rng.choice(located)
    new = rng.choice([b"\x00\x09", b"\x7f\xff", b"\xff\xff", rng.randbytes(2)])
    at = r.value_at + rng.choice([0, 2, min(10, len(r.value) - 2), min(14, len(r.value) - 2)])
    data = bytearray(seg.read_bytes())
    data[at : at + 2] = new
    fix_crc(data, r.batch_position)
    seg.write_bytes(bytes(data))
    return "crafted_value"


def crafted_key(rng: random.Random, pdir: Path) -> str:
    seg = _segment(rng, pdir)
    located = [r for r in records(seg) if r.key_at is not None and len(r.key) >= 4]
    if not located:
        return bit_flips(rng, pdir)
    r = rng.choice(located)
    data = bytearray(seg.read_bytes())
    at = r.key_at + rng.choice([0, 2, len(r.key) - 2])
    data[at : at + 2] = rng.choice([b"\x7f\xff", b"\x00\x63", rng.randbytes(2)])
    fix_crc(data, r.batch_position)
    seg.write_bytes(bytes(data))
    return "crafted_key"


def compressed_damage(rng: random.Random, pdir: Path) -> str:
    """Re-append the last records as a compressed batch, then damage its payload (CRC kept valid)."""
    seg = sorted(pdir.glob("*.log"))[-1]
    located = records(seg)
    if not located:
        return truncation(rng, pdir)
    recs = [(r.key, r.value, 0) for r in located[-5:]]
    last = max(b.last_offset for b in iter_segment_batches(seg, errors=[]))
    codec = rng.choice([GZIP, SNAPPY, LZ4, ZSTD])
    batch = bytearray(build_record_batch(recs, base_offset=last + 1, compression=codec))
    if rng.random() < 0.8:
        i = V2_HEADER_SIZE + rng.randrange(len(batch) - V2_HEADER_SIZE)
        batch[i] ^= 0xFF
        fix_crc(batch, 0)
    with open(seg, "ab") as f:
        f.write(bytes(batch))
    assert compress  # the builder compresses with the same codecs the reader must undo
    return f"compressed_damage_{codec}"


def bomb(rng: random.Random, pdir: Path) -> str:
    seg = sorted(pdir.glob("*.log"))[-1]
    last = max((b.last_offset for b in iter_segment_batches(seg, errors=[])), default=-1)
    codec = rng.choice([GZIP, ZSTD])
    with open(seg, "ab") as f:
        f.write(
            bomb_batch(codec, 64 << 20, base_offset=last + 1, record_count=rng.choice([1, 1000, 2**31 - 1]))
        )
    return f"bomb_{codec}"


def file_system(rng: random.Random, pdir: Path) -> str:
    seg = _segment(rng, pdir)
    case = rng.choice(["loop", "dangling", "dir", "swap", "duplicate", "overlap", "partition_loop"])
    if case == "loop":
        os.symlink("x.log", pdir / "00000000000000555555.log")
        os.symlink("00000000000000555555.log", pdir / "x.log")
    elif case == "dangling":
        os.symlink("missing", pdir / "00000000000000444444.log")
    elif case == "dir":
        (pdir / "00000000000000333333.log").mkdir()
    elif case == "swap":
        shutil.copy(seg, pdir / (seg.name + rng.choice([".swap", ".cleaned", ".deleted"])))
    elif case == "duplicate":
        shutil.copy(seg, pdir / f"{int(seg.stem)}.log")
    elif case == "overlap":
        shutil.copy(seg, pdir / "00000000000009999999.log")
    else:
        os.symlink("__consumer_offsets-999", pdir.parent / "__consumer_offsets-999")
    return f"fs_{case}"


MUTATIONS: list[Callable[[random.Random, Path], str]] = [
    bit_flips,
    header_overwrite,
    length_field,
    truncation,
    garbage,
    zero_tail,
    zero_region,
    crafted_value,
    crafted_key,
    compressed_damage,
    bomb,
    file_system,
]


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> dict[Path, dict]:
    """The unmutated reload of every real partition (the reference every mutant is compared with)."""
    out = {}
    for src in _partitions():
        root = tmp_path_factory.mktemp("orig") / "logs"
        shutil.copytree(src, root / src.name, symlinks=True)
        code, stdout, err = _run(["reload", str(root), "--json", "--strict"])
        assert code == 0, err
        out[src] = json.loads(stdout)
    return out


#: Mutations that re-sign the batch CRC: like a buggy writer, they can produce records that are valid,
#: which the broker would load as they are, so the cache may change without an error.
RESIGNED = ("crafted_value", "crafted_key", "compressed_damage")


def _check(root: Path, original: dict, label: str) -> tuple[int, dict]:
    code, stdout, err = _run(["reload", str(root), "--json", "--strict"])
    assert "Traceback" not in err, (label, err)
    assert code in (0, 1), (label, code, err)
    doc = json.loads(stdout)
    errors = [e for p in doc["partitions"] for e in p["stats"]["errors"]]
    real = [e for e in errors if e["kind"] != "zero_tail"]
    assert code == (1 if real else 0), (label, errors)
    for e in errors:
        assert e["kind"] and e["reason"] and e["file"], (label, e)
    if not real and not any(r in label for r in RESIGNED):
        # No error reported: the cache must be exactly what the unmutated log gives.
        mine = [g for g in _groups(doc) if g[1] or g[0] in {p for p, _ in _groups(original)}]
        assert mine == _groups(original), (label, errors)
    return code, doc


def test_sweep_of_mutated_real_segments(originals: dict[Path, dict], tmp_path: Path) -> None:
    rng = random.Random(SEED)
    sources = sorted(originals)
    start_mb = start_peak_rss()
    seen: dict[str, int] = {}
    failing = 0
    for i in range(INPUTS):
        src = rng.choice(sources)
        root = tmp_path / f"in{i}"
        pdir = root / src.name
        shutil.copytree(src, pdir, symlinks=True)
        label = rng.choice(MUTATIONS)(rng, pdir)
        seen[label.split("_")[0]] = seen.get(label.split("_")[0], 0) + 1
        code, _doc = _check(root, originals[src], f"{i}:{label}:{src.parent.name}/{src.name}")
        failing += code
        if i % 10 == 0:
            dcode, _out, derr = _run(["dump", str(root), "--json", "--strict"])
            assert "Traceback" not in derr and dcode in (0, 1), (label, derr)
        shutil.rmtree(root)
    grown_mb = peak_rss_mb() - start_mb
    assert grown_mb < RSS_LIMIT_MB
    assert len(seen) >= 10 and failing > INPUTS // 3  # the sweep did exercise errors of every family


# The child's own peak (VmHWM): ru_maxrss would include this pytest process's, inherited across exec.
_MEASURE = (
    "import sys\nfrom offsetops.cli import main\ncode = main(sys.argv[1:])\n"
    + PRINT_PEAK_KB
    + "sys.exit(code)\n"
)


def _subprocess(argv: list[str]) -> tuple[int, str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    peak = next(int(ln.split()[1]) for ln in proc.stderr.splitlines() if ln.startswith("PEAK_RSS_KB"))
    return proc.returncode, proc.stderr, peak / 1024


@pytest.mark.parametrize(
    "case", ["zero_tail_1gib", "zstd_bomb_1gib", "gzip_bomb_1gib", "bomb_and_tail", "random_a", "random_b"]
)
def test_subprocess_peak_rss_stays_bounded(originals: dict[Path, dict], tmp_path: Path, case: str) -> None:
    src = REAL_KAFKA_DIR / "William0423__kafka" / "__consumer_offsets-28"
    root = tmp_path / "logs"
    pdir = root / src.name
    shutil.copytree(src, pdir)
    seg = sorted(pdir.glob("*.log"))[-1]
    last = originals[src]["partitions"][0]["stats"]["last_offset"]
    if case in ("zstd_bomb_1gib", "bomb_and_tail"):
        with open(seg, "ab") as f:
            f.write(bomb_batch(ZSTD, GIB, base_offset=last + 1))
    if case == "gzip_bomb_1gib":
        with open(seg, "ab") as f:
            f.write(bomb_batch(GZIP, GIB, base_offset=last + 1))
    if case in ("zero_tail_1gib", "bomb_and_tail"):
        add_sparse_zero_tail(seg, GIB)
    if case.startswith("random"):
        rng = random.Random(f"{SEED}{case}")
        for _ in range(3):
            rng.choice(MUTATIONS)(rng, pdir)
    for command in ("reload", "dump"):
        code, err, peak_mb = _subprocess(
            [command, str(root), "--json", "--strict"]
            if command == "reload"
            else [command, str(root), "--strict"]
        )
        assert "Traceback" not in err
        assert code in (0, 1)
        assert peak_mb < RSS_LIMIT_MB, (case, command, peak_mb)
        if case != "zero_tail_1gib" and not case.startswith("random"):
            assert code == 1 and "decompression" in err
