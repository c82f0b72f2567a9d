"""``offsetops groups``: one line per group with state, members, total lag and offsets out of range."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from offsetops.commands._common import print_json
from offsetops.commands._groupview import add_view_args, expiry_cell, view_result
from offsetops.commands._run import with_settings
from offsetops.commands._table import cell, print_table, write_csv
from offsetops.coordinator_core.expiry_risk import GroupRisk
from offsetops.coordinator_core.findings import CRITICAL
from offsetops.coordinator_core.group_views import GroupsResult, groups_view
from offsetops.coordinator_core.share_group import SHARE_OFFSETS_NOTE
from offsetops.coordinator_core.timefmt import ago, iso_utc

HEADERS = (
    "GROUP",
    "TYPE",
    "STATE",
    "PROTOCOL",
    "GENERATION",
    "COORDINATOR",
    "MEMBERS",
    "PARTITIONS",
    "TOTAL-LAG",
    "OUT-OF-RANGE",
    "LAST-COMMIT",
    "OFFSETS-EXPIRE",
)
CSV_HEADERS = (
    "group_id",
    "group_type",
    "state",
    "protocol_type",
    "protocol",
    "generation",
    "coordinator_partition",
    "members",
    "partitions",
    "total_lag",
    "max_lag",
    "out_of_range",
    "last_commit_timestamp_ms",
    "last_commit_time",
    "last_commit_age",
    "expiry_severity",
    "expired_offsets",
    "expiring_offsets",
    "first_expires_at",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "groups",
        description="Rebuild the coordinator cache and print one line per group: type, state, protocol, "
        "generation (the group epoch for consumer, share and streams groups), coordinator partition, "
        "members, total lag and how many committed offsets lie outside their partition's log. `offsetops "
        "describe GROUP` shows the partitions, and for share and streams groups the members' assignments, "
        "the topology and the tasks. A share group's offsets live in __share_group_state, not here.",
    )
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="only this group (repeat)")
    add_view_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = view_result(args, args.group, groups_view)
    if isinstance(result, int):
        return result
    if args.format == "json":
        print_json(with_settings(result.to_json(), args))
    elif args.format == "csv":
        write_csv(CSV_HEADERS, _csv_rows(result))
    else:
        _print_text(result)
    return 0


def _csv_rows(result: GroupsResult) -> list[tuple[Any, ...]]:
    now = result.now_ms
    return [
        (
            v.group_id,
            v.group_type,
            v.state,
            v.protocol_type,
            v.protocol,
            v.generation,
            v.coordinator_partition,
            v.members,
            len(v.rows),
            v.total_lag,
            v.max_lag,
            v.out_of_range,
            v.last_commit_timestamp,
            iso_utc(v.last_commit_timestamp),
            ago(v.last_commit_timestamp, now),
            *_risk_csv(result.risk(v.group_id)),
        )
        for v in result.views
    ]


def _print_text(result: GroupsResult) -> None:
    views, risks, now = result.views, result.risks, result.now_ms
    rows = []
    for v in views:
        last = v.last_commit_timestamp
        proto = "/".join(x for x in (v.protocol_type, v.protocol) if x) or None
        rows.append(
            (
                v.group_id,
                v.group_type,
                v.state,
                proto,
                v.generation,
                v.coordinator_partition,
                v.members,
                len(v.rows),
                v.total_lag,
                v.out_of_range,
                None if last is None else f"{iso_utc(last)} ({ago(last, now)})",
                expiry_cell(risks.get(v.group_id), now),
            )
        )
    bad = [v for v in views if v.out_of_range]
    shown = [risks[v.group_id] for v in views if v.group_id in risks]  # the groups listed, as the table
    lost = sum(r.severity == CRITICAL for r in shown)
    sys.stdout.write(
        f"{len(views)} groups; {lost} lost committed offsets, {len(shown) - lost} lose some within "
        f"{result.settings['forecast_hours']:g} h; {len(bad)} with offsets out of range"
        + (f" (worst: {cell(bad[0].group_id)}, {bad[0].out_of_range} partitions)" if bad else "")
        + "\n"
    )
    print_table(HEADERS, rows)
    shares = sum(v.group_type == "share" for v in views)
    if shares:
        sys.stdout.write(f"{shares} share group(s): {SHARE_OFFSETS_NOTE} (no lag here)\n")
    sys.stdout.write(f"log start/end from {cell(result.log_offsets_from)}\n")
    sys.stdout.write(result.read.sentence() + "\n")
    # the settings the expiry column was computed with
    sys.stdout.write(cell(result.settings.summary()) + "\n")


def _risk_csv(risk: GroupRisk | None) -> tuple[Any, ...]:
    if risk is None:
        return (None, 0, 0, None)
    return (risk.severity, risk.expired_offsets, risk.expiring_offsets, risk.first_expires_at)
