"""Fixtures of the deployment tests: real servers on loopback, started once per module."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.postgres import PostgresServer, postgres_bin_dir, run_postgres

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def image_env() -> dict[str, str]:
    """The variables the image sets (``ENV KEY=VALUE ...`` of ``deploy/Dockerfile``, continuations joined)."""
    text = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            for word in shlex.split(line[4:]):
                key, sep, value = word.partition("=")
                assert sep, f"deploy/Dockerfile: ENV {word!r} is not KEY=VALUE"
                env[key] = value
    return env


def image_dagster_env() -> dict[str, str]:
    """The image's Dagster settings a run process reads (``DAGSTER_*`` but ``DAGSTER_HOME``)."""
    return {k: v for k, v in image_env().items() if k.startswith("DAGSTER_") and k != "DAGSTER_HOME"}


def java_available() -> bool:
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


def simulated_run_input(tmp_path_factory: pytest.TempPathFactory, name: str, partitions: int) -> Any:
    """A scratch dir with a small simulated log dir in ``logdir`` (12 groups, about an hour), what the
    Dagster runs of these tests read on local Spark; skips the test without Java."""
    if not java_available():
        pytest.skip("Java is needed for the runs' local Spark")
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    root = tmp_path_factory.mktemp(name)
    return simulate(
        SimulationConfig(out_dir=root / "logdir", groups=12, partitions=partitions, days=0.05, seed=5)
    )


class Service:
    """A server process we started (in its own process group), stopped with its children."""

    def __init__(self, name: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, log: Path):
        self.name, self.log = name, log
        self._log_file = log.open("wb")
        self.proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def tail(self, n: int = 60) -> str:
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(lines[-n:])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM our process group (the daemon's code servers too), then SIGKILL what is left."""
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        with contextlib.suppress(ProcessLookupError):  # children that outlived the leader
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._log_file.close()


def wait_http(url: str, service: Service, timeout: float) -> None:
    """Wait until ``url`` answers 200; fail with the service's log when it died or timed out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not service.alive():
            pytest.fail(f"{service.name} exited ({service.proc.returncode}):\n{service.tail()}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    pytest.fail(f"{service.name} did not answer {url} within {timeout:.0f} s:\n{service.tail()}")


def build_py_files(dest: Path) -> Path:
    """The ``--py-files`` zip, built exactly as docs/pipelines.md says (in a fresh interpreter)."""
    code = f"from offsetops.pipelines.session import package_zip; package_zip({str(dest)!r})"
    subprocess.run([str(VENV_BIN / "python"), "-c", code], cwd=REPO, check=True, timeout=60)
    return dest


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL server on 127.0.0.1 (Debian's postgresql; scripts/ensure_system_deps.sh)."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin")
    yield from run_postgres(bin_dir)
