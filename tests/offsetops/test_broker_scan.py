"""``offsetops broker-scan --every``: the sidecar keeps the scan fresh, replacing it atomically."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.shared import require_real_kafka


def test_the_sidecar_loop_rewrites_the_scan_and_survives_a_bad_round(tmp_path: Path) -> None:
    logdir = tmp_path / "kafka"
    shutil.copytree(require_real_kafka() / "DanielMorales9__kafkafun", logdir)
    out = tmp_path / "scans"
    cmd = [
        sys.executable,
        "-m",
        "offsetops.cli",
        "broker-scan",
        f"--log-dir={logdir}",
        f"--out={out}",
        "--every=1",
    ]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        scan = out / "broker-0.json"
        seen: set[int] = set()
        deadline = time.monotonic() + 60
        while len(seen) < 2 and time.monotonic() < deadline:
            if scan.exists():
                seen.add(json.loads(scan.read_text())["scanned_at_ms"])  # never half a file
            time.sleep(0.2)
        assert len(seen) >= 2, "the sidecar did not write a second scan within 60 s"
        assert proc.poll() is None
        # the log dir vanishes (a volume unmounted): the round fails, the loop goes on
        shutil.rmtree(logdir)
        time.sleep(2.5)
        assert proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "broker 0: 10 partitions scanned" in err
    assert f"{logdir}: no such file or directory" in err
