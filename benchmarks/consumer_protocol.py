"""Cost of judging members' consumer-protocol bytes, per GroupMetadata value, one line per client layout.

    .venv/bin/python -m benchmarks.consumer_protocol [--members 10] [--number 2000]

For a GroupMetadata value whose members all carry one client's subscription and assignment
(tests/fixtures/client_vectors.json), prints the best of five runs in microseconds per value of:
decoding the value alone, the validation pass (``value_check.value_error``: the decode plus the load's
read of each subscription, checked without building anything) and the survivor's read of every member
(``embedded.read_member``: every layout reading, the topics, the partitions and the findings). Figures,
not assertions: compare runs on the same idle machine.
"""

from __future__ import annotations

import argparse
import json
import timeit
from pathlib import Path

from offsetops.coordinator_core.embedded import read_member
from offsetops.coordinator_core.schema import decode_group_metadata_value, encode_value
from offsetops.coordinator_core.schema.values import GroupMetadataValue, MemberMetadata
from offsetops.coordinator_core.value_check import value_error

VECTORS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "client_vectors.json"
SHOWN = ("java-3.4-rack", "librdkafka-2.2", "kafkajs-2.2.1", "kafka-go-reader", "sarama-1.50")


def best_us(fn: object, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6  # type: ignore[arg-type]


def group_value(sub: bytes, asg: bytes, members: int) -> bytes:
    ms = tuple(MemberMetadata(f"m{i}", None, "c", "/h", 300_000, 45_000, sub, asg) for i in range(members))
    return encode_value(GroupMetadataValue(3, "consumer", 1, "range", "m0", 0, ms))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10, help="members per GroupMetadata value")
    parser.add_argument("--number", type=int, default=2000, help="calls per timing run")
    args = parser.parse_args(argv)
    pairs: dict[str, dict[str, bytes]] = {}
    for v in json.loads(VECTORS.read_text(encoding="utf-8")):
        pairs.setdefault(v["group"], {})[v["role"]] = bytes.fromhex(v["hex"])
    print(f"{args.members} members per value; us per value")
    print(f"{'client layout':<18} {'decode':>8} {'validation':>11} {'survivor read':>14}")
    for gid in SHOWN:
        raw = group_value(pairs[gid]["subscription"], pairs[gid]["assignment"], args.members)
        value = decode_group_metadata_value(raw)
        decode = best_us(lambda raw=raw: decode_group_metadata_value(raw), args.number)
        check = best_us(lambda raw=raw: value_error(2, raw), args.number)
        read = best_us(lambda v=value: [read_member("g", v.protocol, m) for m in v.members], args.number)
        print(f"{gid:<18} {decode:>8.1f} {check:>11.1f} {read:>14.1f}")


if __name__ == "__main__":
    main()
