"""The one atomic file write: a reader sees the old file or the new one, never half of either.

A temporary file in the same directory (unique, so concurrent writers never share it), fsync, then
``os.replace`` over the target and an fsync of the directory, so the rename survives a crash too (as
the broker's ``Utils.atomicMoveWithFallback`` does for its checkpoint files). Beside it, the one
append (``open_append``, for journals and logs of lines) and the one inter-process lock (``file_lock``)
for files that several processes read, change and write back.

The file-mode policy (docs/operations.md, "Files and permissions"): every file offsetops writes is
``0640`` (:data:`SHARED_FILE_MODE`), owned by the writing user and readable by its group, the one
group every offsetops process of a deployment shares (the charts' ``runAsGroup``/``fsGroup``), so the
Dagster runs read what the broker collectors write; others get nothing. The mode is set on the open
file, whatever the umask. No writer follows a symbolic link at its path: a replacement renames over the
link (the link is replaced, its target untouched), and an append refuses a link or a non-regular file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

#: the mode of every file offsetops writes: read-write for its user, read for the shared group
SHARED_FILE_MODE = 0o640


class UnsafeWriteError(OSError):
    """A path offsetops will not write through: a symbolic link or not a regular file."""


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (an fsync of the directory), where the filesystem allows."""
    # Some filesystems refuse to open or fsync a directory; the rename is then as durable as they allow.
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_text_atomic(path: str | os.PathLike[str], text: str, *, mode: int = SHARED_FILE_MODE) -> Path:
    """Replace ``path`` with ``text`` (UTF-8), creating its directory when needed."""
    return write_bytes_atomic(path, text.encode("utf-8"), mode=mode)


def write_bytes_atomic(
    path: str | os.PathLike[str], data: bytes, *, mode: int = SHARED_FILE_MODE, durable: bool = True
) -> Path:
    """Replace ``path`` with ``data`` (file mode ``mode``), creating its directory when needed. A symbolic
    link at ``path`` is replaced by the file; what it pointed at is never written. ``durable=False``
    skips the fsyncs, for a cache that can always be rebuilt (still atomic: old file or new one)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # here: most runs write nothing, and tempfile imports random (a seeded generator)

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(target.parent)
    return target


def write_json_atomic(
    path: str | os.PathLike[str],
    doc: Any,
    *,
    indent: int = 1,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
    mode: int = SHARED_FILE_MODE,
    nan_as_null: bool = False,
) -> Path:
    """Replace ``path`` with ``doc`` as standard JSON and a final newline. NaN or an infinity in ``doc``
    is a ValueError (JSON has no such numbers, and readers of other languages refuse them), or null
    with ``nan_as_null`` (for documents that carry third-party results, such as GX's observed values)."""
    if nan_as_null:
        doc = _finite(doc)
    text = json.dumps(doc, indent=indent, sort_keys=sort_keys, default=default, allow_nan=False)
    return write_text_atomic(path, text + "\n", mode=mode)


def _finite(doc: Any) -> Any:
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: _finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_finite(v) for v in doc]
    return doc


def _open_regular_for_write(path: Path, flags: int, mode: int) -> int:
    """An fd on ``path`` opened with ``flags`` without following a final symbolic link; UnsafeWriteError
    for a link, a FIFO, a device or a directory (a FIFO is opened without blocking, then refused)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeWriteError(
                f"{path}: is a symbolic link; offsetops does not write through one"
            ) from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader, opened for writing without blocking
            raise UnsafeWriteError(f"{path}: is a FIFO, not a regular file") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafeWriteError(f"{path}: is not a regular file; offsetops writes only regular files")
    if stat.S_IMODE(st.st_mode) != mode and st.st_uid == os.geteuid():
        os.fchmod(fd, mode)  # created under a umask, or left by an older writer
    os.set_blocking(fd, True)
    return fd


def open_append(
    path: str | os.PathLike[str], *, mode: int = SHARED_FILE_MODE, read: bool = False
) -> BinaryIO:
    """``path`` opened to append (created with ``mode``; ``read``: for reading too), refusing a symbolic
    link or a non-regular file at ``path`` (UnsafeWriteError). Use it in a ``with`` block."""
    flags = (os.O_RDWR if read else os.O_WRONLY) | os.O_APPEND | os.O_CREAT
    fd = _open_regular_for_write(Path(path), flags, mode)
    return os.fdopen(fd, "a+b" if read else "ab")


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str], *, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path`` (created when needed) for the block; yields True.

    With ``wait=False`` it yields False at once when another process holds the lock. The lock is
    advisory and per host: every writer of the guarded file must take it.
    """
    with open_append(path) as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
