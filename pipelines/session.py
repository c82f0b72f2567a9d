"""The SparkSession every pipeline job runs in: embedded ``local[*]`` by default, any master on request.

One small cluster: run the jobs on the embedded local Spark. A 500 GB offsets topic: pass the
cluster's master (``spark://``, ``yarn``, ``k8s://``) and a Hadoop-compatible input path, or submit
the same modules with ``spark-submit`` (the master then comes from ``spark-submit``).
"""

from __future__ import annotations

import io
import os
import sys
import threading
import zipfile
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path

from offsetops.coordinator_core.atomic import write_bytes_atomic
from offsetops.coordinator_core.settings import parse_pairs
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
DEFAULT_APP_NAME = "offsetops"

#: Settings the jobs rely on; a value the user set (``--conf``, ``spark-defaults.conf``) wins.
DEFAULT_CONF: dict[str, str] = {
    # Segment rows are up to segment.bytes (100 MiB) each: cut Arrow batches by size, not only by rows.
    "spark.sql.execution.arrow.maxBytesPerBatch": str(64 * 1024 * 1024),
    "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Many small segment files: one listing, not a distributed job per input path.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    "spark.sql.session.timeZone": "UTC",
}

#: Local masters run tasks inside the driver JVM, whose heap Spark defaults to 1 GiB. Each task holds
#: whole segment files (100 MiB each on __consumer_offsets) plus their Arrow copies, so two cores
#: already overflow it. The heap is a ceiling, not an allocation; set spark.driver.memory to override.
LOCAL_CONF: dict[str, str] = {
    "spark.driver.memory": "4g",
}

#: Extra settings for tests and benchmarks: no UI port, few shuffle partitions.
QUIET_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
}

#: What executors import: the namespace package's ``__init__`` and these two folders, laid out in the zip
#: as installed (``offsetops/coordinator_core/...``), never the CLI, Dagster or GX layers.
_PACKAGES = ("coordinator_core", "pipelines")


def default_conf(master: str, *, quiet: bool = False) -> dict[str, str]:
    """The settings offsetops asks for on ``master``; a user's own settings take precedence."""
    wanted = {**DEFAULT_CONF, **(QUIET_CONF if quiet else {})}
    if master.startswith("local"):
        wanted.update(LOCAL_CONF)
    return wanted


def build_session(
    master: str | None = None,
    *,
    app_name: str = DEFAULT_APP_NAME,
    conf: Mapping[str, str] | None = None,
    quiet: bool = False,
    ship_code: bool | None = None,
) -> SparkSession:
    """Get or create the SparkSession for a job.

    ``master`` None keeps the master ``spark-submit`` (or ``spark-defaults.conf``) chose, and falls back
    to ``local[*]`` when there is none. ``quiet`` turns the UI and console progress off (tests).
    ``ship_code`` zips ``coordinator_core`` and ``pipelines`` and adds them with ``addPyFile`` so that
    executors on a cluster can import them; by default it is on for any non-local master.
    """
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        # Under spark-submit its settings (--master, --conf, spark-defaults.conf) live in the JVM that
        # launched us; SparkConf() only sees them once the gateway is up. Without this, a job submitted
        # to a cluster would silently fall back to local[*] inside the driver.
        SparkContext._ensure_initialized()
    defaults = SparkConf()
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not defaults.contains("spark.master"):
        builder = builder.master(os.environ.get("OFFSETOPS_SPARK_MASTER", DEFAULT_MASTER))
    chosen = (
        master
        or defaults.get("spark.master", None)
        or os.environ.get("OFFSETOPS_SPARK_MASTER", DEFAULT_MASTER)
    )
    for key, value in default_conf(chosen, quiet=quiet).items():
        if not defaults.contains(key):
            builder = builder.config(key, value)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    if chosen.startswith("local"):
        # Local Python workers must run this interpreter (its venv has pyarrow and our packages); on a
        # cluster PYSPARK_PYTHON / spark.pyspark.python is the operator's choice.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    effective = str(spark.sparkContext.master)
    if ship_code is None:
        ship_code = not effective.startswith("local")
    if ship_code:
        ship_packages(spark)
    return spark


class SessionStart:
    """A SparkSession being built on a thread of its own, so the JVM starts while the driver does work that
    needs no Spark. :meth:`wait` gives what the build gave, its error included, to whoever needs the session.
    """

    THREAD_NAME = "offsetops-spark-start"

    def __init__(self, build: Callable[[], SparkSession]) -> None:
        self._build = build
        self._future: Future[SparkSession] = Future()
        self._waited = False
        self._thread = threading.Thread(target=self._run, name=self.THREAD_NAME, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._future.set_result(self._build())
        except BaseException as exc:  # handed to the caller of wait(), who reports it
            self._future.set_exception(exc)

    def wait(self) -> SparkSession:
        """The session once built; raises what the build raised."""
        self._waited = True
        return self._future.result()

    def join(self) -> BaseException | None:
        """Wait for the thread to end; the build's error if it failed and no :meth:`wait` raised it."""
        self._thread.join()
        return None if self._waited else self._future.exception()


def _sources() -> dict[str, bytes]:
    """``offsetops/__init__.py`` and every ``.py`` of ``_PACKAGES``, as the running interpreter imports them.

    From an install or a checkout they are files; in a driver started with ``--py-files offsetops.zip``
    they are that zip's entries, shipped again as they are (the executors run the driver's code).
    """
    import importlib

    out: dict[str, bytes] = {}
    for name in ("offsetops", *(f"offsetops.{p}" for p in _PACKAGES)):
        init = Path(importlib.import_module(name).__file__ or "")
        arc = name.replace(".", "/")
        archive = next((a for a in init.parents if a.is_file()), None)
        if archive is not None:
            with zipfile.ZipFile(archive) as src:
                for entry in src.namelist():
                    inside = entry.startswith(f"{arc}/") and entry.endswith(".py")
                    if inside and (name != "offsetops" or entry == f"{arc}/__init__.py"):
                        out[entry] = src.read(entry)
            continue
        files = [init] if name == "offsetops" else sorted(init.parent.rglob("*.py"))
        for path in files:
            out[f"{arc}/{path.relative_to(init.parent).as_posix()}"] = path.read_bytes()
    return out


def package_zip(dest: str | os.PathLike[str]) -> Path:
    """Write ``offsetops.coordinator_core`` and ``offsetops.pipelines`` (sources only) to a zip for
    ``--py-files``, in the installed layout."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for entry, data in sorted(_sources().items()):
            zf.writestr(entry, data)
    out = Path(dest)
    write_bytes_atomic(out, buf.getvalue())
    return out


def ship_packages(spark: SparkSession) -> Path:
    """Make our packages importable on every executor (``SparkContext.addPyFile``)."""
    import tempfile

    target = Path(tempfile.mkdtemp(prefix="offsetops-pyfiles-")) / "offsetops_packages.zip"
    package_zip(target)
    spark.sparkContext.addPyFile(str(target))
    return target


def parse_conf(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` (repeated ``--conf``) to a dict; a pair without ``=`` is a ValueError."""
    return parse_pairs(pairs, option="--conf")
