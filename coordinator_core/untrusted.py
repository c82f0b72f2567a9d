"""The one way offsetops opens a file it reads: checked before a byte is read.

Every input file is untrusted, whoever put it there. It is opened without following a final symbolic
link (``O_NOFOLLOW``: a link planted at ``broker-0.json`` or ``server.properties`` is refused, not
followed to ``/dev/zero`` or ``/etc/shadow``) and without blocking (``O_NONBLOCK``: a FIFO cannot hang
the open), then ``fstat`` of the open descriptor (not of the name, which could be swapped in between)
must show a regular file within the size limit of its kind. Anything else is one
:class:`UntrustedFileError` naming the file and the reason; the caller reports it and goes on with the
other inputs. The limits are stated per kind in :data:`MAX_BYTES` (docs/operations.md lists them).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

__all__ = [
    "MAX_BYTES",
    "UntrustedFileError",
    "iter_lines",
    "open_regular_file",
    "read_regular_file",
    "read_regular_text",
]

_KIB, _MIB, _GIB = 1 << 10, 1 << 20, 1 << 30

#: the largest file of each kind offsetops reads (bytes); a larger one is refused before it is read
MAX_BYTES: dict[str, int] = {
    "broker scan": 64 * _MIB,  # what the collector writes stays below it (collect.write_broker_scan)
    "client config": 1 * _MIB,
    "properties": 1 * _MIB,  # server.properties, meta.properties
    "clock": 64 * _KIB,  # offsetops-clock.json
    "checkpoint": 64 * _MIB,  # replication-offset-checkpoint & co.: one line per partition of the broker
    "broker log": 4 * _GIB,  # server.log / log-cleaner.log, read line by line (never whole)
    "state": 64 * _MIB,  # journals, alert state, outbox
    "resume state": 2 * _GIB,  # --state DIR: one partition's fold (resume.codec.MAX_STATE_BYTES)
    "report": 64 * _MIB,  # JSON reports and pages offsetops wrote and reads back
    "history": 1 * _GIB,  # audits.jsonl, read line by line
    "segment": 1 << 62,  # .log segments are mapped, never read whole; any regular file size
    "index": 64 * _MIB,  # a segment's .timeindex / .index
    "ground truth": 256 * _MIB,  # a simulated log dir's ground-truth file
    "secret": 64 * _KIB,  # a token or password mounted as a file
}
#: a line of a line-by-line reader longer than this is cut there (the rest of it is skipped)
MAX_LINE_BYTES = 64 * _KIB

_FILE_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}


class UntrustedFileError(OSError):
    """A file that is not read: not a regular file, a symbolic link, too large, or unreadable."""

    def __init__(self, path: str | os.PathLike[str], kind: str, reason: str) -> None:
        super().__init__(f"{os.fspath(path)}: {kind} {reason}")
        self.path, self.kind, self.reason = os.fspath(path), kind, reason

    def __str__(self) -> str:
        return str(self.args[0])


def _limit(kind: str, max_bytes: int | None) -> int:
    if max_bytes is not None:
        return max_bytes
    try:
        return MAX_BYTES[kind]
    except KeyError:
        raise ValueError(f"unknown file kind {kind!r}; known: {', '.join(MAX_BYTES)}") from None


def _open_fd(path: str | os.PathLike[str], kind: str, limit: int, follow: bool = False) -> tuple[int, int]:
    """An fd on ``path`` (a regular file within ``limit`` bytes) and its size; UntrustedFileError else."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise  # absent: callers tell a missing file (often normal) from a refused one
        if exc.errno == errno.ELOOP:
            raise UntrustedFileError(
                path, kind, "is a symbolic link (not followed; name the file itself)"
            ) from None
        raise UntrustedFileError(path, kind, f"cannot be opened: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = _FILE_KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise UntrustedFileError(path, kind, f"is {what}, not a regular file")
        if st.st_size > limit:
            raise UntrustedFileError(
                path, kind, f"is {st.st_size} bytes, above the limit of {limit} bytes for a {kind}"
            )
        # the open did not block; reads of a regular file never do, so blocking mode is restored
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def open_regular_file(
    path: str | os.PathLike[str],
    *,
    kind: str,
    max_bytes: int | None = None,
    follow_symlinks: bool = False,
) -> BinaryIO:
    """``path`` opened for binary reading once it is checked (see the module docstring); use it in a
    ``with`` block, as ``open``. ``follow_symlinks`` is for segment files only: the broker's
    ``LogLoader`` follows a symlinked segment, and the log dir listing reports a dangling one; what the
    link leads to must still be a regular file."""
    fd, _ = _open_fd(path, kind, _limit(kind, max_bytes), follow_symlinks)
    return os.fdopen(fd, "rb")


def read_regular_file(path: str | os.PathLike[str], *, kind: str, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path``, a regular file of at most ``max_bytes`` (default: the kind's limit).

    A file that grows past the limit while it is read is refused too: never more than the limit plus
    one byte is read."""
    limit = _limit(kind, max_bytes)
    fd, _ = _open_fd(path, kind, limit)
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise UntrustedFileError(path, kind, f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise UntrustedFileError(path, kind, f"grew above the limit of {limit} bytes for a {kind} while read")
    return data


def read_regular_text(path: str | os.PathLike[str], *, kind: str, max_bytes: int | None = None) -> str:
    """:func:`read_regular_file` decoded as UTF-8; undecodable bytes are an UntrustedFileError."""
    data = read_regular_file(path, kind=kind, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UntrustedFileError(path, kind, f"is not UTF-8 (byte {exc.start})") from None


def iter_lines(
    path: str | os.PathLike[str],
    *,
    kind: str,
    max_bytes: int | None = None,
    max_line: int = MAX_LINE_BYTES,
) -> Iterator[str]:
    """The lines of ``path`` (UTF-8, undecodable bytes replaced, with their line ends), one at a time:
    at most ``max_bytes`` are read in all and ``max_line`` bytes kept of any line."""
    limit = _limit(kind, max_bytes)
    with open_regular_file(path, kind=kind, max_bytes=limit) as fh:
        total = 0
        while True:
            line = fh.readline(max_line)
            if not line:
                return
            total += len(line)
            if not line.endswith(b"\n") and len(line) == max_line:
                # skip the rest of an over-long line without keeping it
                while True:
                    rest = fh.readline(max_line)
                    total += len(rest)
                    if not rest or rest.endswith(b"\n"):
                        break
            if total > limit:
                raise UntrustedFileError(path, kind, f"grew above the limit of {limit} bytes while read")
            yield line.decode("utf-8", errors="replace")
