"""``offsetops history``: every commit of a group in log order, with rewinds and outside commits flagged."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from offsetops.commands._common import die, epoch_time, print_json, report_errors
from offsetops.commands._groupview import add_output_args, check_log_dirs
from offsetops.commands._load import add_source_args, check_source, source_from_args
from offsetops.commands._run import with_settings
from offsetops.commands._table import cell, print_table, write_csv
from offsetops.coordinator_core.group_views import HistoryRequest, HistoryResult, ViewInputError, history_view
from offsetops.coordinator_core.history import PAST_LOG_END, REWIND, CommitEvent, CommitHistory, GroupChange
from offsetops.coordinator_core.kafka_client import KafkaClientError
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.sources.logdir import LogDirError
from offsetops.coordinator_core.timefmt import ago, iso_utc
from offsetops.pipelines.cli_args import int_range
from offsetops.progress import Progress

HEADERS = ("LOG-OFFSET", "TIME", "TOPIC", "PARTITION", "OFFSET", "DELTA", "EPOCH", "TXN", "OWNER", "FLAGS")
CSV_HEADERS = (
    "record_offset",
    "timestamp_ms",
    "time",
    "topic",
    "partition",
    "offset",
    "previous_offset",
    "leader_epoch",
    "metadata",
    "transactional",
    "producer_id",
    "outcome",
    "generation",
    "group_state",
    "members",
    "member_id",
    "client_id",
    "host",
    "flags",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "history",
        description="Replay the group's __consumer_offsets partition record by record and print every "
        "offset commit of the group in log order, with the member and host that owned the partition "
        "then. Flags offset rewinds (a commit below the previous one: a reset), commits above the data "
        "partition's log end, and commits for partitions no member owned (admin tools, assign() "
        "consumers). Compaction removes superseded commits, so the history reaches back as far as the "
        "cleaner has left it.",
    )
    add_source_args(p, state_flags=())
    p.add_argument("--group", required=True, metavar="GROUP", help="the group id")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC", help="only this topic (repeat)")
    p.add_argument("--since", type=epoch_time, metavar="TIME", help="only commits at or after TIME")
    p.add_argument("--until", type=epoch_time, metavar="TIME", help="only commits at or before TIME")
    p.add_argument("--flagged", action="store_true", help="only commits with a flag")
    p.add_argument(
        "--max-commits",
        type=int_range(1, 100_000_000),
        default=1_000_000,
        metavar="N",
        help="keep at most the newest N selected commits in memory (default 1000000)",
    )
    p.add_argument("--log-dir", action="append", default=[], metavar="DIR", help="more log dirs for log ends")
    add_output_args(p)
    p.set_defaults(func=run)


def _owner(c: CommitEvent) -> str:
    if c.owner is not None:
        return f"{c.owner.member_id}@{c.owner.host}"
    return "no member (group empty)" if not c.members else "not assigned to any member"


def _txn(c: CommitEvent) -> str:
    return f"pid {c.producer_id} {c.outcome}" if c.transactional else "-"


def run(args: argparse.Namespace) -> int:
    problem = check_source(args)
    if problem:
        return die(problem)
    bad = check_log_dirs(args)
    if bad is not None:
        return bad
    try:
        result = _history(args)
    except LogDirError as exc:
        return die(
            f"{exc} (group {args.group!r} lives in partition "
            f"{partition_for(args.group, args.num_partitions)} with --num-partitions "
            f"{args.num_partitions})"
        )
    except (KafkaClientError, ViewInputError) as exc:
        return die(str(exc))
    hist = result.history
    if hist.dropped_commits:
        selected = len(hist.commits) + hist.dropped_commits
        print(
            f"offsetops: showing the newest {len(hist.commits)} of {selected} selected commits; narrow "
            "with --since/--until/--topic or raise --max-commits",
            file=sys.stderr,
        )
    if args.format == "json":
        print_json(with_settings(result.to_json(), args))
    elif args.format == "csv":
        _print_csv(result.commits)
    else:
        _print_text(result)
    if hist.errors:
        report_errors(hist.errors)
    return 0


def _history(args: argparse.Namespace) -> HistoryResult:
    """The core's history of ``--group`` over the run's source, with progress over the segments."""
    request = HistoryRequest(
        args.run,
        source_from_args(args),
        args.group,
        topics=tuple(args.topic),
        since_ms=args.since,
        until_ms=args.until,
        flagged=args.flagged,
        max_commits=args.max_commits,
    )
    label = f"replaying __consumer_offsets-{request.offsets_partition}"
    with Progress(label, unit="segments") as progress:
        return history_view(
            request,
            on_count=lambda n: setattr(progress, "total", n),
            on_segment=lambda size: progress.advance(1, size),
        )


def _print_csv(commits: Sequence[CommitEvent]) -> None:
    """One CSV row per commit (CSV_HEADERS)."""
    write_csv(
        CSV_HEADERS,
        [
            (
                c.record_offset,
                c.timestamp,
                iso_utc(c.timestamp),
                c.topic,
                c.partition,
                c.offset,
                c.previous_offset,
                c.leader_epoch,
                c.metadata,
                c.transactional,
                c.producer_id,
                c.outcome,
                c.generation,
                c.group_state,
                c.members,
                c.owner.member_id if c.owner else None,
                c.owner.client_id if c.owner else None,
                c.owner.host if c.owner else None,
                " ".join(c.flags),
            )
            for c in commits
        ],
    )


def _print_text(result: HistoryResult) -> None:
    out, hist, commits, now = sys.stdout, result.history, result.commits, result.now_ms
    s = result.summary
    out.write(
        f"group {cell(hist.group_id)} in __consumer_offsets-{hist.offsets_partition}: {s['commits']} commits "
        f"({hist.records_read} records read, log offsets {hist.first_offset}..{hist.last_offset}); "
        f"{s['rewinds']} rewinds, {s['past_log_end']} past the log end, {s['not_assigned']} for "
        f"partitions no member owned, {s['aborted']} aborted\n"
    )
    # The worst first: rewinds and outside commits answer "who moved my offsets".
    for c in commits:
        if REWIND in c.flags or PAST_LOG_END in c.flags:
            what = "REWIND" if REWIND in c.flags else "PAST LOG END"
            out.write(
                f"  {what}: {cell(c.topic)}-{c.partition} "
                f"{'first commit' if c.previous_offset is None else c.previous_offset} -> {c.offset} at "
                f"{iso_utc(c.timestamp)} ({ago(c.timestamp, now)}) by {cell(_owner(c))}\n"
            )
    _print_state_changes(hist, now, out)
    changes = iter(hist.changes)
    pending = next(changes, None)
    rows = []
    for c in commits:
        while pending is not None and pending.record_offset < c.record_offset:
            rows.append(_change_row(pending))
            pending = next(changes, None)
        delta = None
        if c.offset is not None and c.previous_offset is not None:
            delta = f"{c.offset - c.previous_offset:+d}"
        rows.append(
            (
                c.record_offset,
                iso_utc(c.timestamp),
                c.topic,
                c.partition,
                "tombstone" if c.offset is None else c.offset,
                delta,
                c.leader_epoch,
                _txn(c),
                _owner(c),
                " ".join(c.flags) or "-",
            )
        )
    while pending is not None:  # after the last commit: the group going Empty or Dead comes here
        rows.append(_change_row(pending))
        pending = next(changes, None)
    if rows:
        print_table(HEADERS, rows)


def _change_row(g: GroupChange) -> tuple[Any, ...]:
    what = f"generation {g.generation}, {cell(g.state)}, {len(g.members)} members"
    return (g.record_offset, iso_utc(g.timestamp), "(group)", None, None, None, None, None, what, None)


def _print_state_changes(hist: CommitHistory, now: int, out: Any) -> None:
    """Each change of the group's state (Stable, Empty, Dead, ...), the JSON's ``group_changes`` in
    words: Empty starts the offsets' expiry clock (GroupMetadataManager.cleanupGroupMetadata)."""
    previous = None
    for g in hist.changes:
        if g.state == previous:
            continue
        note = " (no member left: the expiry clock of its offsets starts)" if g.state == "Empty" else ""
        note = " (the group was deleted)" if g.state == "Dead" else note
        out.write(
            f"  STATE {cell(g.state)} at {iso_utc(g.timestamp)} ({ago(g.timestamp, now)}), generation "
            f"{g.generation}, {len(g.members)} members, log offset {g.record_offset}{note}\n"
        )
        previous = g.state
