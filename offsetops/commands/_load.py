"""Where the coordinator cache comes from, shared by reload, groups, describe, history and the exporter:
a broker log dir or a live cluster, the whole log or as of ``--until``, with progress on a terminal."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any

from offsetops.commands._common import (
    CLIENT_CONFIG_HELP,
    escape,
    kafka_client_config,
    parse_partitions,
)
from offsetops.coordinator_core.asof import Cut
from offsetops.coordinator_core.cache import CoordinatorCache, LoadStats
from offsetops.coordinator_core.run import RunSettings
from offsetops.coordinator_core.settings import INT64_MAX, MAX_EPOCH_MS
from offsetops.coordinator_core.sources.source import ReadLimits, Source
from offsetops.coordinator_core.timefmt import parse_time
from offsetops.pipelines.cli_args import add_partition_filter, offsets_partitions
from offsetops.progress import Progress

if TYPE_CHECKING:  # several brokers' log dirs only (the replica choice hashes segments)
    from offsetops.coordinator_core.sources.replicas import ReplicaChoice

#: the spellings of the resume state's option; ``--resume-state`` where ``--state`` means something else
STATE_FLAGS = ("--state", "--resume-state")


def add_source_args(
    p: argparse.ArgumentParser,
    *,
    path: bool = True,
    topic_flag: str = "--topic-name",
    brokers: bool = False,
    state_flags: tuple[str, ...] = STATE_FLAGS,
) -> None:
    """Where the offsets come from (PATH, several brokers' ``--log-dir``, or a live cluster) and how to
    replay them.

    ``topic_flag`` names the hidden option for a mirrored offsets topic: ``reload`` spells it ``--topic``;
    the group views keep ``--topic`` for their data-topic filter. ``brokers`` adds ``--log-dir`` for
    several brokers' log dirs (the group views use ``--log-dir`` for data-topic dirs instead).
    ``state_flags`` spell the resume state's option (the group views keep ``--state`` for group states)."""
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
        help="offsets.topic.num.partitions, for partition_for checks (default: $OFFSETOPS_NUM_PARTITIONS, "
        "the config file, server.properties, else 50)",
    )
    if state_flags:  # none for a command that replays records rather than the cache (history)
        add_state_arg(p, state_flags)
    p.add_argument(
        "--semantics",
        choices=["java", "scala"],
        help="coordinator replay rules: java (Kafka 3.6+/4.x) or scala (before 3.6); default from "
        "$OFFSETOPS_SEMANTICS, the config file, else the broker version (java when unknown)",
    )


class _StateDirAction(argparse.Action):
    """Stores the directory and the spelling used (``resume_state_dir_flag``), so the settings name the
    option the user typed: ``--state`` means the group state filter on ``groups``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_flag", option_string)


def add_state_arg(p: argparse.ArgumentParser, flags: tuple[str, ...] = STATE_FLAGS) -> None:
    """``--state DIR`` (or ``--resume-state DIR``): keep each partition's fold there and resume from it."""
    p.add_argument(
        *flags,
        action=_StateDirAction,
        dest="resume_state_dir",
        metavar="DIR",
        help="keep each partition's fold in DIR and, on the next run, read only what was appended "
        "since (when the log still holds what was read; else a fresh read, and the stats say why); "
        "default $OFFSETOPS_RESUME_STATE_DIR or offsetops.resume.state.dir of the config file. "
        "--until reads never use or write it",
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


def source_from_args(args: argparse.Namespace) -> Source:
    """The run's one :class:`Source`: PATH, the ``--log-dir`` of several brokers, or the live cluster
    of ``--bootstrap`` / ``--client-config``, with the run's read limits."""
    partitions = parse_partitions(getattr(args, "partition", None))
    common: dict = {
        "partitions": tuple(partitions) if partitions else None,
        "limits": ReadLimits(max_batch_bytes=args.run["max_batch_bytes"]),
        # the group views' and the exporter's --log-dir: data-topic partition dirs, for lag
        "data_log_dirs": tuple(getattr(args, "log_dir", None) or ()),
        "state_dir": args.run["resume_state_dir"],
    }
    if is_live(args):
        topic = getattr(args, "offsets_topic", "__consumer_offsets")
        return Source(client=kafka_client_config(args), topic=topic, **common)
    if getattr(args, "broker_log_dirs", None):
        return Source(broker_log_dirs=tuple(args.broker_log_dirs), **common)
    return Source(log_dir=args.path, **common)


def load_with_progress(
    source: Source, run: RunSettings, cut: Cut | None = None, replicas: list[ReplicaChoice] | None = None
) -> list[CoordinatorCache]:
    """:meth:`Source.load_caches` with the run's replay settings and a progress line on a terminal;
    divergent copies of several brokers' log dirs are warned about on stderr whoever the caller is."""
    chosen: list[ReplicaChoice] = []
    with Progress("reading", unit="partitions") as progress:
        caches = source.load_caches(
            num_partitions=run["num_partitions"],
            semantics=run["semantics"],
            cut=cut,
            replicas=chosen,
            on_partition=lambda _cache, size, what: progress.advance(1, size, what=what),
            on_count=lambda n: setattr(progress, "total", n),
        )
    for c in chosen:
        for d in c.divergences:
            # never merged, never silent: the reload reads the chosen copy only
            print(
                f"offsetops: warning: __consumer_offsets-{c.partition}: {escape(d.message)}", file=sys.stderr
            )
    warn_state(caches)
    if replicas is not None:
        replicas.extend(chosen)
    return caches


#: resume reasons that mean the state file itself is bad: the operator is warned on stderr
_BAD_STATE = frozenset({"state_unreadable", "state_corrupt", "state_foreign", "state_version"})


def warn_state(caches: list[CoordinatorCache]) -> None:
    """A warning on stderr for each state file that could not be used or saved (never fatal)."""
    for c in caches:
        warn_read(c.partition, c.stats.resume_reason, c.stats.resume_detail, c.stats.state_error)


def warn_read(partition: int | None, reason: str | None, detail: str | None, state_error: str | None) -> None:
    """A partition's read: a warning on stderr when its state file could not be used or saved."""
    if reason in _BAD_STATE:
        print(
            f"offsetops: warning: resume state ignored, read fresh: {escape(detail or '')}", file=sys.stderr
        )
    if state_error:
        print(f"offsetops: warning: partition {partition}: {escape(state_error)}", file=sys.stderr)


def resume_line(stats: LoadStats) -> str | None:
    """``resumed at offset N, read X bytes`` or why the partition was read from the start; None when
    no resume state was asked for."""
    if stats.resume_reason == "not_requested":
        return None
    if stats.resume_reason == "as_of":
        return f"resume state not used: {stats.resume_detail}"
    if stats.resumed:
        return f"{escape(stats.resume_detail)}, read {stats.bytes_read} bytes"
    return (
        f"read {stats.bytes_read} bytes from the start: {stats.resume_reason} ({escape(stats.resume_detail)})"
    )


def load_caches(
    args: argparse.Namespace, cut: Cut | None = None, replicas: list[ReplicaChoice] | None = None
) -> list[CoordinatorCache]:
    """Load the chosen partitions of the run's source (LogDirError and KafkaClientError propagate with
    the path or cluster in them). With several brokers' log dirs each partition is read from the copy
    :func:`~offsetops.coordinator_core.sources.replicas.choose_replica` picks; the choices are appended to
    ``replicas``."""
    return load_with_progress(source_from_args(args), args.run, cut, replicas)
