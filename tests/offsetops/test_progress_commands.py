"""Long commands show progress on a terminal (stderr a pseudo-terminal) and nothing on a pipe.

Each test runs the real ``offsetops`` command in a subprocess with stdout on a pipe, so the output
stays machine-readable, and stderr on a pty or a pipe."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from offsetops.coordinator_core.simulator import SimulationConfig, simulate

pytestmark = pytest.mark.slow  # a few subprocesses, each importing the CLI


def run_cli(*args: str, tty: bool) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` with stderr on a fresh pty when ``tty``."""
    cmd = [sys.executable, "-m", "offsetops.cli", *args]
    env = {**os.environ, "COLUMNS": "200"}
    if not tty:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        return proc.returncode, proc.stdout, proc.stderr
    master, slave = pty.openpty()
    # stdout goes to a file: a pipe nobody reads while the pty is drained would fill up and block.
    with tempfile.TemporaryFile() as stdout:
        try:
            proc = subprocess.Popen(cmd, stdout=stdout, stderr=slave, env=env)
        finally:
            os.close(slave)
        err = _drain(master, proc)
        stdout.seek(0)
        return proc.returncode, stdout.read().decode(), err


def _drain(master: int, proc: subprocess.Popen) -> str:
    """Everything written to the pty until the child exits (then the master is closed)."""
    try:
        chunks = []
        while True:
            ready = select.select([master], [], [], 0.2)[0]
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the child closed the pty
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        proc.wait(timeout=120)
        return b"".join(chunks).decode(errors="replace")
    finally:
        os.close(master)


@pytest.fixture(scope="module")
def small_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("progress") / "logdir"
    simulate(SimulationConfig(out_dir=out, groups=8, partitions=3, days=0.05, seed=5))
    return out


def _final(stderr: str) -> str:
    """The last progress line drawn (each redraw starts with a carriage return)."""
    drawn = [part.strip() for part in stderr.split("\r") if part.strip()]
    return drawn[-1] if drawn else ""


def test_audit_progress_counts_partitions_on_a_tty_and_is_silent_on_a_pipe(small_dir):
    code, out, err = run_cli("audit", str(small_dir), "--json", "--no-record", tty=True)
    assert code == 0
    assert re.search(r"auditing: 3/3 partitions, [\d.]+ MB", err), err
    assert err.endswith("\r")  # the line is blanked before the report
    assert out.lstrip().startswith("{")  # stdout stays one JSON document
    code, _out, err = run_cli("audit", str(small_dir), "--json", "--no-record", tty=False)
    assert code == 0 and "auditing" not in err


def test_dump_progress_counts_segments_and_bytes(small_dir):
    size = sum(p.stat().st_size for p in small_dir.glob("__consumer_offsets-*/*.log"))
    segments = len(list(small_dir.glob("__consumer_offsets-*/*.log")))
    code, out, err = run_cli("dump", str(small_dir), "--json", tty=True)
    assert code == 0
    last = _final(err)
    assert last.startswith(f"dumping: {segments}/{segments} segments, {size / 1e6:.1f} MB"), last
    assert out.count('"type": "batch"') > 0


def test_expire_plan_and_segment_execution_show_progress(small_dir, tmp_path):
    code, _out, err = run_cli(
        # the simulated log dir declares a 3.9 broker (legacy coordinator); the counts below are kip848's
        "expire", str(small_dir), "--retention-ms", "60000", "--now", "2023-11-16T00:00:00Z",
        "--coordinator", "kip848", "--execute", "--executor", "segment",
        "--journal-dir", str(tmp_path / "journal"), "--output-dir", str(tmp_path / "copy"), "--json",
        tty=True,
    )  # fmt: skip
    assert code == 0, err
    assert "reading: 3/3 partitions" in err
    applied = re.findall(r"applying via segment: (\d+)/(\d+) tombstones", err)
    assert applied, err
    done, total = map(int, applied[-1])
    assert done == total == 49  # 48 offsets and the group of the one idle group (see the dry run)


def test_simulate_progress_in_simulated_minutes(tmp_path):
    code, out, err = run_cli("simulate", str(tmp_path / "sim"), "--groups", "4", "--partitions", "2",
                             "--days", "0.02", tty=True)  # fmt: skip
    assert code == 0 and out.startswith("wrote ")
    assert _final(err).startswith("simulating: 28/28 simulated minutes"), err  # 0.02 d = 28.8 min
    code, _out, err = run_cli("simulate", str(tmp_path / "sim2"), "--groups", "4", "--partitions", "2",
                              "--days", "0.02", tty=False)  # fmt: skip
    assert code == 0 and err == ""
