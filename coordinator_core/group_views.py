"""The group views as core entry points: :func:`groups_view`, :func:`describe_view` and :func:`history_view`.

Each takes a request (the run's settings with their clock, one :class:`~offsetops.coordinator_core.sources.
source.Source`, what to show) and returns the typed result every front end renders: the groups worst first
(lost offsets, then the soonest expiry, then offsets out of range), each group's expiry risk under the
plan ``offsetops expire`` would make (GroupMetadataManager.cleanupGroupMetadata), the log start/end the
lag was measured against and where they came from. :func:`source_log_offsets` is that lookup alone (the
exporter's). Input a view cannot run with raises :class:`ViewInputError`; a log dir or a cluster that
cannot be read raises ``LogDirError`` / ``KafkaClientError`` with the path or the cluster in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.data_offsets import PartitionOffsets, live_offsets, offline_offsets
from offsetops.coordinator_core.describe import GroupFilter, GroupView, describe_groups, wanted_partitions
from offsetops.coordinator_core.errors import DecodeError, count_errors
from offsetops.coordinator_core.expiration import plan_for_run
from offsetops.coordinator_core.expiry_risk import GroupRisk, group_risks
from offsetops.coordinator_core.history import (
    NOT_ASSIGNED,
    PAST_LOG_END,
    REWIND,
    CommitEvent,
    CommitHistory,
    replay_history,
)
from offsetops.coordinator_core.kafka_client import KafkaClientError
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.read_summary import ReadSummary
from offsetops.coordinator_core.records.batch import RecordBatch
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.run import RunSettings
from offsetops.coordinator_core.sources.replicas import split_broker_prefix
from offsetops.coordinator_core.sources.source import OFFSETS_TOPIC, Source
from offsetops.coordinator_core.timefmt import time_json

__all__ = [
    "DescribeResult",
    "GroupsRequest",
    "GroupsResult",
    "HistoryRequest",
    "HistoryResult",
    "ViewInputError",
    "describe_view",
    "groups_view",
    "history_view",
    "source_log_offsets",
]

TopicPartition = tuple[str, int]
#: How a view loads the source's caches with the run's replay settings (a front end passes its own, with
#: progress); the default is :func:`load_caches`.
CacheLoader = Callable[[Source, RunSettings], list[CoordinatorCache]]
#: The history's replay: told how many segments it reads, then each segment's size once read.
OnCount = Callable[[int], None]
OnSegment = Callable[[int], None]
DEFAULT_MAX_COMMITS = 1_000_000


class ViewInputError(ValueError):
    """Input a view cannot run with; the message names it and says why."""


def load_caches(source: Source, settings: RunSettings) -> list[CoordinatorCache]:
    """doLoadGroupsAndOffsets of the source's partitions with the run's replay settings."""
    return source.load_caches(num_partitions=settings["num_partitions"], semantics=settings["semantics"])


def check_data_log_dirs(dirs: Iterable[str]) -> None:
    """A mistyped data-topic log dir would silently find no partitions: refuse it."""
    for extra in dirs:
        if not Path(extra).is_dir():
            raise ViewInputError(f"--log-dir {extra}: not a directory")


def logdir_root(path: str) -> str:
    """The log dir itself when ``path`` is one ``__consumer_offsets-N`` dir."""
    p = Path(path)
    return str(p.parent) if re.fullmatch(rf"{OFFSETS_TOPIC}-\d+", p.name) else str(p)


def source_log_offsets(
    source: Source, wanted: Iterable[TopicPartition]
) -> tuple[dict[TopicPartition, PartitionOffsets], str]:
    """Log start/end of the wanted data partitions and where they came from: ListOffsets on a live
    cluster; offline, the partition dirs and checkpoints of the log dir and the source's data log dirs."""
    if source.client is not None:
        return live_offsets(source.client, wanted), "ListOffsets on the cluster"
    dirs = [*_offline_roots(source), *source.data_log_dirs]
    return offline_offsets(dirs, wanted), "data-topic partition dirs and checkpoints in " + ", ".join(dirs)


def _offline_roots(source: Source) -> list[str]:
    """The log dirs the source reads, whose data-topic partitions bound lag."""
    if source.log_dir:
        return [logdir_root(source.log_dir)]
    try:  # [BROKER_ID=]PATH per broker: each broker's log dir holds data partitions too
        return [split_broker_prefix(spec)[1] for spec in source.broker_log_dirs]
    except ValueError as exc:
        raise ViewInputError(f"--log-dir {exc}") from None


def expiry_risks(caches: Sequence[CoordinatorCache], settings: RunSettings) -> dict[str, GroupRisk]:
    """Each group's expiry risk at the run's clock, worst first, from the expiration plan ``offsetops
    expire`` would make with the run's retention, coordinator and forecast window."""
    plan = plan_for_run(caches, settings)
    return {r.group_id: r for r in group_risks(plan)}


