"""Partition dirs built batch by batch as a partition leader writes them, for the resume tests: random
histories of commits, group metadata, tombstones and transactions, cut at any byte, rolled into
segments, and compacted the way the log cleaner does (superseded records removed, batch offsets kept)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from offsetops.coordinator_core.records import build_control_batch, build_record_batch
from offsetops.coordinator_core.sources.source import Source

from tests.coordinator_core.test_loader import gkey, gval, okey, oval

T0 = 1_700_000_000_000
TOPIC = "__consumer_offsets"
GROUPS = ("g0", "g1", "g2", "g3")

#: one step of a history: (kind, group index, partition, value)
OPS = st.lists(
    st.tuples(
        st.sampled_from(["commit", "commit", "commit", "meta", "gone", "untrack", "txn", "end"]),
        st.integers(0, len(GROUPS) - 1),
        st.integers(0, 2),
        st.integers(0, 1000),
    ),
    min_size=1,
    max_size=60,
)


@dataclass(frozen=True, slots=True)
class Batch:
    base: int
    last: int
    records: tuple[tuple[bytes, bytes | None], ...]  # empty for a control batch
    data: bytes
    plain: bool  # a non-transactional data batch (the cleaner may rewrite it)


@dataclass
class History:
    """Batches in log order, with leader epoch ``epoch`` for the ones appended next."""

    batches: list[Batch] = field(default_factory=list)
    next: int = 0
    epoch: int = 0
    open_pids: set[int] = field(default_factory=set)  # producers with a transaction in flight

    def data(self, records: list[tuple[bytes, bytes | None]], *, pid: int = -1) -> None:
        data = build_record_batch(
            [(k, v, T0 + self.next) for k, v in records], base_offset=self.next, producer_id=pid,
            producer_epoch=0 if pid >= 0 else -1, is_transactional=pid >= 0,
            partition_leader_epoch=self.epoch,
        )  # fmt: skip
        self._add(Batch(self.next, self.next + len(records) - 1, tuple(records), data, pid < 0))

    def marker(self, pid: int, commit: bool) -> None:
        data = build_control_batch(
            commit, base_offset=self.next, producer_id=pid, producer_epoch=0, coordinator_epoch=1,
            timestamp=T0 + self.next, partition_leader_epoch=self.epoch,
        )  # fmt: skip
        self._add(Batch(self.next, self.next, (), data, False))

    def _add(self, batch: Batch) -> None:
        self.batches.append(batch)
        self.next = batch.last + 1

    def play(self, ops: list[tuple[str, int, int, int]], *, transactions: bool = True) -> History:
        open_pids = self.open_pids
        for kind, gi, part, value in ops:
            group = GROUPS[gi]
            if kind == "commit":
                self.data([(okey(group, "t", part), oval(value)), (okey(group, "u", 0), oval(value + 1))])
            elif kind == "meta":
                self.data([(gkey(group), gval(value % 7 + 1, [(f"m{value}", ["t"])]))])
            elif kind == "gone":
                self.data([(gkey(group), None)])
            elif kind == "untrack":
                self.data([(okey(group, "t", part), None)])
            elif kind == "txn" and transactions:
                open_pids.add(100 + gi)
                self.data([(okey(group, "t", part), oval(value))], pid=100 + gi)
            elif kind == "end" and transactions and 100 + gi in open_pids:
                open_pids.discard(100 + gi)
                self.marker(100 + gi, value % 2 == 0)
        return self


Segment = tuple[int, list[Batch]]  # (base offset: the file's name, its batches)


def segments_of(batches: list[Batch], segment_bytes: int) -> list[Segment]:
    """Batches rolled into segments of about ``segment_bytes`` (a segment rolls before it would grow
    past it, as ``UnifiedLog.maybeRoll`` does)."""
    out: list[list[Batch]] = [[]]
    size = 0
    for b in batches:
        if out[-1] and size + len(b.data) > segment_bytes:
            out.append([])
            size = 0
        out[-1].append(b)
        size += len(b.data)
    return [(s[0].base, s) for s in out if s]


def write_partition(
    root: Path,
    segments: list[Segment],
    *,
    cut: int | None = None,
    epochs: list[tuple[int, int]] | None = None,
    cleaner_offset: int | None = None,
) -> Path:
    """The log dir ``root`` with partition 0 holding ``segments`` (the first ``cut`` bytes of their
    concatenation: a leader in the middle of an append), replacing whatever was there."""
    pdir = root / f"{TOPIC}-0"
    pdir.mkdir(parents=True, exist_ok=True)
    for old in pdir.glob("*.log"):
        old.unlink()
    left = cut
    for base, seg in segments:
        data = b"".join(b.data for b in seg)
        if left is not None:
            if left <= 0 and seg:
                break
            data, left = data[:left], left - len(data)
        (pdir / f"{base:020d}.log").write_bytes(data)
    lines = "".join(f"{e} {o}\n" for e, o in epochs or [(0, 0)])
    (pdir / "leader-epoch-checkpoint").write_text(f"0\n{len(epochs or [(0, 0)])}\n{lines}")
    if cleaner_offset is not None:
        (root / "cleaner-offset-checkpoint").write_text(f"0\n1\n{TOPIC} 0 {cleaner_offset}\n")
    return pdir


def compact(segments: list[Segment], *, merge_bytes: int) -> list[Segment]:
    """What the log cleaner leaves of every segment but the active one: neighbouring segments grouped
    while they fit in ``merge_bytes`` (``groupSegmentsBySize``), each group cleaned into one segment named
    after its first (empty when nothing survives): records superseded by a later record of the same key
    removed (tombstones kept), each batch's base and last offset kept, empty batches dropped."""
    last_of: dict[bytes, int] = {}
    for _base, seg in segments:
        for b in seg:
            for i, (key, _v) in enumerate(b.records):
                last_of[key] = b.base + i
    groups: list[list[Segment]] = []
    for base, seg in segments[:-1]:
        size = sum(len(b.data) for b in seg)
        if groups and sum(len(b.data) for _, s in groups[-1] for b in s) + size <= merge_bytes:
            groups[-1].append((base, seg))
        else:
            groups.append([(base, seg)])
    cleaned: list[Segment] = []
    for group in groups:
        kept = [_clean(b, last_of) for _, seg in group for b in seg]
        cleaned.append((group[0][0], [b for b in kept if b is not None]))
    return [*cleaned, segments[-1]]


