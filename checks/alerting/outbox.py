"""The outbox: every Slack message is queued here first and removed once Slack has accepted it.

A transactional outbox: a message is appended (one ``O_APPEND`` write, fsync'd) before any network
call, so a crash, a dead Slack or a spent time budget never loses it, and the next evaluation sends
what is pending first, in order. Entries carry an ``id``; a delivered entry is removed by rewriting
the file atomically. Two locks (``flock`` on sibling files) keep concurrent sensors apart:

* ``<outbox>.lock`` guards short read-modify-write sections (append, rewrite);
* ``<outbox>.flush.lock`` is held by the one process delivering, for its whole (time-bounded)
  delivery; another process finding it taken leaves delivery to it, so no entry goes out twice.

When no Slack token is configured the outbox is where the messages stay, for a person to read. It is
kept to what is still true (:meth:`Outbox.compact_unsent`): per alert only the newest message, nothing
for an alert that has since resolved, and at most a bounded number, so that a token added months later
pages on-call with the conditions that hold, not with the whole history.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.atomic import file_lock, open_append, write_text_atomic
from offsetops.coordinator_core.untrusted import read_regular_text

log = logging.getLogger(__name__)


class Outbox:
    """Pending Slack messages, one JSON object per line, oldest first."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._flush_lock_path = self.path.with_name(self.path.name + ".flush.lock")

    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with file_lock(self._lock_path):
            yield

    @contextlib.contextmanager
    def delivering(self) -> Iterator[bool]:
        """Yield True when this process may deliver (nobody else is), False when another one is."""
        with file_lock(self._flush_lock_path, wait=False) as mine:
            yield mine

    def append(self, entry: dict[str, Any]) -> None:
        """Queue ``entry`` durably (it must carry an ``id``)."""
        data = (json.dumps(entry, sort_keys=True, default=str, allow_nan=False) + "\n").encode("utf-8")
        with self._locked(), open_append(self.path) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())

    def pending(self) -> list[dict[str, Any]]:
        """The queued entries, oldest first; a line that is not JSON is logged and kept in the file."""
        try:
            raw = read_regular_text(self.path, kind="state")
        except FileNotFoundError:
            return []
        out = []
        for number, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                log.warning("outbox %s line %d is not JSON; left in place", self.path, number)
                continue
            if isinstance(entry, dict):
                out.append(entry)
        return out

    def update(self, entry_id: str, changes: dict[str, Any] | None) -> None:
        """Rewrite the file with entry ``entry_id`` changed (``changes``) or removed (``None``)."""
        with self._locked():
            try:
                lines = read_regular_text(self.path, kind="state").splitlines()
            except FileNotFoundError:
                return
            kept = []
            for line in lines:
                try:
                    entry = json.loads(line)
                except ValueError:
                    kept.append(line)  # never drop what we cannot read
                    continue
                if isinstance(entry, dict) and entry.get("id") == entry_id:
                    if changes is None:
                        continue
                    line = json.dumps({**entry, **changes}, sort_keys=True, default=str, allow_nan=False)
                kept.append(line)
            self._write(kept)

    def _write(self, lines: list[str]) -> None:
        write_text_atomic(self.path, "".join(line + "\n" for line in lines))

    def compact_unsent(self, max_entries: int | None = None) -> int:
        """Drop messages queued while no token was configured that are no longer worth sending.

        Only never-attempted ``missing_token`` entries are touched: per alert key the newest one is
        kept, none where the newest is a recovery (the condition cleared while Slack was off), and at
        most ``max_entries`` of them (the newest). Returns how many were dropped.
        """
        with self._locked():
            try:
                lines = read_regular_text(self.path, kind="state").splitlines()
            except FileNotFoundError:
                return 0
            parsed: list[dict[str, Any] | None] = []
            for line in lines:
                try:
                    entry = json.loads(line)
                except ValueError:
                    entry = None
                parsed.append(entry if isinstance(entry, dict) else None)
            unsent = [
                i
                for i, e in enumerate(parsed)
                if e is not None and e.get("error") == "missing_token" and not e.get("attempts")
            ]
            newest: dict[str, int] = {}
            for i in unsent:
                newest[str(parsed[i].get("key"))] = i  # type: ignore[union-attr]
            keep = [i for i in newest.values() if parsed[i].get("kind") != "recovery"]  # type: ignore[union-attr]
            keep.sort()
            if max_entries is not None and len(keep) > max_entries:
                keep = keep[len(keep) - max_entries :]
            drop = set(unsent) - set(keep)
            if drop:
                self._write([line for i, line in enumerate(lines) if i not in drop])
            return len(drop)
