"""A following exporter's snapshots, recomputed and rendered per ``__consumer_offsets`` partition.

Between two updates most partitions did not move: their caches are the same objects and the data
partitions their groups commit to kept their log offsets. :class:`SnapshotPieces` keeps, per offsets
partition, the group views (``kafka-consumer-groups --describe`` rows) and the exposition lines of
its groups, and redoes them only for a partition whose cache was replaced or one of whose data
partitions' log start or end moved; there, only for the groups not equal to the one their view was
made from, or whose data partitions moved. The views are merged in group id order and the lines
family by family, so the views equal ``describe_groups`` of every cache and the exposition is byte for
byte what ``prometheus_client.generate_latest`` makes of ``snapshot_metrics``. What spans the topic
(settings, water marks, group counts, the cleaner audit, the expiration plan, the failover forecast)
is rendered whole each time; it is a few lines per partition.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

from offsetops.coordinator_core.cache import CoordinatorCache, GroupMetadata
from offsetops.coordinator_core.describe import (
    GroupFilter,
    GroupView,
    TopicPartition,
    describe_group,
    describe_groups,
    wanted_partitions,
)
from offsetops.coordinator_core.escape import for_prometheus_label, prometheus_label_value
from offsetops.coordinator_core.metrics_snapshot import (
    Families,
    Snapshot,
    _group_metrics,
    _group_type_metrics,
    _reload_metrics,
    _water_mark_metrics,
    assignment_figures,
    settings_info,
    snapshot_metrics,
    topic_metrics,
)
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString

__all__ = ["SnapshotPieces", "render_families"]

#: the families ``_group_metrics`` yields: nine per group, the two water marks (topic-wide), the groups
#: per type and state (a count over every view), the assignment epoch and the streams tasks (per group)
_PER_GROUP = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13)
_WATER_MARKS = (9, 10)
_COUNT = 11
_BY_GROUP = itemgetter(0)
ALL = GroupFilter()


def render_families(families: Iterable[Metric]) -> bytes:
    """The text exposition (format 0.0.4) of ``families``, as ``prometheus_client`` renders it."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families(list(families)))  # type: ignore[arg-type]
    return generate_latest(registry)


#: a label value (visible already, ``_Gauge``) escaped for the text format; values repeat (group ids
#: on every row, topics, partition numbers), so each is escaped once while it stays among the last ones
_label = functools.lru_cache(maxsize=1 << 16)(for_prometheus_label)


def _value(v: float) -> str:
    """``floatToGoString``; an integer below 10**6 (which Go writes without an exponent) directly."""
    if type(v) is int and -(10**15) < v < 10**6:
        return f"{v}.0"
    return floatToGoString(v)


def _line(s: Any) -> str:
    """One gauge sample as ``generate_latest`` writes it (a name and label names of the legacy
    charset, as every offsetops family has; labels sorted by name; no timestamp)."""
    if not s.labels:
        return f"{s.name} {_value(s.value)}\n"
    labels = ",".join([f'{k}="{_label(v)}"' for k, v in sorted(s.labels.items())])
    return f"{s.name}{{{labels}}} {_value(s.value)}\n"


def _lines(family: Metric) -> str:
    return "".join([_line(s) for s in family.samples])


def _header(family: Metric) -> str:
    """The family's HELP and TYPE lines, as ``generate_latest`` writes them."""
    return render_families([Metric(family.name, family.documentation, family.type)]).decode("utf-8")


def _split(families: list[Metric], views: list[GroupView]) -> list[tuple[str, tuple[str, ...]]] | None:
    """Each view's lines in each per-group family of ``families`` (rendered for ``views`` together,
    whose samples come view after view, each labelled with its group id); None when two views have the
    same label (distinct ids the label policy shows alike), whose lines cannot be told apart."""
    labels = [prometheus_label_value(v.group_id) for v in views]
    if len(set(labels)) != len(labels):
        return None
    at = {label: i for i, label in enumerate(labels)}
    lines: list[list[str]] = [[""] * len(_PER_GROUP) for _ in views]
    for j, index in enumerate(_PER_GROUP):
        per_view: dict[int, list[str]] = {}
        for s in families[index].samples:
            per_view.setdefault(at[s.labels["group_id"]], []).append(_line(s))
        for i, texts in per_view.items():
            lines[i][j] = "".join(texts)
    return [(v.group_id, tuple(texts)) for v, texts in zip(views, lines, strict=True)]


@dataclass(slots=True)
class _Part:
    """One offsets partition's share of the snapshot: the cache it was computed from, the data
    partitions its views looked up, its views in group id order, what each view was made from (the
    group and the data partitions of its rows), the lines of each view rendered so far (by group id)
    and, once rendered, the partition's reload lines."""

    cache: CoordinatorCache
    tps: frozenset[TopicPartition]
    views: list[GroupView]
    made_from: dict[str, tuple[GroupMetadata, frozenset[TopicPartition], GroupView]]
    lines: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reload: tuple[str, ...] | None = None


