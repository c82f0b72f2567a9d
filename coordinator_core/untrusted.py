"""Reading a file offsetops did not write: checked for kind and size before a byte is read.

A path from outside (a command line, a scans volume, a log dir) can name a FIFO (reading it blocks
until someone writes), a device (``/dev/zero`` never ends), a directory, or a file far bigger than
anything of its kind. :func:`read_regular_file` opens without blocking and without following a final
symbolic link, checks with ``fstat`` that it holds a regular file within the size stated for its kind,
and reads at most that much: anything else is one :class:`UntrustedFileError` naming the file (a file
that cannot be opened raises the ``OSError`` of ``open``, which names it too).
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["UntrustedFileError", "read_regular_file"]

_CHUNK = 1 << 20


class UntrustedFileError(OSError):
    """A file that is not a readable regular file within its size limit (``filename`` names it)."""


def _what(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_regular_file(path: str | os.PathLike[str], *, kind: str, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path`` (a ``kind`` such as "Kafka client properties"), at
    most ``max_bytes`` of them; else :class:`UntrustedFileError` saying which file and why."""
    name = os.fspath(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UntrustedFileError(
                errno.ELOOP, f"{kind}: a symbolic link (give the file it points to)", name
            ) from None
        raise  # FileNotFoundError, PermissionError...: as they are, naming the file
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedFileError(errno.EINVAL, f"{kind}: {_what(st.st_mode)}, not a regular file", name)
        if st.st_size > max_bytes:
            raise UntrustedFileError(
                errno.EFBIG, f"{kind}: {st.st_size:,} bytes, more than the {max_bytes:,} allowed", name
            )
        parts: list[bytes] = []
        size = 0
        while size <= max_bytes:  # the file may grow after fstat: never read past the limit
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise UntrustedFileError(errno.EFBIG, f"{kind}: grew past the {max_bytes:,} bytes allowed", name)
        return b"".join(parts)
    except UntrustedFileError:
        raise
    except OSError as exc:
        raise UntrustedFileError(exc.errno or errno.EIO, f"{kind}: {exc.strerror or exc}", name) from None
    finally:
        os.close(fd)
