"""``offsetops history``: every commit of a group in log order, with rewinds and outside commits flagged."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from offsetops.commands._common import die, epoch_time, print_json, report_errors
from offsetops.commands._groupview import add_output_args, check_log_dirs, logdir_root, now_of
from offsetops.commands._load import add_source_args, check_source, source_from_args
from offsetops.commands._run import with_settings
from offsetops.commands._table import cell, print_table, write_csv
from offsetops.coordinator_core.data_offsets import PartitionOffsets, live_offsets, offline_offsets
from offsetops.coordinator_core.history import (
    NOT_ASSIGNED,
    PAST_LOG_END,
    REWIND,
    CommitEvent,
    CommitHistory,
    GroupChange,
    replay_history,
)
from offsetops.coordinator_core.kafka_client import KafkaClientError
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.logdir import LogDirError, open_log_dir
from offsetops.coordinator_core.sources.source import Source
from offsetops.coordinator_core.timefmt import ago, iso_utc, time_json
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
    add_source_args(p)
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


def _window(args: argparse.Namespace):
    """Which commits to keep while replaying: --topic, --since, --until (--flagged is applied at the
    end, since a transactional commit is judged only when its marker arrives)."""

    def keep(c: CommitEvent) -> bool:
        if args.topic and c.topic not in args.topic:
            return False
        if args.since is not None and c.timestamp < args.since:
            return False
        return args.until is None or c.timestamp <= args.until

    return keep


class _LiveEnds:
    """Log ends over ListOffsets, fetched once per topic (every partition of it) on first use."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._config = source.client
        self._found: dict[tuple[str, int], PartitionOffsets] = {}
        self._topics: set[str] = set()

    def __call__(self, tp: tuple[str, int]) -> PartitionOffsets | None:
        if tp[0] not in self._topics:
            self._topics.add(tp[0])
            try:
                with self._source.live(topic=tp[0]) as live:
                    parts = live.partitions()
            except KafkaClientError:
                parts = [tp[1]]  # live_offsets then names the error per partition
            self._found.update(live_offsets(self._config, {(tp[0], p) for p in parts}))
        return self._found.get(tp)


def _history(args: argparse.Namespace) -> CommitHistory:
    partition = partition_for(args.group, args.num_partitions)
    kw = {"offsets_partition": partition, "keep": _window(args), "max_commits": args.max_commits}
    source = source_from_args(args)
    if source.is_live:
        errors: list = []
        with source.live() as live:
            return replay_history(
                live.iter_batches(partition, errors),
                args.group,
                errors=errors,
                log_offsets=_LiveEnds(source),
                **kw,
            )
    pdir = open_log_dir(args.path, partitions=[partition]).partitions[0]
    dirs = [logdir_root(args.path), *args.log_dir]
    errors = []
    label = f"replaying __consumer_offsets-{partition}"
    with Progress(label, total=len(pdir.segments), unit="segments") as pr:

        def batches():
            for seg in pdir.segments:
                yield from iter_segment_batches(
                    seg.path,
                    partition=partition,
                    errors=errors,
                    max_batch_bytes=source.limits.max_batch_bytes,
                )
                pr.advance(1, seg.size)

        return replay_history(
            batches(),
            args.group,
            errors=errors,
            log_offsets=lambda tp: offline_offsets(dirs, [tp]).get(tp),
            **kw,
        )


def _selected(hist: CommitHistory, args: argparse.Namespace) -> list[CommitEvent]:
    return [c for c in hist.commits if c.flags or not args.flagged]


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
    if args.num_partitions <= 0:
        return die(f"--num-partitions must be positive, got {args.num_partitions}")
    if args.max_commits <= 0:
        return die(f"--max-commits must be positive, got {args.max_commits}")
    bad = check_log_dirs(args)
    if bad is not None:
        return bad
    try:
        hist = _history(args)
    except LogDirError as exc:
        return die(
            f"{exc} (group {args.group!r} lives in partition "
            f"{partition_for(args.group, args.num_partitions)} with --num-partitions "
            f"{args.num_partitions})"
        )
    except KafkaClientError as exc:
        return die(str(exc))
    now = now_of(args)
    commits = _selected(hist, args)
    if hist.dropped_commits:
        selected = len(hist.commits) + hist.dropped_commits
        print(
            f"offsetops: showing the newest {len(hist.commits)} of {selected} selected commits; narrow "
            "with --since/--until/--topic or raise --max-commits",
            file=sys.stderr,
        )
    if args.format == "json":
        _print_json(hist, commits, now, args)
    elif args.format == "csv":
        _print_csv(commits)
    else:
        _print_text(hist, commits, now)
    if hist.errors:
        report_errors(hist.errors)
    return 0


def _print_json(hist: Any, commits: list[CommitEvent], now: int, args: argparse.Namespace) -> None:
    """The history as one JSON document, with the run's settings."""
    print_json(
        with_settings(
            {
                "group_id": hist.group_id,
                "offsets_partition": hist.offsets_partition,
                "records_read": hist.records_read,
                "total_commits": hist.total_commits,
                "dropped_commits": hist.dropped_commits,
                "log_range": [hist.first_offset, hist.last_offset],
                "summary": _summary(commits),
                "commits": [dict(c.to_json(), time=time_json(c.timestamp, now)) for c in commits],
                "group_changes": [dict(g.to_json(), time=time_json(g.timestamp, now)) for g in hist.changes],
                "errors": [e.to_dict() for e in hist.errors],
            },
            args,
        )
    )


def _print_csv(commits: list[CommitEvent]) -> None:
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


def _summary(commits: list[CommitEvent]) -> dict[str, Any]:
    return {
        "commits": len(commits),
        "rewinds": sum(REWIND in c.flags for c in commits),
        "past_log_end": sum(PAST_LOG_END in c.flags for c in commits),
        "not_assigned": sum(NOT_ASSIGNED in c.flags for c in commits),
        "aborted": sum(c.outcome == "aborted" for c in commits),
    }


def _print_text(hist: CommitHistory, commits: list[CommitEvent], now: int) -> None:
    out = sys.stdout
    s = _summary(commits)
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
