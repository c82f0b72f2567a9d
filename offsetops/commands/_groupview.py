"""Shared by ``offsetops groups`` and ``offsetops describe``: options, loading and the offsets lookup."""

from __future__ import annotations

import argparse
import os
import re
import sys

from offsetops.commands._common import die, epoch_time
from offsetops.commands._load import add_source_args, check_source, load_caches, source_from_args
from offsetops.coordinator_core.data_offsets import PartitionOffsets, live_offsets, offline_offsets
from offsetops.coordinator_core.describe import GroupFilter, GroupView, describe_groups, wanted_partitions
from offsetops.coordinator_core.errors import count_errors
from offsetops.coordinator_core.kafka_client import KafkaClientError
from offsetops.coordinator_core.sources.logdir import LogDirError
from offsetops.pipelines.cli_args import bounded_regex

FORMATS = ("text", "json", "csv")


def add_view_args(p: argparse.ArgumentParser, *, path: bool = True) -> None:
    add_source_args(p, path=path)
    p.add_argument(
        "--log-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="another broker log dir to look for data-topic partitions in (repeat; PATH is always searched)",
    )
    p.add_argument(
        "--group-regex", type=bounded_regex, metavar="REGEX", help="groups whose id fully matches REGEX"
    )
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC", help="only this topic (repeat)")
    p.add_argument("--topic-regex", type=bounded_regex, metavar="REGEX", help="topics that fully match REGEX")
    p.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE",
        help="only groups in this state, e.g. Stable, Empty, Dead (repeat; case-insensitive)",
    )
    add_output_args(p)


def add_output_args(p: argparse.ArgumentParser) -> None:
    """``--format``/``--json`` and ``--now``: how every group view prints, and from when ages count."""
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default), json or csv")
    p.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    p.add_argument(
        "--now",
        type=epoch_time,
        metavar="TIME",
        help="the time ages are measured from (ISO-8601, -2h, epoch ms; default: the clock the log dir "
        "declares, else now)",
    )


def build_views(args: argparse.Namespace, groups: list[str]) -> tuple[list[GroupView], str] | int:
    """Load, look up log offsets and describe; an int is an exit code after a printed error."""
    bad = refuse_bad_source(args)
    if bad is not None:
        return bad
    flt = GroupFilter(
        groups=frozenset(groups),
        group_regex=args.group_regex,
        topics=frozenset(args.topic),
        topic_regex=args.topic_regex,
        states=frozenset(args.state),
    )
    try:
        caches = load_caches(args)
    except LogDirError as exc:
        return die(str(exc))
    except KafkaClientError as exc:  # names the cluster and the reason, never a secret
        return die(str(exc))
    offsets, where = lookup_offsets(args, wanted_partitions(caches, flt))
    views = describe_groups(caches, offsets, flt)
    missing = sorted(set(groups) - {v.group_id for v in views})
    for gid in missing:
        print(f"offsetops: group {gid!r} not found in the loaded partitions", file=sys.stderr)
    errors = sum(count_errors(c.stats.errors) for c in caches)  # notices are not errors
    if errors:
        print(
            f"offsetops: {errors} decode error(s) while loading; run `offsetops reload` to see them",
            file=sys.stderr,
        )
    return views, where


def refuse_bad_source(args: argparse.Namespace) -> int | None:
    """The exit code, after a printed error, when the source or a ``--log-dir`` cannot work; else None."""
    problem = check_source(args)
    if problem:
        return die(problem)
    return check_log_dirs(args)


def check_log_dirs(args: argparse.Namespace) -> int | None:
    """A mistyped --log-dir would silently find no partitions: refuse it."""
    for extra in args.log_dir:
        if not os.path.isdir(extra):
            return die(f"--log-dir {extra}: not a directory")
    return None


def lookup_offsets(
    args: argparse.Namespace, wanted: set[tuple[str, int]]
) -> tuple[dict[tuple[str, int], PartitionOffsets], str]:
    """Log start/end of the wanted data partitions: ListOffsets live, partition dirs offline."""
    source = source_from_args(args)
    if source.client is not None:
        return live_offsets(source.client, wanted), "ListOffsets on the cluster"
    dirs = [logdir_root(args.path), *source.data_log_dirs]
    return offline_offsets(dirs, wanted), "data-topic partition dirs and checkpoints in " + ", ".join(dirs)


def logdir_root(path: str) -> str:
    """The log dir itself when PATH is one ``__consumer_offsets-N`` dir."""
    from pathlib import Path

    p = Path(path)
    return str(p.parent) if re.fullmatch(r"__consumer_offsets-\d+", p.name) else str(p)


def now_of(args: argparse.Namespace) -> int:
    """The instant ages are measured from: the run's clock (``--now``, ``OFFSETOPS_AS_OF_MS``, else the
    clock the log dir declares, else the wall clock); the same clock ``audit`` and ``expire`` use."""
    return args.run.now_ms