def _clean(b: Batch, last_of: dict[bytes, int]) -> Batch | None:
    if not b.plain:
        return b
    keep = [(i, r) for i, r in enumerate(b.records) if last_of[r[0]] == b.base + i]
    if not keep:
        return None
    if len(keep) == len(b.records):
        return b
    # A magic 2 batch keeps its base and last offset (MemoryRecords.buildRetainedRecordsInto).
    data = build_record_batch(
        [(k, v, T0 + b.base + i) for i, (k, v) in keep], base_offset=b.base,
        offset_deltas=[i for i, _ in keep], last_offset_delta=b.last - b.base,
    )  # fmt: skip
    return Batch(b.base, b.last, tuple(r for _, r in keep), data, True)


def load(root: Path, state: Path | None, semantics: str = "java", **limits: Any):
    """Partition 0 of ``root`` as ``offsetops reload`` loads it (resumed from ``state`` when given)."""
    source = Source(log_dir=str(root), state_dir=None if state is None else str(state))
    return source.load_caches(semantics=semantics, num_partitions=4, **limits)[0]


_THIS_RUN = ("elapsed_ms", "bytes_read", "resumed", "resume_reason", "resume_detail", "state_error")


def view(cache, *, counters: bool = True) -> dict[str, Any]:
    """What a resumed read must give as a fresh one does: the groups (offsets, members, pending
    offsets), and with ``counters`` the load statistics, this run's own figures left out."""
    doc = cache.to_json()
    stats = doc.pop("stats")
    if counters:
        doc["stats"] = {k: v for k, v in stats.items() if k not in _THIS_RUN}
    doc["open_transactions"] = {pid: sorted(g) for pid, g in cache.open_transactions.items()}
    return doc
