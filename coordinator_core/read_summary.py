"""What one run read of ``__consumer_offsets``: the bytes, the partitions, and which went on from a saved
resume point (``coordinator_core.resume``), so every command can say what its answer cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from offsetops.coordinator_core.cache import CoordinatorCache

__all__ = ["ReadSummary"]

_NOT_ASKED = "not_requested"


@dataclass(frozen=True, slots=True)
class ReadSummary:
    """The bytes a run read (segment data, or record data fetched from a cluster), over how many
    partitions, how many resumed, and why the others were read from the start (reason -> partitions).
    ``resume_asked`` is False when no resume state was given (every partition reads from the start)."""

    bytes_read: int
    partitions: int
    resumed: int
    resume_asked: bool
    read_fresh: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, caches: Iterable[CoordinatorCache]) -> ReadSummary:
        return cls.tally((c.stats.bytes_read, c.stats.resumed, c.stats.resume_reason) for c in caches)

    @classmethod
    def tally(cls, reads: Iterable[tuple[int, bool, str | None]]) -> ReadSummary:
        """Of each partition's (bytes read, resumed, why not)."""
        rows = list(reads)
        asked = [r for r in rows if r[2] != _NOT_ASKED]
        fresh = Counter(reason or "" for _n, resumed, reason in asked if not resumed)
        return cls(
            bytes_read=sum(r[0] for r in rows),
            partitions=len(rows),
            resumed=sum(r[1] for r in rows),
            resume_asked=bool(asked),
            read_fresh=dict(sorted(fresh.items(), key=lambda kv: (-kv[1], kv[0]))),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "bytes_read": self.bytes_read,
            "partitions": self.partitions,
            "resumed": self.resumed,
            "read_fresh": dict(self.read_fresh) if self.resume_asked else None,
        }

    def sentence(self) -> str:
        """``read 10004429 bytes of 50 partitions (48 resumed; 2 from the start: no_state 2)``."""
        plural = "" if self.partitions == 1 else "s"
        text = f"read {self.bytes_read} bytes of {self.partitions} partition{plural}"
        if not self.resume_asked:
            return text
        why = ", ".join(f"{code} {n}" for code, n in self.read_fresh.items())
        fresh = self.partitions - self.resumed
        return text + f" ({self.resumed} resumed" + (f"; {fresh} from the start: {why})" if fresh else ")")
