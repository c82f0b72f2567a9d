"""Audit history: one JSON line per audit in ``<state dir>/audits.jsonl``.

Each line holds, per partition, what the next audit needs to judge progress: the first dirty offset
(the cleaner checkpoint after Kafka's reset rules), the size, and whether the partition was eligible.
Lines that cannot be parsed are skipped and counted, so one bad write never hides the rest.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.atomic import open_append
from offsetops.coordinator_core.untrusted import iter_lines

HISTORY_FILE = "audits.jsonl"


#: an audit line holds every partition of the log dir; longer lines are cut (and skipped as unreadable)
MAX_HISTORY_LINE = 16 << 20


@dataclass(frozen=True, slots=True)
class PartitionSnapshot:
    """What one audit recorded for one partition."""

    audited_at_ms: int
    partition: int
    first_dirty_offset: int
    size_bytes: int
    eligible: bool
    dirty_ratio: float
    log_end_offset: int

    @classmethod
    def from_json(cls, audited_at_ms: int, partition: int, d: dict[str, Any]) -> PartitionSnapshot:
        return cls(
            audited_at_ms=audited_at_ms,
            partition=partition,
            first_dirty_offset=int(d["first_dirty_offset"]),
            size_bytes=int(d["size_bytes"]),
            eligible=bool(d["eligible"]),
            dirty_ratio=float(d.get("dirty_ratio", 0.0)),
            log_end_offset=int(d.get("log_end_offset", -1)),
        )

    def to_json(self) -> dict[str, Any]:
        """The per-partition part of an ``audits.jsonl`` line (time and partition live outside it)."""
        return {
            "first_dirty_offset": self.first_dirty_offset,
            "size_bytes": self.size_bytes,
            "eligible": self.eligible,
            "dirty_ratio": self.dirty_ratio,
            "log_end_offset": self.log_end_offset,
        }


@dataclass(frozen=True, slots=True)
class Progress:
    """What history says about one partition, relative to the audit being made now."""

    previous: PartitionSnapshot | None
    #: bytes per hour since the previous audit (None without one or when no time passed)
    growth_bytes_per_hour: float | None
    #: the first dirty offset moved forward since the previous audit
    checkpoint_advanced: bool | None
    #: how long the first dirty offset has stayed where it is now while the partition was eligible
    #: in every audit of that stretch (0 when it just moved, None without history)
    stalled_for_ms: int | None
    audits_considered: int


@dataclass
class AuditHistory:
    """The ``audits.jsonl`` of one state dir; entries are filtered by log dir."""

    state_dir: Path
    entries: list[dict[str, Any]] = field(default_factory=list)
    skipped_lines: int = 0

    @property
    def path(self) -> Path:
        return self.state_dir / HISTORY_FILE

    @classmethod
    def load(cls, state_dir: str | os.PathLike[str]) -> AuditHistory:
        hist = cls(Path(state_dir))
        if not os.path.lexists(hist.path):
            return hist
        for line in iter_lines(hist.path, kind="history", max_line=MAX_HISTORY_LINE):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
                int(doc["audited_at_ms"])
                dict(doc["partitions"])
            except (ValueError, KeyError, TypeError):
                hist.skipped_lines += 1
                continue
            hist.entries.append(doc)
        hist.entries.sort(key=lambda d: int(d["audited_at_ms"]))
        return hist

    def snapshots(self, log_dir: str, partition: int, before_ms: int) -> list[PartitionSnapshot]:
        """Earlier snapshots of one partition of one log dir, oldest first, strictly before ``before_ms``."""
        out = []
        for doc in self.entries:
            at = int(doc["audited_at_ms"])
            if doc.get("log_dir") != log_dir or at >= before_ms:
                continue
            p = doc["partitions"].get(str(partition))
            if p is None:
                continue
            try:
                out.append(PartitionSnapshot.from_json(at, partition, p))
            except (KeyError, TypeError, ValueError):
                continue
        return out

    def progress(self, log_dir: str, current: PartitionSnapshot) -> Progress:
        """Growth and checkpoint progress of ``current`` against the earlier audits of its partition."""
        earlier = self.snapshots(log_dir, current.partition, current.audited_at_ms)
        if not earlier:
            return Progress(None, None, None, None, 0)
        prev = earlier[-1]
        hours = (current.audited_at_ms - prev.audited_at_ms) / 3_600_000
        growth = (current.size_bytes - prev.size_bytes) / hours if hours > 0 else None
        advanced = current.first_dirty_offset > prev.first_dirty_offset
        stalled_since = current.audited_at_ms
        if current.eligible:
            for snap in reversed(earlier):
                if snap.first_dirty_offset != current.first_dirty_offset or not snap.eligible:
                    break
                stalled_since = snap.audited_at_ms
        return Progress(prev, growth, advanced, current.audited_at_ms - stalled_since, len(earlier))

    def append(self, doc: dict[str, Any]) -> None:
        """Append one audit line (the state dir is created when missing)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        line = json.dumps(doc, separators=(",", ":"), sort_keys=True, allow_nan=False)
        with open_append(self.path) as fh:
            fh.write(line.encode("utf-8") + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.entries.append(doc)
