"""``offsetops partition-for``: which __consumer_offsets partition owns a group."""

from __future__ import annotations

import argparse

from offsetops.commands._common import die
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS, partition_for
from offsetops.pipelines.cli_args import offsets_partitions


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "partition-for",
        description="Utils.abs(groupId.hashCode) % offsets.topic.num.partitions, as the broker computes it.",
    )
    p.add_argument("group", help="the group id")
    p.add_argument(
        "--partitions", type=offsets_partitions, default=DEFAULT_OFFSETS_PARTITIONS, help="default 50"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.partitions <= 0:
        return die(f"--partitions must be positive, got {args.partitions}")
    print(partition_for(args.group, args.partitions))
    return 0
