"""A Spark standalone cluster on loopback from the installed pyspark: one master, two workers.

Started with ``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker`` (what
``$SPARK_HOME/sbin/start-master.sh`` runs, without its pid files in ``/tmp``), bound to 127.0.0.1 on
free ports, one core and a small heap each. The executors get a Python that has offsetops'
third-party dependencies but not offsetops itself, so the code can only reach them the documented
way (``--py-files``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.deploy.conftest import Service
from tests.support.broker import free_port

WORKERS = 2
WORKER_MEMORY = "1g"
START_TIMEOUT_S = 120


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass(frozen=True)
class SparkCluster:
    master_url: str
    ui_url: str
    executor_python: Path
    root: Path

    def state(self) -> dict:
        with urllib.request.urlopen(self.ui_url + "/json/", timeout=10) as r:
            return json.loads(r.read())


def executor_python(root: Path) -> Path:
    """A venv whose site-packages point at this venv's, without running its ``.pth`` files.

    A directory listed in a ``.pth`` file is appended to ``sys.path`` but its own ``.pth`` files are not
    processed, so the editable install of offsetops (an import hook in a ``.pth``) stays invisible:
    pyarrow, the codecs and pyspark import, ``coordinator_core`` does not.
    """
    base = getattr(sys, "_base_executable", sys.executable)
    venv = root / "executor-venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    Path(site, "offsetops-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python


def _wait_for_workers(ui_url: str, services: list[Service]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    alive = 0
    while time.monotonic() < deadline:
        for s in services:
            if not s.alive():
                raise RuntimeError(f"{s.name} exited ({s.proc.returncode}):\n{s.tail()}")
        try:
            with urllib.request.urlopen(ui_url + "/json/", timeout=5) as r:
                workers = json.loads(r.read()).get("workers", [])
            alive = sum(w.get("state") == "ALIVE" for w in workers)
            if alive >= WORKERS:
                return
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError(
        f"{alive} of {WORKERS} workers registered within {START_TIMEOUT_S} s:\n"
        + "\n".join(s.tail(20) for s in services)
    )


def run_cluster(root: Path) -> Iterator[SparkCluster]:
    """Start the master and the workers, yield the cluster, stop every process we started."""
    home = spark_home()
    spark_class = str(home / "bin" / "spark-class")
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_LOG_DIR": str(root / "logs"),
        "SPARK_WORKER_DIR": str(root / "work"),
    }
    python = executor_python(root)
    port, ui_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    services = [
        Service(
            "spark-master",
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui_port),
            ],
            env=env,
            cwd=root,
            log=root / "master.log",
        )
    ]
    try:
        for i in range(WORKERS):
            work = root / f"work-{i}"
            work.mkdir()
            services.append(
                Service(
                    f"spark-worker-{i}",
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(free_port()),
                        "--webui-port",
                        str(free_port()),
                        "--cores",
                        "1",
                        "--memory",
                        WORKER_MEMORY,
                        "--work-dir",
                        str(work),
                        master_url,
                    ],
                    env=env,
                    cwd=root,
                    log=root / f"worker-{i}.log",
                )
            )
        ui_url = f"http://127.0.0.1:{ui_port}"
        _wait_for_workers(ui_url, services)
        yield SparkCluster(master_url, ui_url, python, root)
    finally:
        for s in reversed(services):
            s.stop()
