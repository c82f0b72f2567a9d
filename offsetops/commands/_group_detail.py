"""How ``describe`` (and ``groups``) show a share or a streams group: epochs, members with their
subscriptions and assignment or tasks, a streams group's topology, and where a share group's offsets are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from offsetops.commands._table import cell, print_table
from offsetops.coordinator_core.share_group import SHARE_OFFSETS_NOTE, ShareGroup
from offsetops.coordinator_core.streams_group import StreamsGroup, TasksTuple, TopicInfo


def ranges(parts: Sequence[int]) -> str:
    """``0,1,2,5`` -> ``0-2,5``."""
    out: list[str] = []
    nums = sorted(parts)
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(out)


def partitions_text(assignment: Mapping[str, Sequence[int]]) -> str:
    """``{"orders": [0, 1, 2]}`` -> ``orders:0-2`` (topics separated by spaces)."""
    return " ".join(f"{t}:{ranges(p)}" for t, p in sorted(assignment.items()) if p) or "-"


def tasks_text(tasks: Mapping[str, Sequence[int]]) -> str:
    """Subtopology -> task partitions as ``0:0-2 1:3`` (Kafka Streams task ids ``0_0``..``0_2``, ``1_3``)."""
    return partitions_text(tasks)


def headline(detail: ShareGroup | StreamsGroup) -> str:
    """What goes after the group id in describe's first line."""
    text = f"{detail.group_type} group, {detail.state}, group epoch {detail.group_epoch}, "
    text += f"assignment epoch {detail.assignment_epoch}"
    if isinstance(detail, StreamsGroup) and detail.topology is not None:
        text += f", topology epoch {detail.topology.epoch}"
    return text


def _notes(detail: ShareGroup | StreamsGroup, out: TextIO) -> None:
    if detail.early_access:
        out.write(
            "  EARLY ACCESS, NOT UPGRADABLE: written by an early-access coordinator ("
            + cell(", ".join(detail.early_access))
            + "); Kafka 4.1+ does not load such a group: delete it and let its clients rejoin\n"
        )
    for finding in detail.findings:
        out.write(f"  REPLAY: {cell(finding)}\n")


def _share(detail: ShareGroup, out: TextIO) -> None:
    out.write(f"  Note: {SHARE_OFFSETS_NOTE}; the rows below show owners, not committed offsets.\n")
    rows = [
        (
            m.member_id,
            m.client_id,
            m.client_host,
            m.member_epoch,
            m.state,
            " ".join(m.subscribed_topics) or "-",
            partitions_text(m.assigned_partitions),
            partitions_text(detail.target_assignment.get(m.member_id, {})),
        )
        for m in detail.members
    ]
    if rows:
        print_table(
            ("  MEMBER", "CLIENT-ID", "HOST", "EPOCH", "STATE", "SUBSCRIBED", "ASSIGNED", "TARGET"),
            [("  " + cell(r[0]), *r[1:]) for r in rows],
            out,
        )
    states = [
        ("initializing", partitions_text(detail.initializing_topics)),
        ("initialized", partitions_text(detail.initialized_topics)),
        ("deleting", " ".join(detail.deleting_topics) or "-"),
    ]
    shown = [(s, t) for s, t in states if t != "-"]
    if shown:
        out.write("  Share-partition state in " + "__share_group_state: ")
        out.write("; ".join(f"{s} {cell(t)}" for s, t in shown) + "\n")


def _topics(infos: Sequence[TopicInfo]) -> str:
    return " ".join(i.name for i in infos) or "-"


def _streams(detail: StreamsGroup, out: TextIO) -> None:
    if detail.topology is None:
        out.write("  TOPOLOGY: none stored (the group is NotReady until a member sends one)\n")
    else:
        ready = detail.validated_topology_epoch == detail.topology.epoch
        out.write(
            f"  TOPOLOGY epoch {detail.topology.epoch}, "
            + ("validated" if ready else "not validated (internal or source topics missing)")
            + "".join(f", {cell(k)}={cell(v)}" for k, v in sorted(detail.assignment_configs.items()))
            + "\n"
        )
        print_table(
            ("  SUBTOPOLOGY", "SOURCE-TOPICS", "REPARTITION-SOURCES", "REPARTITION-SINKS", "CHANGELOGS"),
            [
                (
                    "  " + cell(s.subtopology_id),
                    " ".join(s.source_topics + tuple(f"/{r}/" for r in s.source_topic_regex)) or "-",
                    _topics(s.repartition_source_topics),
                    " ".join(s.repartition_sink_topics) or "-",
                    _topics(s.state_changelog_topics),
                )
                for s in detail.topology.subtopologies
            ],
            out,
        )
    rows: list[tuple[Any, ...]] = []
    for m in detail.members:
        target = detail.target_assignment.get(m.member_id, TasksTuple({}, {}, {}))
        rows.append(
            (
                "  " + cell(m.member_id),
                m.process_id,
                m.user_endpoint,
                m.client_id,
                m.member_epoch,
                m.state,
                tasks_text(m.assigned_tasks.active),
                tasks_text(m.assigned_tasks.standby),
                tasks_text(m.assigned_tasks.warmup),
                tasks_text(m.tasks_pending_revocation.active),
                tasks_text(target.active),
            )
        )
    if rows:
        print_table(
            (
                "  MEMBER",
                "PROCESS",
                "ENDPOINT",
                "CLIENT-ID",
                "EPOCH",
                "STATE",
                "ACTIVE",
                "STANDBY",
                "WARMUP",
                "REVOKING",
                "TARGET-ACTIVE",
            ),
            rows,
            out,
        )


def print_detail(detail: ShareGroup | StreamsGroup, out: TextIO) -> None:
    """The share or streams part of a group's describe output (tasks as ``subtopology:partitions``)."""
    _notes(detail, out)
    if isinstance(detail, ShareGroup):
        _share(detail, out)
    else:
        _streams(detail, out)
