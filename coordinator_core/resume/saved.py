"""What the log dir and the live resumption share: the saved fold restored once its point is checked,
the next point saved, and the outcome written into the cache's stats."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.resume.codec import StateFormatError
from offsetops.coordinator_core.resume.point import Refusal, ResumePoint
from offsetops.coordinator_core.resume.snapshot import fold_meta, fold_tables, orphan_groups, restore_fold
from offsetops.coordinator_core.resume.store import StateStore

__all__ = ["note", "resume_from", "save_point"]

P = TypeVar("P")


def resume_from(
    store: StateStore,
    topic: str,
    partition: int,
    *,
    semantics: str,
    anomalies: tuple[DecodeError, ...],
    plan: Callable[[ResumePoint], P | Refusal],
    maybe_compacted: Callable[[P], bool],
) -> tuple[PartitionFold, P, ResumePoint] | Refusal:
    """The saved fold of ``topic``-``partition``, with the ``plan`` its point allows, or why not.

    Java semantics: when the log may have been compacted since (``maybe_compacted(plan)``), a group
    that exists only because an offset commit that no longer survives created it
    (``OffsetMetadataManager.replay``) cannot be proven to be in a fresh load any more: the cleaner may
    have removed that record."""
    saved = store.read(topic, partition)
    if isinstance(saved, Refusal):
        return saved
    meta, tables = saved
    try:
        point = ResumePoint.from_json(meta.get("point"))
        planned = plan(point)
        if isinstance(planned, Refusal):
            return planned
        fold = restore_fold(
            meta.get("fold"), tables, partition=partition, semantics=semantics, anomalies=anomalies
        )
    except StateFormatError as exc:
        return Refusal(exc.code, f"{store.path(topic, partition)}: {exc}")
    if semantics == "java" and maybe_compacted(planned):
        orphans = orphan_groups(fold)
        if orphans:
            return Refusal(
                "compacted_created_groups",
                f"{orphans} group(s) exist only through offset commits that no longer survive, and the "
                "log may have been compacted since: a fresh load may no longer create them",
            )
    return fold, planned, point


def save_point(
    store: StateStore,
    fold: PartitionFold,
    point: ResumePoint,
    errors: list[DecodeError],
    *,
    unchanged: bool = False,
) -> str | None:
    """Save ``fold`` at ``point`` with ``errors`` (not when ``unchanged``); why not, or None."""
    if unchanged:
        return None
    try:
        store.write(point.topic, point.partition, {"point": point.to_json(), "fold": fold_meta(fold, errors)},
                    fold_tables(fold))  # fmt: skip
    except (OSError, ValueError) as exc:
        return f"state not saved: {exc}"
    return None


def note(cache: CoordinatorCache, refusal: Refusal | None, resumed_detail: str = "") -> None:
    """The outcome in the cache's stats: resumed (``resumed_detail`` says where), or the refusal."""
    stats = cache.stats
    stats.resumed = refusal is None
    stats.resume_reason = None if refusal is None else refusal.code
    stats.resume_detail = resumed_detail if refusal is None else refusal.detail
