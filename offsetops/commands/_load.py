"""Where the coordinator cache comes from, shared by reload, groups, describe, history and the exporter:
a broker log dir or a live cluster, the whole log or as of ``--until``, with progress on a terminal."""

from __future__ import annotations

import argparse
import re
import sys

from offsetops.commands._common import (
    CLIENT_CONFIG_HELP,
    escape,
    kafka_client_config,
    parse_partitions,
)
from offsetops.coordinator_core.asof import Cut, load_as_of
from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.loader import load_partition_dir
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.settings import (
    INT64_MAX,
    MAX_EPOCH_MS,
    add_partition_filter,
    offsets_partitions,
)
from offsetops.coordinator_core.sources.logdir import LogDirError, PartitionDir, open_log_dir
from offsetops.coordinator_core.sources.replicas import ReplicaChoice, open_log_dirs, split_broker_prefix
from offsetops.coordinator_core.timefmt import parse_time
from offsetops.progress import Progress


def add_source_args(
    p: argparse.ArgumentParser, *, path: bool = True, topic_flag: str = "--topic-name", brokers: bool = False
) -> None:
    """Where the offsets come from (PATH, several brokers' ``--log-dir``, or a live cluster) and how to
    replay them.

    ``topic_flag`` names the hidden option for a mirrored offsets topic: ``reload`` spells it ``--topic``;
    the group views keep ``--topic`` for their data-topic filter. ``brokers`` adds ``--log-dir`` for
    several brokers' log dirs (the group views use ``--log-dir`` for data-topic dirs instead)."""
    if path:
        p.add_argument("path", nargs="?", help="a broker log dir, or one __consumer_offsets-N dir")
    if path and brokers:
        p.add_argument(
            "--log-dir",
            dest="broker_log_dirs",
            action="append",
            metavar="[BROKER_ID=]PATH",
            help="one broker's log dir, repeated for each broker: each partition is read from one copy "
            "(highest leader epoch, then log end offset), and the choice and any divergent copy are "
            "reported; the broker id comes from meta.properties unless given as BROKER_ID=PATH",
        )
    add_partition_filter(p)
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="read from a live cluster instead of files")
    p.add_argument("--client-config", metavar="FILE", help=f"read from a live cluster: {CLIENT_CONFIG_HELP}")
    p.add_argument(topic_flag, dest="offsets_topic", default="__consumer_offsets", help=argparse.SUPPRESS)
    p.add_argument(
        "--num-partitions",
        type=offsets_partitions,
        default=DEFAULT_OFFSETS_PARTITIONS,
        help="offsets.topic.num.partitions, for partition_for checks (default 50)",
    )
    p.add_argument(
        "--semantics",
        choices=["java", "scala"],
        default="java",
        help="coordinator replay rules: java (Kafka 3.6+/4.x, default) or scala (up to 3.x)",
    )


def is_live(args: argparse.Namespace) -> bool:
    """A live cluster was asked for: ``--bootstrap``, or ``--client-config`` alone (its bootstrap.servers)."""
    return bool(getattr(args, "bootstrap", None) or getattr(args, "client_config", None))


def check_source(args: argparse.Namespace) -> str | None:
    """Why the source arguments cannot work, or None."""
    files = getattr(args, "path", None) or getattr(args, "broker_log_dirs", None)
    if not files and not is_live(args):
        return (
            "give a log dir PATH (or --log-dir per broker), or --bootstrap HOST:PORT / --client-config FILE"
        )
    if files and is_live(args):
        return (
            "give either log dirs (PATH, --log-dir) or a live cluster (--bootstrap/--client-config), not both"
        )
    if getattr(args, "path", None) and getattr(args, "broker_log_dirs", None):
        return "give one log dir PATH, or --log-dir for each broker, not both"
    return None


def parse_until(text: str) -> Cut:
    """``--until``: a plain integer is a log offset; anything else a time (ISO-8601, -2h, 1700000000000ms)."""
    body = text.strip()
    if re.fullmatch(r"\d{1,19}", body) and int(body) <= INT64_MAX:
        return Cut(until_offset=int(body))
    try:
        until_ms = parse_time(body)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--until takes a log offset (e.g. 1200) or a time: {exc}") from None
    if not 0 <= until_ms <= MAX_EPOCH_MS:
        raise argparse.ArgumentTypeError(
            f"{body[:40]!r} is neither a log offset (0 to 2^63-1) nor a time from 1970 to the year 9999"
        )
    return Cut(until_ms=until_ms)


def load_caches(
    args: argparse.Namespace, cut: Cut | None = None, replicas: list[ReplicaChoice] | None = None
) -> list[CoordinatorCache]:
    """Load the chosen partitions from ``args.path``, the ``--log-dir`` of several brokers, or the live
    cluster of ``--bootstrap`` / ``--client-config`` (LogDirError and KafkaClientError propagate with
    the path or cluster in them). With several brokers' log dirs each partition is read from the copy
    :func:`~offsetops.coordinator_core.sources.replicas.choose_replica` picks; the choices are appended to
    ``replicas``, and divergent copies are warned about on stderr whoever the caller is."""
    cut = cut or Cut()
    whole = cut.until_offset is None and cut.until_ms is None
    kw = {"num_partitions": args.num_partitions, "semantics": args.semantics}
    if is_live(args):
        from offsetops.coordinator_core.sources.live import LiveSource, load_live_partition

        config = kafka_client_config(args)
        with LiveSource(config, topic=getattr(args, "offsets_topic", "__consumer_offsets")) as source:
            parts = parse_partitions(args.partition) or source.partitions()
            out = []
            with Progress("reading", total=len(parts), unit="partitions") as progress:
                for part in parts:
                    if whole:
                        out.append(load_live_partition(source, part, **kw))
                    else:

                        def batches(errors, p=part):
                            return source.iter_batches(p, errors)

                        out.append(load_as_of(batches, partition=part, cut=cut, **kw))
                    progress.advance(1, out[-1].stats.bytes)
            return out
    if getattr(args, "broker_log_dirs", None):
        pdirs = _chosen_copies(args, replicas)
    else:
        pdirs = list(open_log_dir(args.path, partitions=parse_partitions(args.partition)).partitions)
    out = []
    with Progress("reading", total=len(pdirs), unit="partitions") as progress:
        for pdir in pdirs:
            if whole:
                limit = getattr(args, "max_batch_bytes", DEFAULT_MAX_BATCH_BYTES)
                out.append(load_partition_dir(pdir, max_batch_bytes=limit, **kw))
            else:
                out.append(load_as_of(pdir.iter_batches, partition=pdir.partition, cut=cut, **kw))
            progress.advance(1, pdir.size_bytes, what=f"__consumer_offsets-{pdir.partition}")
    return out


def _chosen_copies(args: argparse.Namespace, replicas: list[ReplicaChoice] | None) -> list[PartitionDir]:
    try:
        specs = [split_broker_prefix(spec) for spec in args.broker_log_dirs]
    except ValueError as exc:
        raise LogDirError(f"--log-dir {exc}") from None
    dirs = open_log_dirs(specs, partitions=parse_partitions(args.partition))
    choices = dirs.choices()
    for c in choices:
        for d in c.divergences:
            # never merged, never silent: the reload reads the chosen copy only
            print(
                f"offsetops: warning: __consumer_offsets-{c.partition}: {escape(d.message)}", file=sys.stderr
            )
    if replicas is not None:
        replicas.extend(choices)
    return [c.chosen.pdir for c in choices if c.chosen.pdir is not None]
