"""A resume state store in memory: what ``StateStore`` writes to a file, kept for the life of one process
(a following exporter given no ``--state DIR``): no file, no fsync, nothing left behind. Same interface
as :class:`~offsetops.coordinator_core.resume.store.StateStore`. The state never leaves the process, so
it is kept as the fold's tables copied (no encoding to check again at every read: an update of a
following exporter costs a copy of the partition's survivors, not an encode and a decode of them) and
the meta as its JSON reads back."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.resume.codec import StateTables
from offsetops.coordinator_core.resume.point import Refusal
from offsetops.coordinator_core.survivor_memo import SurvivorMemo

__all__ = ["MemoryStateStore"]


class MemoryStateStore:
    """Each partition's state: its meta (as read back from JSON) and a copy of the fold's tables (so a
    later fold never shares the saved containers)."""

    def __init__(self) -> None:
        self._states: dict[tuple[str, int], tuple[dict[str, Any], StateTables]] = {}
        self._locks: dict[tuple[str, int], threading.Lock] = {}
        self._survivors: dict[tuple[str, int], SurvivorMemo] = {}
        self._guard = threading.Lock()

    def path(self, topic: str, partition: int) -> Path:
        """Where messages say the state is (no file: it lives in this process)."""
        return Path("<memory>") / f"{topic}-{partition}.state"

    @contextlib.contextmanager
    def lock(self, topic: str, partition: int) -> Iterator[bool]:
        """Hold the partition's lock for the block (True), or False at once when another thread holds it."""
        with self._guard:
            lock = self._locks.setdefault((topic, partition), threading.Lock())
        held = lock.acquire(blocking=False)
        try:
            yield held
        finally:
            if held:
                lock.release()

    def read(self, topic: str, partition: int) -> tuple[dict[str, Any], StateTables] | Refusal:
        """The saved ``(meta, tables)``, or why there is none to use (the caller copies the tables into
        the fold it restores, and never changes them)."""
        saved = self._states.get((topic, partition))
        if saved is None:
            return Refusal("no_state", f"no state for {topic}-{partition} in this process yet")
        return saved

    def write(self, topic: str, partition: int, meta: dict[str, Any], tables: StateTables) -> Path:
        """Replace the partition's state with ``meta`` as JSON reads it back and a copy of ``tables`` (the
        fold's own containers: it may go on after this)."""
        copy = StateTables(
            latest=dict(tables.latest),
            open_txns={pid: dict(pending) for pid, pending in tables.open_txns.items()},
            created=dict(tables.created),
            tomb_max=dict(tables.tomb_max),
            invalid_values=frozenset(tables.invalid_values),
        )
        self._states[(topic, partition)] = (json.loads(json.dumps(meta)), copy)
        return self.path(topic, partition)

    def survivors(self, topic: str, partition: int) -> SurvivorMemo:
        """The partition's survivors as its last load decoded them, for the next load to reuse (one per
        partition, holding the current survivors only; use it under the partition's lock)."""
        with self._guard:
            return self._survivors.setdefault((topic, partition), SurvivorMemo())

    def __len__(self) -> int:
        return len(self._states)
