"""Materialize a fold again after an append, decoding only the survivors whose record changed.

A loaded coordinator applies each appended record to the cache it already holds
(``CoordinatorRuntime`` / ``GroupMetadataManager.replay``) rather than loading the partition again. A
following reader keeps the same property for the costly part of ``finish()``: the decode of the
surviving values. :class:`SurvivorMemo` holds, per record offset, the value bytes and what the last
materialization of the partition made of them (an ``OffsetAndMetadata``, a classic group); the next
one takes that result when the survivor is the same record with the same bytes, and decodes the rest.
Everything else the build does (which key survives, transactions, groups created by commits, KIP-848,
share and streams groups) runs as in a fresh build, so the cache equals a fresh ``finish()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from offsetops.coordinator_core.cache import CoordinatorCache, GroupMetadata, OffsetAndMetadata
from offsetops.coordinator_core.materialize import Entry, Materializer

if TYPE_CHECKING:
    from offsetops.coordinator_core.loader import PartitionFold

__all__ = ["ReusingMaterializer", "SurvivorMemo"]


@dataclass(slots=True)
class SurvivorMemo:
    """One partition's survivors as its last materialization decoded them, by record offset: the value
    bytes and the result. Replaced whole by every build (it holds the current survivors only), and
    only results whose decode reported nothing are kept, so a reused one adds no error a fresh decode
    would have reported."""

    semantics: str | None = None
    offsets: dict[int, tuple[bytes, OffsetAndMetadata]] = field(default_factory=dict)
    groups: dict[int, tuple[bytes, GroupMetadata]] = field(default_factory=dict)
    #: values the last build took from the one before instead of decoding them
    reused: int = 0

    def __len__(self) -> int:
        return len(self.offsets) + len(self.groups)


def _copy_group(group: GroupMetadata) -> GroupMetadata:
    """A classic group as decoded, before offsets are attached: its own containers, so the build can
    attach offsets without touching the memo's or an earlier cache's copy."""
    return replace(group, members=[replace(m) for m in group.members], offsets={}, pending_offsets={})


class ReusingMaterializer(Materializer):
    """:class:`~offsetops.coordinator_core.materialize.Materializer` that takes an offset commit's or a
    classic group's decoded value from ``memo`` when its record (offset and value bytes) is unchanged,
    and leaves in ``memo`` what this build decoded."""

    def __init__(self, fold: PartitionFold, num_partitions: int, memo: SurvivorMemo):
        super().__init__(fold, num_partitions)
        same = memo.semantics == fold.semantics
        self._memo = memo
        self._was_offsets = memo.offsets if same else {}
        self._was_groups = memo.groups if same else {}
        self._offsets: dict[int, tuple[bytes, OffsetAndMetadata]] = {}
        self._groups: dict[int, tuple[bytes, GroupMetadata]] = {}
        self._reported = 0
        self._reused = 0

    def build(self) -> CoordinatorCache:
        cache = super().build()
        memo = self._memo
        memo.semantics, memo.offsets, memo.groups = self.fold.semantics, self._offsets, self._groups
        memo.reused = self._reused
        return cache

    def _error(self, kind: str, reason: str, entry: Entry) -> None:
        self._reported += 1
        super()._error(kind, reason, entry)

    def _offset(self, entry: Entry) -> OffsetAndMetadata | None:
        return self._reused_or(entry, super()._offset)

    def _native_value(self, entry: Entry) -> OffsetAndMetadata | None:
        return self._reused_or(entry, super()._native_value)

    def _reused_or(
        self, entry: Entry, decode: Callable[[Entry], OffsetAndMetadata | None]
    ) -> OffsetAndMetadata | None:
        """The offset commit's value from the memo when its record is unchanged, else ``decode``d (both
        the native and the general reading go through here, so either one's result is kept)."""
        off, value = entry[0], entry[3]
        hit = self._was_offsets.get(off)
        if hit is not None and hit[0] == value and off not in self.fold.invalid_values:
            self._offsets[off] = hit
            self._reused += 1
            return hit[1]
        om = decode(entry)
        if om is not None and value is not None:
            self._offsets[off] = (value, om)
        return om

    def _group(self, group_id: str, entry: Entry) -> None:
        off, value = entry[0], entry[3]
        hit = self._was_groups.get(off)
        if hit is not None and hit[0] == value and hit[1].group_id == group_id:
            self.groups[group_id] = _copy_group(hit[1])
            self._groups[off] = hit
            self._reused += 1
            return
        reported = self._reported
        super()._group(group_id, entry)
        made = self.groups.get(group_id)
        if self._reported == reported and made is not None and value is not None:
            self._groups[off] = (value, _copy_group(made))
