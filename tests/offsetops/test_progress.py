"""Progress shows on a terminal only: a real pseudo-terminal gets the line, a pipe gets nothing."""

from __future__ import annotations

import io
import os
import pty
import select

from offsetops.progress import Progress


def test_progress_on_a_tty_and_cleared_at_the_end():
    master, slave = pty.openpty()
    try:
        with (
            os.fdopen(slave, "w", closefd=False) as tty,
            Progress("reading", total=2, unit="partitions", stream=tty) as p,
        ):
            assert p.enabled
            p.advance(1, 5_000_000)
            p.advance(1, 5_000_000)
        chunks = []
        while select.select([master], [], [], 0.5)[0]:  # read until the terminal has nothing more
            chunks.append(os.read(master, 65536))
        data = b"".join(chunks).decode()
    finally:
        os.close(master)
        os.close(slave)
    assert "reading: 2/2 partitions, 10.0 MB" in data
    assert data.endswith("\r")  # the line is blanked out when the work ends


def test_progress_is_silent_on_a_pipe():
    buf = io.StringIO()
    with Progress("reading", total=3, stream=buf) as p:
        assert not p.enabled
        for _ in range(3):
            p.advance(1, 10)
    assert buf.getvalue() == ""
    assert p.done == 3 and p.bytes == 30
