"""``offsetops describe``: per group and partition, the committed offset, log start/end, lag and owner."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from offsetops.commands._common import print_json
from offsetops.commands._group_detail import headline, print_detail
from offsetops.commands._groupview import add_view_args, risk_line, view_result
from offsetops.commands._run import with_settings
from offsetops.commands._table import cell, print_table, write_csv
from offsetops.coordinator_core.describe import (
    ABOVE_LOG_END,
    BELOW_LOG_START,
    LOG_UNKNOWN,
    GroupView,
    OffsetRow,
)
from offsetops.coordinator_core.expiry_risk import GroupRisk
from offsetops.coordinator_core.group_views import DescribeResult, describe_view
from offsetops.coordinator_core.timefmt import ago, iso_utc

HEADERS = (
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-START-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "STATUS",
    "LAST-COMMIT",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
)
CSV_HEADERS = (
    "group_id",
    "group_type",
    "state",
    "protocol",
    "generation",
    "coordinator_partition",
    "topic",
    "partition",
    "committed_offset",
    "leader_epoch",
    "log_start_offset",
    "log_end_offset",
    "lag",
    "status",
    "commit_timestamp_ms",
    "commit_time",
    "commit_age",
    "metadata",
    "member_id",
    "client_id",
    "host",
    "group_instance_id",
    "offsets_source",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "describe",
        description="Rebuild the coordinator cache and print, for each group and partition, what "
        "`kafka-consumer-groups --describe` prints (committed offset, log-end offset, lag, owning member, "
        "host and client id) plus the log start, the commit time and age, and offsets out of range. "
        "Offline, log start/end come from the data topics' partition dirs in the same log dir(s); "
        "with --bootstrap, from ListOffsets.",
    )
    p.add_argument(
        "targets",
        nargs="*",
        metavar="[PATH] GROUP",
        help="a broker log dir (or one __consumer_offsets-N dir), then group ids (default: every group); "
        "with --bootstrap, only group ids",
    )
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="a group id (repeat)")
    add_view_args(p, path=False)
    p.set_defaults(func=run)


def _status(row: OffsetRow) -> str:
    return row.status.upper().replace("_", "-")


def _when(ms: int | None, now: int) -> str:
    return "-" if ms is None else f"{iso_utc(ms)} ({ago(ms, now)})"


def explain(row: OffsetRow) -> str | None:
    """What an out-of-range row means for the consumer."""
    tp = f"{row.topic}-{row.partition}"
    if row.status == BELOW_LOG_START:
        return (
            f"{tp}: committed {row.committed_offset} is below the log start {row.log_start_offset}; "
            "the consumer will reset by auto.offset.reset (records in between were deleted unread)"
        )
    if row.status == ABOVE_LOG_END:
        return (
            f"{tp}: committed {row.committed_offset} is above the log end {row.log_end_offset}; "
            "the topic was recreated or truncated, and the consumer resets or waits"
        )
    return None


def print_group(view: GroupView, now: int, out: Any = None, risk: GroupRisk | None = None) -> None:
    out = out or sys.stdout
    proto = "/".join(x for x in (view.protocol_type, view.protocol) if x) or "-"
    kip848 = view.group_type == "consumer"
    kind = "KIP-848 consumer group" if kip848 else f"{view.group_type} {cell(proto)}"
    epoch = "group epoch" if kip848 else "generation"
    what = f"{kind}, {view.state}, {epoch} {view.generation}"
    if view.detail is not None:
        what = headline(view.detail)
    out.write(
        f"GROUP {cell(view.group_id)} ({what}, "
        f"coordinator __consumer_offsets-{cell(view.coordinator_partition)}, {view.members} members)\n"
    )
    if risk is not None:
        out.write(f"  {risk_line(risk, now)} (offsets.retention.minutes; `offsetops expire` plans it)\n")
    if view.detail is not None:
        print_detail(view.detail, out)
    flagged = [e for e in (explain(r) for r in view.rows) if e]
    if flagged:
        out.write(f"  {len(flagged)} OFFSET(S) OUT OF RANGE:\n")
        for line in flagged:
            out.write(f"    {cell(line)}\n")
    rows = [
        (
            r.topic,
            r.partition,
            r.committed_offset,
            r.log_start_offset,
            r.log_end_offset,
            r.lag,
            _status(r),
            _when(r.commit_timestamp, now),
            r.member_id,
            r.host,
            r.client_id,
        )
        for r in view.rows
    ]
    if rows:
        print_table(HEADERS, rows, out)
    else:
        out.write("  (no committed offsets and no assigned partitions)\n")
    out.write("\n")


def csv_rows(views: list[GroupView], now: int) -> list[tuple[Any, ...]]:
    return [
        (
            v.group_id,
            v.group_type,
            v.state,
            v.protocol,
            v.generation,
            v.coordinator_partition,
            r.topic,
            r.partition,
            r.committed_offset,
            r.leader_epoch,
            r.log_start_offset,
            r.log_end_offset,
            r.lag,
            r.status,
            r.commit_timestamp,
            iso_utc(r.commit_timestamp),
            ago(r.commit_timestamp, now),
            r.metadata,
            r.member_id,
            r.client_id,
            r.host,
            r.group_instance_id,
            r.offsets_source,
        )
        for v in views
        for r in v.rows
    ]


def run(args: argparse.Namespace) -> int:
    targets = list(args.targets)
    args.path = None if args.bootstrap or args.client_config or not targets else targets.pop(0)
    args.groups = [*targets, *args.group]
    result = view_result(args, args.groups, describe_view)
    if isinstance(result, int):
        return result
    if args.format == "json":
        print_json(with_settings(result.to_json(), args))
    elif args.format == "csv":
        write_csv(CSV_HEADERS, csv_rows(list(result.views), result.now_ms))
    else:
        _print_text(result)
    return 0 if result.views or not args.groups else 1


def _print_text(result: DescribeResult) -> None:
    for v in result.views:
        print_group(v, result.now_ms, risk=result.risk(v.group_id))
    unknown = sum(r.status == LOG_UNKNOWN for v in result.views for r in v.rows)
    sys.stdout.write(f"log start/end from {cell(result.log_offsets_from)}")
    if unknown:
        sys.stdout.write(f"; {unknown} partition(s) not found there (LOG-UNKNOWN: no lag)")
    sys.stdout.write("\n" + result.read.sentence() + "\n")
    sys.stdout.write(
        cell(result.settings.summary()) + "\n"
    )  # the settings the expiry lines were computed with
