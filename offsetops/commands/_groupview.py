"""Shared by ``offsetops groups`` and ``offsetops describe``: options, the core's view run, expiry cells."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

from offsetops.commands._common import die, epoch_time, non_negative_float
from offsetops.commands._load import add_source_args, check_source, load_with_progress, source_from_args
from offsetops.coordinator_core.describe import GroupFilter
from offsetops.coordinator_core.expiry_risk import GroupRisk
from offsetops.coordinator_core.findings import CRITICAL
from offsetops.coordinator_core.group_views import (
    GroupsRequest,
    GroupsResult,
    ViewInputError,
    check_data_log_dirs,
)
from offsetops.coordinator_core.kafka_client import KafkaClientError
from offsetops.coordinator_core.sources.logdir import LogDirError
from offsetops.coordinator_core.timefmt import ago, iso_utc
from offsetops.pipelines.cli_args import bounded_regex, broker_version, positive_int

FORMATS = ("text", "json", "csv")
R = TypeVar("R", bound=GroupsResult)


def add_view_args(p: argparse.ArgumentParser, *, path: bool = True) -> None:
    add_source_args(p, path=path, state_flags=("--resume-state",))
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
    add_expiry_args(p)


def add_expiry_args(p: argparse.ArgumentParser) -> None:
    """When offsets expire, with the settings ``offsetops expire`` takes (same flags, resolved by the same
    run model: flag, ``OFFSETOPS_*``, the config file, server.properties, Kafka's default)."""
    p.add_argument(
        "--retention-ms",
        type=positive_int,
        metavar="MS",
        help="offsets.retention.minutes in ms, for when offsets expire (default: "
        "$OFFSETOPS_RETENTION_MINUTES, the config file, server.properties, else Kafka's default for the "
        "broker version)",
    )
    p.add_argument(
        "--broker-version",
        type=broker_version,
        metavar="X.Y",
        help="the brokers' Kafka version; picks the expiration rules and the retention default as "
        "`offsetops expire` does (default: $OFFSETOPS_BROKER_VERSION, the config file, server.properties, "
        "the log dir's declaration)",
    )
    p.add_argument(
        "--forecast-hours",
        type=non_negative_float,
        metavar="H",
        help="a group whose offsets expire within H hours is at risk (default: $OFFSETOPS_FORECAST_HOURS, "
        "else 24)",
    )


def expiry_cell(risk: GroupRisk | None, now: int) -> str:
    """``EXPIRED 3 offsets``, ``in 1 h 20 min (5 offsets)``, or ``-``."""
    if risk is None:
        return "-"
    if risk.expired_offsets or risk.dead:
        lost = f"{risk.expired_offsets} offsets" if risk.expired_offsets else "group"
        return f"EXPIRED {lost}"
    at = risk.first_expires_at
    return f"{ago(at, now)} ({risk.expiring_offsets} offsets)" if at is not None else "-"


def risk_line(risk: GroupRisk, now: int) -> str:
    """``CRITICAL offsets_expired: 3 committed offsets past retention`` or ``DEGRADED offsets_expiring:
    5 committed offsets expire within the window, the first in 1 h 20 min (at ...)``."""
    line = f"{risk.severity} {risk.code}: {risk.finding().text}"
    if risk.severity != CRITICAL and risk.first_expires_at is not None:
        line += f", the first {ago(risk.first_expires_at, now)} (at {iso_utc(risk.first_expires_at)})"
    return line


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


def view_result(args: argparse.Namespace, groups: list[str], view: Callable[..., R]) -> R | int:
    """Run the core's ``view`` (:func:`~offsetops.coordinator_core.group_views.groups_view` or
    ``describe_view``) over the run's source, loading with progress on a terminal; warn on stderr of
    groups not found and of decode errors. An int is an exit code after a printed error."""
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
        result = view(GroupsRequest(args.run, source_from_args(args), flt), load=load_with_progress)
    except (LogDirError, ViewInputError, KafkaClientError) as exc:  # the path or cluster, never a secret
        return die(str(exc))
    for gid in result.missing:
        print(f"offsetops: group {gid!r} not found in the loaded partitions", file=sys.stderr)
    if result.decode_errors:
        print(
            f"offsetops: {result.decode_errors} decode error(s) while loading; run `offsetops reload` to see "
            "them",
            file=sys.stderr,
        )
    return result


def refuse_bad_source(args: argparse.Namespace) -> int | None:
    """The exit code, after a printed error, when the source or a ``--log-dir`` cannot work; else None."""
    problem = check_source(args)
    if problem:
        return die(problem)
    return check_log_dirs(args)


def check_log_dirs(args: argparse.Namespace) -> int | None:
    """A mistyped --log-dir would silently find no partitions: refuse it."""
    try:
        check_data_log_dirs(args.log_dir)
    except ViewInputError as exc:
        return die(str(exc))
    return None
