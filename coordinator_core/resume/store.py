"""``--state DIR``: one resume state file per partition, written atomically, read as untrusted.

``DIR/<topic>-<partition>.state`` (mode 0640, :mod:`~offsetops.coordinator_core.atomic`), beside a
``.<topic>-<partition>.lock`` that a run holds from reading the state to writing the next one, so two
runs never interleave; a run that finds the lock held reads fresh and leaves the state alone.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.atomic import file_lock, write_bytes_atomic
from offsetops.coordinator_core.resume.codec import StateFormatError, StateTables, decode_state, encode_state
from offsetops.coordinator_core.resume.point import Refusal
from offsetops.coordinator_core.survivor_memo import SurvivorMemo
from offsetops.coordinator_core.untrusted import UntrustedFileError, read_regular_file

__all__ = ["StateStore"]

_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")  # Kafka's legal topic names (Topic.validate)


@dataclass(frozen=True, slots=True)
class StateStore:
    """The state files under one directory (``--state DIR`` / ``OFFSETOPS_RESUME_STATE_DIR``)."""

    directory: Path
    #: each partition's survivors as its last load in this process decoded them (``kept``), else None
    memos: dict[tuple[str, int], SurvivorMemo] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def at(cls, directory: str | os.PathLike[str]) -> StateStore:
        return cls(Path(directory))

    @classmethod
    def kept(cls, directory: str | os.PathLike[str]) -> StateStore:
        """The files under ``directory``, with each partition's decoded survivors kept in this process
        between its loads (a following exporter loads the same partitions again and again)."""
        return cls(Path(directory), {})

    def path(self, topic: str, partition: int) -> Path:
        """The state file of one partition (ValueError for a topic name Kafka would not accept)."""
        if not _TOPIC.fullmatch(topic) or topic in (".", ".."):
            raise ValueError(f"{topic[:60]!r} is not a Kafka topic name")
        return self.directory / f"{topic}-{partition}.state"

    @contextlib.contextmanager
    def lock(self, topic: str, partition: int) -> Iterator[bool]:
        """Hold the partition's lock for the block (True), or False at once when another run holds it."""
        name = self.path(topic, partition).name
        self.directory.mkdir(mode=0o750, parents=True, exist_ok=True)
        with file_lock(self.directory / f".{name}.lock", wait=False) as held:
            yield held

    def survivors(self, topic: str, partition: int) -> SurvivorMemo | None:
        """The partition's decoded survivors kept in this process (:meth:`kept`), else None: a run of
        its own decodes what it reads."""
        if self.memos is None:
            return None
        return self.memos.setdefault((topic, partition), SurvivorMemo())

    def read(self, topic: str, partition: int) -> tuple[dict[str, Any], StateTables] | Refusal:
        """The saved ``(meta, tables)``, or why there is none to use (a :class:`Refusal` naming the file)."""
        path = self.path(topic, partition)
        try:
            data = read_regular_file(path, kind="resume state")
        except FileNotFoundError:
            return Refusal("no_state", f"no state file {path} yet")
        except UntrustedFileError as exc:  # its message names the file already
            return Refusal("state_unreadable", str(exc))
        except OSError as exc:
            return Refusal("state_unreadable", f"{path}: {exc}")
        return decoded_or_refusal(data, path)

    def write(self, topic: str, partition: int, meta: dict[str, Any], tables: StateTables) -> Path:
        """Replace the partition's state (StateFormatError when it is over the size limit, OSError).

        Atomic but not fsynced: the state is a cache, and a file a crash left behind is refused by its
        checksum (a fresh read), never trusted."""
        return write_bytes_atomic(self.path(topic, partition), encode_state(meta, tables), durable=False)


def decoded_or_refusal(data: bytes, where: Path) -> tuple[dict[str, Any], StateTables] | Refusal:
    """Saved state bytes decoded, or the :class:`Refusal` naming ``where`` they came from and why they
    cannot be used (every store, on disk or in memory, judges its bytes the same way)."""
    try:
        return decode_state(data)
    except StateFormatError as exc:
        return Refusal(exc.code, f"{where}: {exc}")
