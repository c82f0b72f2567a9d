"""The one atomic file write: a reader sees the old file or the new one, never half of either.

A temporary file in the same directory (unique, so concurrent writers never share it), fsync, then
``os.replace`` over the target and an fsync of the directory, so the rename survives a crash too (as
the broker's ``Utils.atomicMoveWithFallback`` does for its checkpoint files). Beside it, the one
inter-process lock (``file_lock``) for files that several processes read, change and write back.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def _fsync_dir(path: Path) -> None:
    # Some filesystems refuse to open or fsync a directory; the rename is then as durable as they allow.
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Replace ``path`` with ``text`` (UTF-8), creating its directory when needed."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)
    return target


def write_json_atomic(
    path: str | os.PathLike[str],
    doc: Any,
    *,
    indent: int = 1,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
) -> Path:
    """Replace ``path`` with ``doc`` as JSON and a final newline."""
    return write_text_atomic(
        path, json.dumps(doc, indent=indent, sort_keys=sort_keys, default=default) + "\n"
    )


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str], *, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path`` (created when needed) for the block; yields True.

    With ``wait=False`` it yields False at once when another process holds the lock. The lock is
    advisory and per host: every writer of the guarded file must take it.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "a+b") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
