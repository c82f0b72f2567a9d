"""``offsetops reload``: rebuild the coordinator cache of each partition and print it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from offsetops.commands._common import (
    die,
    escape,
    print_json_chunks,
    quote,
    report_errors,
    strict_exit,
)
from offsetops.commands._load import (
    add_source_args,
    check_source,
    load_caches,
    parse_until,
    resume_line,
)
from offsetops.commands._run import with_settings
from offsetops.coordinator_core.asof import Cut
from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.cache_json import caches_chunks, object_chunks
from offsetops.coordinator_core.errors import DecodeError, count_errors, error_total
from offsetops.coordinator_core.sources.logdir import LogDirError
from offsetops.coordinator_core.timefmt import describe_time, now_ms
from offsetops.pipelines.cli_args import add_max_batch_bytes

if TYPE_CHECKING:  # several brokers' log dirs only
    from offsetops.coordinator_core.sources.replicas import ReplicaChoice


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reload",
        description="Replay __consumer_offsets exactly as the group coordinator does when it loads a "
        "partition (doLoadGroupsAndOffsets), and print the groups, offsets and load statistics.",
    )
    add_source_args(p, topic_flag="--topic", brokers=True)
    p.add_argument(
        "--until",
        type=parse_until,
        metavar="OFFSET|TIME",
        help="rebuild the cache as it stood then: before log offset OFFSET, or at TIME "
        "(ISO-8601, relative like -2h, or epoch ms as 1700000000000ms)",
    )
    add_max_batch_bytes(p, default=None)
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument("--strict", action="store_true", help="exit non-zero if any record had an error")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from offsetops.coordinator_core.kafka_client import KafkaClientError

    problem = check_source(args)
    if problem:
        return die(problem)
    replicas: list[ReplicaChoice] = []
    try:
        caches = load_caches(args, args.until, replicas)
    except LogDirError as exc:
        return die(str(exc))
    except KafkaClientError as exc:  # names the cluster and the reason, never a secret
        return die(str(exc))
    errors = [e for c in caches for e in c.stats.errors]
    if args.json:
        doc: dict[str, Any] = {"partitions": None}  # written from the caches' own JSON text
        if args.until is not None:
            doc["as_of"] = args.until.to_json()
        if args.broker_log_dirs:
            doc["replicas"] = [c.to_json() for c in replicas]
        print_json_chunks(object_chunks(with_settings(doc, args), "partitions", caches_chunks(caches)))
    else:
        if args.until is not None:
            _print_cut(args.until)
        for c in replicas:
            sys.stdout.write(f"partition {c.partition}: reads {escape(c.reason)}\n")
        _print_summary(caches)
        sys.stdout.write(escape(args.run.summary(("num_partitions", "semantics", "max_batch_bytes"))) + "\n")
    if errors:
        report_errors(errors)
    return strict_exit(errors, args.strict)


def _print_cut(cut: Cut) -> None:
    if cut.until_offset is not None:
        sys.stdout.write(f"as of log offset {cut.until_offset} (records before it only)\n")
    if cut.until_ms is not None:
        now = now_ms()
        sys.stdout.write(f"as of {describe_time(cut.until_ms, now)}\n")


def _findings(errors: list[DecodeError]) -> str:
    """``N errors``, and ``M notices`` when there are any (notices are not errors)."""
    n = count_errors(errors)
    notices = error_total(errors) - n  # summaries by their count
    return f"{n} errors" + (f", {notices} notices" if notices else "")


def _print_summary(caches: list[CoordinatorCache]) -> None:
    out = sys.stdout
    total_groups = total_offsets = total_records = 0
    for c in caches:
        s = c.stats
        total_groups += len(c.groups)
        total_offsets += c.offset_count
        total_records += s.records
        out.write(
            f"partition {c.partition}: {len(c.groups)} groups, {c.offset_count} offsets | "
            f"{s.segments} segments, {s.batches} batches, {s.records} records incl. control, "
            f"{s.bytes} bytes, "
            f"{s.tombstones} tombstones, {s.control_records} control, "
            f"{s.unknown_record_types} unknown-type, {_findings(s.errors)}, {s.elapsed_ms:.1f} ms\n"
        )
        resume = resume_line(s)
        if resume is not None:
            out.write(f"  {resume}\n")
        for gid in sorted(c.groups):
            g = c.groups[gid]
            pending = sum(len(v) for v in g.pending_offsets.values())
            extra = f", {pending} pending txn offsets" if pending else ""
            if g.group_type == "share":
                from offsetops.coordinator_core.share_group import SHARE_STATE_TOPIC

                extra += f" (its offsets live in {SHARE_STATE_TOPIC})"
            ptype = quote(g.protocol_type) if g.protocol_type else "-"
            out.write(
                f"  {quote(gid)}: {g.state}, protocol_type={ptype}, "
                f"generation={g.generation}, {len(g.members)} members, {len(g.offsets)} offsets{extra}\n"
            )
        if c.misplaced_groups:
            names = ", ".join(quote(g) for g in c.misplaced_groups[:10])
            out.write(
                f"  WARNING: {len(c.misplaced_groups)} group(s) do not belong in partition {c.partition} "
                f"by partition_for with {c.num_partitions} partitions: {names}\n"
            )
    out.write(
        f"total: {len(caches)} partitions, {total_groups} groups, {total_offsets} offsets, "
        f"{total_records} records incl. control\n"
    )
