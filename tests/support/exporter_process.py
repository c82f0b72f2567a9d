"""The real ``offsetops exporter`` in a subprocess on a loopback port, for the exporter's tests."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120


def start_exporter(*args: str) -> tuple[subprocess.Popen[str], str]:
    """``offsetops exporter ARGS --listen 127.0.0.1:0``, once it serves: the process (stderr piped, the
    rest of it unread) and its /metrics URL. A process that does not come up is killed."""
    argv = [sys.executable, "-m", "offsetops.cli", "exporter", *args, "--listen", "127.0.0.1:0"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, cwd=REPO)
    line = ""
    deadline = time.monotonic() + START_TIMEOUT_S
    while "serving http://" not in line and time.monotonic() < deadline:
        line = proc.stderr.readline() if proc.stderr else ""
        if not line and proc.poll() is not None:
            break
    m = re.search(r"serving (http://127\.0\.0\.1:\d+/metrics)", line)
    if not m:
        proc.kill()
        proc.wait(timeout=30)
        raise AssertionError(f"exporter did not start: {line!r}")
    return proc, m.group(1)