@dataclass(frozen=True, slots=True)
class GroupsRequest:
    """One group view: the run's settings (clock, retention, replay rules), the source and the filter
    (``group_filter.groups``: the group ids asked for by name, reported when not found)."""

    settings: RunSettings
    source: Source
    group_filter: GroupFilter = field(default_factory=GroupFilter)


@dataclass(frozen=True)
class GroupsResult:
    """The groups of a view, worst first, with their expiry risks and where log start/end came from."""

    views: tuple[GroupView, ...]
    risks: Mapping[str, GroupRisk]  # worst first, as group_risks orders them
    log_offsets_from: str
    now_ms: int
    settings: RunSettings
    missing: tuple[str, ...]  # groups asked for by name and not found in the loaded partitions
    decode_errors: int  # errors (not notices) met while loading
    read: ReadSummary  # what the load read: bytes, partitions, resumed ones

    def risk(self, group_id: str) -> GroupRisk | None:
        return self.risks.get(group_id)

    def rows_json(self, view: GroupView) -> list[dict[str, Any]] | None:
        """A group's rows as its document shows them (``groups`` shows none)."""
        return None

    def group_json(self, view: GroupView) -> dict[str, Any]:
        """One group's document: the view with its rows as :meth:`rows_json` says, its last commit time
        and expiry risk."""
        doc = view.to_json()
        rows = self.rows_json(view)
        if rows is None:
            doc.pop("rows")
        else:
            doc["rows"] = rows
        doc["last_commit_time"] = time_json(view.last_commit_timestamp, self.now_ms)
        risk = self.risk(view.group_id)
        doc["expiry"] = None if risk is None else risk.to_json()
        return doc

    def to_json(self) -> dict[str, Any]:
        """``offsetops groups --json`` (the front end adds the run's settings)."""
        return {
            "now": time_json(self.now_ms, self.now_ms),
            "log_offsets_from": self.log_offsets_from,
            "groups": [self.group_json(v) for v in self.views],
            "read": self.read.to_json(),
        }


@dataclass(frozen=True)
class DescribeResult(GroupsResult):
    """The groups of ``describe``: each with its rows (committed offset, log start/end, lag, owner)."""

    def rows_json(self, view: GroupView) -> list[dict[str, Any]] | None:
        return [
            {
                **r.to_json(),
                "commit_time": time_json(r.commit_timestamp, self.now_ms),
                "expire_time": time_json(r.expire_timestamp, self.now_ms),
            }
            for r in view.rows
        ]


def _view(request: GroupsRequest, load: CacheLoader) -> dict[str, Any]:
    """The fields both views share, the views in the order the loader found them."""
    check_data_log_dirs(request.source.data_log_dirs)
    caches = load(request.source, request.settings)
    flt = request.group_filter
    offsets, where = source_log_offsets(request.source, wanted_partitions(caches, flt))
    views = describe_groups(caches, offsets, flt)
    found = {v.group_id for v in views}
    return {
        "views": views,
        "risks": expiry_risks(caches, request.settings),
        "log_offsets_from": where,
        "now_ms": request.settings.now_ms,
        "settings": request.settings,
        "missing": tuple(sorted(flt.groups - found)),
        "decode_errors": sum(count_errors(c.stats.errors) for c in caches),  # notices are not errors
        "read": ReadSummary.of(caches),
    }


def _risk_rank(risks: Mapping[str, GroupRisk]) -> Callable[[GroupView], int]:
    """A group's place in the one worst-first order of expiry risk; groups without a risk after."""
    rank = {gid: i for i, gid in enumerate(risks)}
    return lambda v: rank.get(v.group_id, len(rank))


def groups_view(request: GroupsRequest, *, load: CacheLoader = load_caches) -> GroupsResult:
    """``offsetops groups``: every wanted group, worst first (groups losing offsets, lost then the soonest
    expiry; then offsets out of range; then the largest lag)."""
    fields = _view(request, load)
    rank = _risk_rank(fields["risks"])
    views = sorted(
        fields.pop("views"), key=lambda v: (rank(v), -v.out_of_range, -(v.total_lag or 0), v.group_id)
    )
    return GroupsResult(views=tuple(views), **fields)


def describe_view(request: GroupsRequest, *, load: CacheLoader = load_caches) -> DescribeResult:
    """``offsetops describe`` (kafka-consumer-groups --describe): every wanted group with its rows, worst
    first (groups losing offsets, lost then the soonest expiry; then offsets out of range)."""
    fields = _view(request, load)
    rank = _risk_rank(fields["risks"])
    views = sorted(fields.pop("views"), key=lambda v: (rank(v), -v.out_of_range, v.group_id))
    return DescribeResult(views=tuple(views), **fields)


