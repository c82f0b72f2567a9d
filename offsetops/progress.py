"""Progress on long work, on a terminal only: one line on stderr, rewritten in place, cleared at the end.

Pipes, files, cron and CI see nothing, so JSON on stdout and logs stay clean.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

_MIN_INTERVAL_S = 0.2  # redraw at most five times a second


def is_terminal(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


class Progress:
    """``with Progress("reload", total=50, unit="partitions") as p: p.advance(1, nbytes)``."""

    def __init__(
        self,
        label: str,
        *,
        total: int | None = None,
        unit: str = "",
        stream: TextIO | None = None,
        enabled: bool = True,
    ):
        """``enabled=False`` keeps it quiet even on a terminal: a command that streams its output to the
        same terminal (``dump``) would have its lines overwritten."""
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and is_terminal(self.stream)
        self.done = 0
        self.bytes = 0
        self._started = time.monotonic()
        self._drawn = 0.0
        self._width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def advance(self, n: int = 1, nbytes: int = 0, *, what: str = "") -> None:
        self.done += n
        self.bytes += nbytes
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._drawn < _MIN_INTERVAL_S and (self.total is None or self.done < self.total):
            return
        self._drawn = now
        self._draw(what, now)

    def update(self, done: int, nbytes: int | None = None, *, what: str = "") -> None:
        """Set the absolute position (work measured by the caller, e.g. simulated minutes)."""
        self.advance(done - self.done, 0 if nbytes is None else nbytes - self.bytes, what=what)

    def line(self, what: str = "") -> str:
        elapsed = time.monotonic() - self._started
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        parts = [f"{self.label}: {count} {self.unit}".rstrip()]
        if self.bytes:
            parts.append(f"{self.bytes / 1e6:.1f} MB ({self.bytes / 1e6 / max(elapsed, 1e-9):.1f} MB/s)")
        parts.append(f"{elapsed:.1f} s")
        if what:
            parts.append(what)
        return ", ".join(parts)

    def _draw(self, what: str, now: float) -> None:
        text = self.line(what)[:120]
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
