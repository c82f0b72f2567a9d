"""A large ``__consumer_offsets`` partition log built fast, for live reads at a million offsets.

Large compressed batches keep the bytes and the broker's object count small while the offsets run
into the millions. The log holds what a real one holds: plain offset commits under every codec,
batches the log cleaner left with gaps (records removed, the last offset kept), offset deletions,
transactional commits settled by COMMIT or ABORT markers further on, and one transaction left open.
A batch is made to straddle every cut offset given, cycling through the kinds, so range reads that
begin inside each kind of batch are exercised.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from offsetops.coordinator_core.records import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    build_control_batch,
    build_record_batch,
)
from offsetops.coordinator_core.schema.keys import OffsetCommitKey, encode_key
from offsetops.coordinator_core.schema.values import OffsetCommitValue, encode_value

#: What straddles the cuts, in turn.
STRADDLING_KINDS = ("plain", "gapped", "transactional")
_CODECS = (GZIP, SNAPPY, LZ4, ZSTD)
_BASE_TIMESTAMP = 1_700_000_000_000


@dataclass(frozen=True, slots=True)
class BulkBatch:
    """One encoded batch of the log, at its base offset."""

    kind: str  # plain, gapped, transactional, control
    base_offset: int
    last_offset: int
    producer_id: int
    data: bytes


class _Records:
    """Offset-commit records drawn from a fixed pool of keys and values (encoding each is the slow part)."""

    def __init__(self, rng: random.Random, groups: int, values: int = 4096):
        self.rng = rng
        self.keys = [
            encode_key(OffsetCommitKey(f"bulk-group-{g}", f"topic-{t}", p))
            for g in range(groups)
            for t in range(4)
            for p in range(8)
        ]
        self.values = [
            encode_value(
                OffsetCommitValue(3, rng.randrange(1 << 40), rng.randrange(50), "", _BASE_TIMESTAMP + i)
            )
            for i in range(values)
        ]

    def draw(
        self, n: int, first_offset: int, tombstones: bool = True
    ) -> list[tuple[bytes, bytes | None, int]]:
        keys = self.rng.choices(self.keys, k=n)
        values: list[bytes | None] = list(self.rng.choices(self.values, k=n))
        if tombstones:
            for i in self.rng.sample(range(n), k=max(1, n // 500)):
                values[i] = None  # an offset deletion
        return [
            (k, v, _BASE_TIMESTAMP + first_offset + i)
            for i, (k, v) in enumerate(zip(keys, values, strict=True))
        ]


class BulkLog:
    """The batches of one partition, built in offset order from offset 0."""

    def __init__(self, seed: int, groups: int = 200):
        self.rng = random.Random(seed)
        self.records = _Records(self.rng, groups)
        self.batches: list[BulkBatch] = []
        self.offset = 0
        self._codec = 0
        self._open: dict[int, int] = {}  # producer id -> batches written in its open transaction

    def _next_codec(self) -> int:
        self._codec += 1
        return _CODECS[self._codec % len(_CODECS)]

    def _add(self, kind: str, producer_id: int, data: bytes, span: int) -> None:
        self.batches.append(BulkBatch(kind, self.offset, self.offset + span - 1, producer_id, data))
        self.offset += span

    def plain(self, n: int) -> None:
        recs = self.records.draw(n, self.offset)
        data = build_record_batch(recs, base_offset=self.offset, compression=self._next_codec())
        self._add("plain", -1, data, n)

    def gapped(self, n: int) -> None:
        """A batch the cleaner compacted: records at gapped deltas, the last offset kept past the last one."""
        deltas, d = [], 0
        for _ in range(n):
            deltas.append(d)
            d += self.rng.randint(1, 3)
        last = deltas[-1] + self.rng.randint(1, 4)
        recs = self.records.draw(n, self.offset)
        data = build_record_batch(
            recs,
            base_offset=self.offset,
            compression=self._next_codec(),
            offset_deltas=deltas,
            last_offset_delta=last,
        )
        self._add("gapped", -1, data, last + 1)

    def transactional(self, n: int, producer_id: int) -> None:
        recs = self.records.draw(n, self.offset, tombstones=False)
        data = build_record_batch(
            recs,
            base_offset=self.offset,
            compression=self._next_codec(),
            producer_id=producer_id,
            producer_epoch=0,
            base_sequence=0,  # the replay renumbers sequences per producer
            is_transactional=True,
        )
        self._add("transactional", producer_id, data, n)
        self._open[producer_id] = self._open.get(producer_id, 0) + 1

    def marker(self, producer_id: int, commit: bool) -> None:
        data = build_control_batch(
            commit,
            base_offset=self.offset,
            producer_id=producer_id,
            producer_epoch=0,
            coordinator_epoch=0,
            timestamp=_BASE_TIMESTAMP + self.offset,
        )
        self._add("control", producer_id, data, 1)
        self._open.pop(producer_id, None)

    def settle_some(self) -> None:
        """Close open transactions now and then, so markers land far from their records."""
        for pid in list(self._open):
            if self.rng.random() < 0.3:
                self.marker(pid, commit=self.rng.random() < 0.75)

    def straddle(self, kind: str, cut: int) -> None:
        """One batch of ``kind`` whose offsets run from below ``cut`` to past it."""
        need = cut - self.offset + 1 + self.rng.randint(1, 500)
        if kind == "plain":
            self.plain(need)
        elif kind == "gapped":
            self.gapped(max(2, need // 2 + 1))
        else:
            self.transactional(need, producer_id=9_000 + cut % 1000)


def bulk_partition(
    seed: int,
    offsets: int,
    cuts: Sequence[int] = (),
    *,
    batch_records: tuple[int, int] = (1500, 4000),
    producers: int = 4,
) -> list[BulkBatch]:
    """At least ``offsets`` offsets of one partition, a batch straddling each of ``cuts``, one
    transaction open and a compacted batch at the end."""
    log = BulkLog(seed)
    pending = sorted(c for c in cuts if c > 0)
    turn = 0
    lo, hi = batch_records
    while log.offset < offsets:
        if pending and pending[0] - log.offset <= hi:
            cut = pending.pop(0)
            if cut > log.offset:
                log.straddle(STRADDLING_KINDS[turn % len(STRADDLING_KINDS)], cut)
                turn += 1
                continue
        roll = log.rng.random()
        if roll < 0.55:
            log.plain(log.rng.randint(lo, hi))
        elif roll < 0.75:
            log.gapped(log.rng.randint(lo, hi) // 2)
        else:
            pid = 1_000 + log.rng.randrange(producers)
            log.transactional(log.rng.randint(lo // 2, hi // 2), producer_id=pid)
        log.settle_some()
    for pid in sorted(log._open)[:-1]:
        log.marker(pid, commit=True)
    if not log._open:
        log.transactional(lo, producer_id=1_000)  # one transaction stays open: pending_offsets
    log.gapped(lo // 2)  # a compacted tail: the last offset lies past the last record
    return log.batches


def straddling(batches: Sequence[BulkBatch], cut: int) -> BulkBatch | None:
    """The batch with offsets on both sides of ``cut`` (``base < cut <= last``), if one does."""
    return next((b for b in batches if b.base_offset < cut <= b.last_offset), None)