class SnapshotPieces:
    """The views and exposition of one source's successive snapshots, per offsets partition.

    Bounded: one entry per partition of the latest caches (a partition gone is dropped), each replaced
    when its partition moves. Not thread-safe: the one thread that computes snapshots renders them.
    """

    def __init__(self, granularity: str = "partition"):
        self.granularity = granularity
        self._parts: dict[int | None, _Part] = {}
        self._offsets: dict[TopicPartition, Any] = {}
        self._views: list[GroupView] | None = None
        self._headers: dict[str, str] = {}
        #: the partitions whose views the last :meth:`views` computed again
        self.recomputed: tuple[int | None, ...] = ()
        #: views of those partitions kept since (their group and data partitions unchanged), in all
        self.reused = 0

    def views(
        self, caches: Sequence[CoordinatorCache], log_offsets: dict[TopicPartition, Any]
    ) -> list[GroupView]:
        """``describe_groups(caches, log_offsets)``, recomputing only the partitions that moved."""
        keys = [c.partition for c in caches]
        if len(set(keys)) != len(keys):  # not one cache per partition: nothing to keep apart
            self._parts, self._views, self.recomputed = {}, None, tuple(keys)
            return describe_groups(caches, log_offsets)
        old = self._offsets
        moved = {tp for tp in old.keys() | log_offsets.keys() if old.get(tp) != log_offsets.get(tp)}
        parts, redone = {}, []
        for cache in caches:
            part = self._parts.get(cache.partition)
            if part is None or part.cache is not cache or not part.tps.isdisjoint(moved):
                part = self._redo(cache, part, moved, log_offsets)
                redone.append(cache.partition)
            parts[cache.partition] = part
        self._parts, self._offsets, self.recomputed = parts, dict(log_offsets), tuple(redone)
        self._views = list(heapq.merge(*(p.views for p in parts.values()), key=attrgetter("group_id")))
        return self._views

    def _redo(
        self,
        cache: CoordinatorCache,
        was: _Part | None,
        moved: set[TopicPartition],
        log_offsets: dict[TopicPartition, Any],
    ) -> _Part:
        """A partition that moved: a group equal to the one its last view was made from, none of whose
        data partitions moved, keeps its view and lines; the others are described again."""
        before = was.made_from if was is not None else {}
        made_from, lines, views = {}, {}, []
        for group in cache.groups.values():
            gid = group.group_id
            prev = before.get(gid)
            if prev is not None and prev[1].isdisjoint(moved) and prev[0] == group:
                view, tps = prev[2], prev[1]
                if was is not None and gid in was.lines:
                    lines[gid] = was.lines[gid]
                self.reused += 1
            else:
                view = describe_group(group, cache.partition, log_offsets)
                tps = frozenset([(r.topic, r.partition) for r in view.rows])
            made_from[gid] = (group, tps, view)
            views.append(view)
        views.sort(key=attrgetter("group_id"))
        return _Part(cache, frozenset().union(*(m[1] for m in made_from.values())), views, made_from, lines)

    def wanted(self, caches: Sequence[CoordinatorCache]) -> set[TopicPartition]:
        """The data partitions whose log offsets the views of ``caches`` need (``wanted_partitions``),
        taken from the last views for the caches that did not change."""
        out: set[TopicPartition] = set()
        for cache in caches:
            part = self._parts.get(cache.partition)
            out |= part.tps if part is not None and part.cache is cache else wanted_partitions([cache], ALL)
        return out

    def exposition(self, snap: Snapshot) -> bytes:
        """``generate_latest`` of ``snapshot_metrics(snap)``, byte for byte, with the lines of the
        partitions that did not move rendered before. ``snap`` must hold the views :meth:`views` gave
        last and the share and streams figures of those views (``compute_snapshot`` without
        ``assignments``); any other snapshot is rendered whole."""
        if self._views is None or snap.views is not self._views:
            return render_families(snapshot_metrics(snap, granularity=self.granularity))
        head = render_families([settings_info(snap.settings)] if snap.settings is not None else [])
        return head + self._groups_text(snap) + self._reload_text() + render_families(topic_metrics(snap))

    def _groups_text(self, snap: Snapshot) -> bytes:
        for part in self._parts.values():
            missing = [v for v in part.views if v.group_id not in part.lines]
            if missing:
                part.lines.update(self._chunks(missing))
        chunks = [[(v.group_id, p.lines[v.group_id]) for v in p.views] for p in self._parts.values()]
        per_family: list[list[str]] = [[] for _ in _PER_GROUP]
        for _gid, texts in heapq.merge(*chunks, key=_BY_GROUP):
            for j, text in enumerate(texts):
                per_family[j].append(text)
        families = list(_group_metrics(_alone([]), self.granularity))
        marks = list(_water_mark_metrics(snap.log_offsets))
        count = next(iter(_group_type_metrics(snap.views, [])))
        out: list[str] = []
        for i, family in enumerate(families):
            out.append(self._header(family))
            if i in _WATER_MARKS:
                out.append(_lines(marks[_WATER_MARKS.index(i)]))
            elif i == _COUNT:
                out.append(_lines(count))
            else:
                out.extend(per_family[_PER_GROUP.index(i)])
        return "".join(out).encode("utf-8")

    def _chunks(self, views: list[GroupView]) -> list[tuple[str, tuple[str, ...]]]:
        """Each view's lines per group family: rendered for the partition's views at once, else (two
        views labelled alike) view by view."""
        split = _split(list(_group_metrics(_alone(views), self.granularity)), views)
        if split is not None:
            return split
        out = []
        for v in views:
            families = list(_group_metrics(_alone([v]), self.granularity))
            out.append((v.group_id, tuple(_lines(families[i]) for i in _PER_GROUP)))
        return out

    def _reload_text(self) -> bytes:
        parts = list(self._parts.values())
        for part in parts:
            if part.reload is None:
                part.reload = tuple(_lines(m) for m in _reload_metrics([part.cache]))
        out = []
        for i, family in enumerate(_reload_metrics([])):
            out.append(self._header(family))
            out.extend(p.reload[i] for p in parts if p.reload is not None)
        return "".join(out).encode("utf-8")

    def _header(self, family: Metric) -> str:
        header = self._headers.get(family.name)
        if header is None:
            header = self._headers[family.name] = _header(family)
        return header


def _alone(views: list[GroupView]) -> Snapshot:
    """A snapshot of ``views`` alone, for ``_group_metrics`` to render their per-group families."""
    return Snapshot(0.0, [], views, {}, assignments=assignment_figures(views))
