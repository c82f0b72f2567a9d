"""Per-value decode cost of the reload's hot path (survivor decoding), one line per record version.

    .venv/bin/python -m benchmarks.decode_values [--number 20000]

Prints the best of five runs in microseconds per value. Figures, not assertions: compare runs on
the same idle machine.
"""

from __future__ import annotations

import argparse
import timeit

from offsetops.coordinator_core.schema import decode_offset_commit_value, decode_value

# The hand-built offset-commit vectors of kafka-offsets-format.md §1.9.
VECTORS: dict[str, tuple[int, bytes]] = {
    "OffsetCommitValue v3": (1, bytes.fromhex("0003000000000000002a0000000500000000018bcfe56800")),
    "OffsetCommitValue v4 (franz-go)": (
        1,
        bytes.fromhex("0004000000000021d4a8ffffffff010000019964f2d83600"),
    ),
}


def best_us(fn: object, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000, help="calls per timing run")
    args = parser.parse_args(argv)
    print(f"{'value':<34} {'fast path us':>12} {'generic us':>11}")
    for name, (record_type, data) in VECTORS.items():
        fast = best_us(lambda data=data: decode_offset_commit_value(data), args.number)
        generic = best_us(lambda data=data, t=record_type: decode_value(t, data), args.number)
        print(f"{name:<34} {fast:>12.2f} {generic:>11.2f}")


if __name__ == "__main__":
    main()
