"""``offsetops simulate``: write a realistic ``__consumer_offsets`` log dir plus its ``truth.json``."""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Callable, Iterator

from offsetops.commands._common import die, print_json
from offsetops.commands._run import with_settings
from offsetops.coordinator_core.simulator import DEFAULT_SEGMENT_BYTES, SimulationConfig, simulate
from offsetops.coordinator_core.simulator.profile import broker_profile
from offsetops.pipelines.cli_args import (
    fraction,
    non_negative_int,
    offsets_partitions,
    simulated_days,
    simulated_groups,
)
from offsetops.progress import Progress

MAX_SIZE = 10**12
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_size(text: str) -> int:
    """``"512KB"``, ``"100MiB"``, ``"2GB"`` or a plain byte count."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 512KB, 100MiB, 2GB)")
    value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if not 1 <= value <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"size must be from 1 byte to 1TB, got {text[:40]!r}")
    return int(value)


def kafka_version(text: str) -> str:
    """An argparse type: a Kafka version the simulator writes the logs of (2.0 to 4.x)."""
    try:
        profile = broker_profile(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if profile.major > 4:
        raise argparse.ArgumentTypeError(f"the simulator knows Kafka 2.0 to 4.x, not {text.strip()[:20]!r}")
    return text.strip()


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate",
        description="Simulate consumer groups (rebalances, static members, auto and manual commits, "
        "standalone consumers, deletions, expiration, transactions, KIP-848 groups on 4.x) against a "
        "broker of --kafka-version, and write the log dir it would hold, including partitions the "
        "cleaner compacted, plus truth.json: the cache the broker would rebuild from it.",
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="an empty (or new) directory")
    p.add_argument(
        "--groups", type=simulated_groups, default=100, help="consumer groups to simulate (default 100)"
    )
    p.add_argument(
        "--partitions", type=offsets_partitions, default=50, help="offsets.topic.num.partitions (default 50)"
    )
    p.add_argument(
        "--days",
        type=simulated_days,
        default=1.0,
        help="simulated days (default 1; ignored with --target-bytes)",
    )
    p.add_argument(
        "--seed", type=non_negative_int, default=0, help="random seed; same seed, same bytes (default 0)"
    )
    p.add_argument(
        "--segment-bytes",
        type=parse_size,
        default=DEFAULT_SEGMENT_BYTES,
        help="roll segments at this size (default 100MiB, offsets.topic.segment.bytes)",
    )
    p.add_argument(
        "--target-bytes",
        type=parse_size,
        default=None,
        help="keep simulating until the log dir holds this many bytes (e.g. 1GB)",
    )
    p.add_argument(
        "--compression",
        default="none",
        choices=["none", "gzip", "snappy", "lz4", "zstd", "mixed"],
        help="codec of the coordinator's batches; mixed picks one per batch (default none)",
    )
    p.add_argument(
        "--kafka-version",
        type=kafka_version,
        default="3.9",
        help="broker version: record versions and coordinator rules (2.0 .. 4.1; default 3.9)",
    )
    p.add_argument(
        "--compacted-fraction",
        type=fraction,
        default=0.5,
        help="share of partitions whose log cleaner works; the rest keep every duplicate (default 0.5)",
    )
    p.add_argument(
        "--data-topics",
        action="store_true",
        help="also write the groups' data-topic partition dirs (log start/end in truth.json), for lag views",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


@contextlib.contextmanager
def _progress(args: argparse.Namespace) -> Iterator[Callable[[int, int], None] | None]:
    """A progress line in simulated minutes (of --days) or megabytes (of --target-bytes); None (no
    callback, no cost) off a terminal."""
    if args.target_bytes is not None:
        with Progress("simulating", total=args.target_bytes // 10**6, unit="MB") as p:
            yield (lambda _ms, nbytes: p.update(nbytes // 10**6)) if p.enabled else None
        return
    with Progress("simulating", total=int(args.days * 1440), unit="simulated minutes") as p:
        yield (lambda ms, nbytes: p.update(ms // 60_000, nbytes)) if p.enabled else None


def run(args: argparse.Namespace) -> int:
    try:
        config = SimulationConfig(
            out_dir=args.out_dir,
            groups=args.groups,
            partitions=args.partitions,
            days=args.days,
            seed=args.seed,
            segment_bytes=args.segment_bytes,
            target_bytes=args.target_bytes,
            compression=args.compression,
            kafka_version=args.kafka_version,
            compacted_fraction=args.compacted_fraction,
            data_topics=args.data_topics,
        )
        with _progress(args) as show:
            result = simulate(config, progress=show)
    except (ValueError, FileExistsError) as exc:
        return die(str(exc))
    doc = {
        "out_dir": str(result.out_dir),
        "truth": str(result.truth_path),
        "bytes": result.bytes_written,
        "simulated_until_ms": result.simulated_until_ms,
        "elapsed_s": round(result.elapsed_s, 3),
        "stats": result.stats,
    }
    if args.json:
        print_json(with_settings(doc, args))
    else:
        s = result.stats
        print(
            f"wrote {result.bytes_written / 1e6:.1f} MB to {result.out_dir} in {result.elapsed_s:.1f} s: "
            f"{s['records']} records in {s['batches']} batches, {s['txn_committed']} committed / "
            f"{s['txn_aborted']} aborted / {s['txn_hanging']} hanging transactions, "
            f"{s['groups_deleted']} deleted and {s['groups_expired']} expired groups, "
            f"{s['cleaner_passes']} cleaner passes; truth in {result.truth_path}"
        )
    return 0