# -- history ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HistoryRequest:
    """One group's commit history: which commits to keep (``topics``, ``since_ms``/``until_ms``), whether
    only flagged ones are shown, and at most how many are held in memory."""

    settings: RunSettings
    source: Source
    group_id: str
    topics: tuple[str, ...] = ()
    since_ms: int | None = None
    until_ms: int | None = None
    flagged: bool = False
    max_commits: int = DEFAULT_MAX_COMMITS

    @property
    def offsets_partition(self) -> int:
        """The ``__consumer_offsets`` partition the group lives in (partition_for)."""
        return partition_for(self.group_id, self.settings["num_partitions"])

    def keeps(self, commit: CommitEvent) -> bool:
        """Whether the replay keeps ``commit`` (``flagged`` is applied at the end: a transactional commit
        is judged only when its marker arrives)."""
        if self.topics and commit.topic not in self.topics:
            return False
        if self.since_ms is not None and commit.timestamp < self.since_ms:
            return False
        return self.until_ms is None or commit.timestamp <= self.until_ms


@dataclass(frozen=True)
class HistoryResult:
    """The replayed history and the commits selected from it (``--flagged``), as of the run's clock."""

    history: CommitHistory
    commits: tuple[CommitEvent, ...]
    now_ms: int

    @property
    def summary(self) -> dict[str, int]:
        commits = self.commits
        return {
            "commits": len(commits),
            "rewinds": sum(REWIND in c.flags for c in commits),
            "past_log_end": sum(PAST_LOG_END in c.flags for c in commits),
            "not_assigned": sum(NOT_ASSIGNED in c.flags for c in commits),
            "aborted": sum(c.outcome == "aborted" for c in commits),
        }

    def to_json(self) -> dict[str, Any]:
        """``offsetops history --json`` (the front end adds the run's settings)."""
        hist, now = self.history, self.now_ms
        return {
            "group_id": hist.group_id,
            "offsets_partition": hist.offsets_partition,
            "records_read": hist.records_read,
            "total_commits": hist.total_commits,
            "dropped_commits": hist.dropped_commits,
            "log_range": [hist.first_offset, hist.last_offset],
            "summary": self.summary,
            "commits": [dict(c.to_json(), time=time_json(c.timestamp, now)) for c in self.commits],
            "group_changes": [dict(g.to_json(), time=time_json(g.timestamp, now)) for g in hist.changes],
            "errors": [e.to_dict() for e in hist.errors],
        }


class _LiveEnds:
    """Log ends over ListOffsets, fetched once per topic (every partition of it) on first use."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._found: dict[TopicPartition, PartitionOffsets] = {}
        self._topics: set[str] = set()

    def __call__(self, tp: TopicPartition) -> PartitionOffsets | None:
        if tp[0] not in self._topics:
            self._topics.add(tp[0])
            try:
                with self._source.live(topic=tp[0]) as live:
                    parts = live.partitions()
            except KafkaClientError:
                parts = [tp[1]]  # live_offsets then names the error per partition
            self._found.update(live_offsets(self._source.client, {(tp[0], p) for p in parts}))
        return self._found.get(tp)


def _offline_batches(
    source: Source, errors: list[DecodeError], on_count: OnCount | None, on_segment: OnSegment | None
) -> Iterator[RecordBatch]:
    """The batches of the source's one partition dir, segment by segment, within the read limits."""
    for pdir in source.partition_dirs():
        if on_count is not None:
            on_count(len(pdir.segments))
        errors.extend(pdir.anomalies)  # what listing the dir found wrong, as every reader reports it
        for seg in pdir.segments:
            yield from iter_segment_batches(
                seg.path,
                partition=pdir.partition,
                errors=errors,
                verify_crc=source.limits.verify_crc,
                max_batch_bytes=source.limits.max_batch_bytes,
            )
            if on_segment is not None:
                on_segment(seg.size)


def history_view(
    request: HistoryRequest, *, on_count: OnCount | None = None, on_segment: OnSegment | None = None
) -> HistoryResult:
    """``offsetops history``: every commit of the group in log order with its owner then, rewinds,
    commits past the log end and commits no member owned flagged (GroupMetadataManager's replay)."""
    if request.max_commits <= 0:
        raise ViewInputError(f"--max-commits must be positive, got {request.max_commits}")
    check_data_log_dirs(request.source.data_log_dirs)
    partition = request.offsets_partition
    source = replace(request.source, partitions=(partition,))
    errors: list[DecodeError] = []
    kw: dict[str, Any] = {"offsets_partition": partition, "keep": request.keeps, "errors": errors}
    if source.is_live:
        with source.live() as live:
            hist = replay_history(
                live.iter_batches(partition, errors, verify_crc=source.limits.verify_crc),
                request.group_id,
                log_offsets=_LiveEnds(source),
                max_commits=request.max_commits,
                **kw,
            )
    else:
        dirs = [*_offline_roots(source), *source.data_log_dirs]
        hist = replay_history(
            _offline_batches(source, errors, on_count, on_segment),
            request.group_id,
            log_offsets=lambda tp: offline_offsets(dirs, [tp]).get(tp),
            max_commits=request.max_commits,
            **kw,
        )
    commits = tuple(c for c in hist.commits if c.flags or not request.flagged)
    return HistoryResult(history=hist, commits=commits, now_ms=request.settings.now_ms)
