"""``offsetops groups``: one line per group with state, members, total lag and offsets out of range."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from offsetops.commands._common import print_json
from offsetops.commands._groupview import (
    add_view_args,
    build_views,
    expiry_cell,
    expiry_risks,
    now_of,
    risk_rank,
)
from offsetops.commands._run import with_settings
from offsetops.commands._table import cell, print_table, write_csv
from offsetops.coordinator_core.describe import GroupView
from offsetops.coordinator_core.expiry_risk import GroupRisk
from offsetops.coordinator_core.findings import CRITICAL
from offsetops.coordinator_core.share_group import SHARE_OFFSETS_NOTE
from offsetops.coordinator_core.timefmt import ago, iso_utc, time_json

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
    built = build_views(args, args.group)
    if isinstance(built, int):
        return built
    views, where, caches = built
    now = now_of(args)
    risks = expiry_risks(args, caches, now)
    order = risk_rank(risks)
    # Worst first: groups losing offsets (lost, then the soonest expiry), then offsets out of range,
    # then the largest lag.
    views.sort(
        key=lambda v: (order.get(v.group_id, len(order)), -v.out_of_range, -(v.total_lag or 0), v.group_id)
    )
    if args.format == "json":
        _print_json(args, views, where, risks, now)
    elif args.format == "csv":
        write_csv(CSV_HEADERS, _csv_rows(views, risks, now))
    else:
        _print_text(args, views, where, risks, now)
    return 0


def _print_json(
    args: argparse.Namespace, views: list[GroupView], where: str, risks: dict[str, GroupRisk], now: int
) -> None:
    docs = []
    for v in views:
        doc = v.to_json()
        doc.pop("rows")
        doc["last_commit_time"] = time_json(v.last_commit_timestamp, now)
        risk = risks.get(v.group_id)
        doc["expiry"] = None if risk is None else risk.to_json()
        docs.append(doc)
    print_json(with_settings({"now": time_json(now, now), "log_offsets_from": where, "groups": docs}, args))


def _csv_rows(views: list[GroupView], risks: dict[str, GroupRisk], now: int) -> list[tuple[Any, ...]]:
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
            *_risk_csv(risks.get(v.group_id)),
        )
        for v in views
    ]


def _print_text(
    args: argparse.Namespace, views: list[GroupView], where: str, risks: dict[str, GroupRisk], now: int
) -> None:
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
        f"{args.forecast_hours:g} h; {len(bad)} with offsets out of range"
        + (f" (worst: {cell(bad[0].group_id)}, {bad[0].out_of_range} partitions)" if bad else "")
        + "\n"
    )
    print_table(HEADERS, rows)
    shares = sum(v.group_type == "share" for v in views)
    if shares:
        sys.stdout.write(f"{shares} share group(s): {SHARE_OFFSETS_NOTE} (no lag here)\n")
    sys.stdout.write(f"log start/end from {cell(where)}\n")
    sys.stdout.write(cell(args.run.summary()) + "\n")  # the settings the expiry column was computed with


def _risk_csv(risk: GroupRisk | None) -> tuple[Any, ...]:
    if risk is None:
        return (None, 0, 0, None)
    return (risk.severity, risk.expired_offsets, risk.expiring_offsets, risk.first_expires_at)
