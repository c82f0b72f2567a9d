"""The Spark jobs on a real standalone cluster, submitted as docs/pipelines.md tells operators to.

One cluster for the module (a master and two one-core workers on loopback). Each job is submitted
with ``spark-submit --py-files offsetops.zip`` (the zip from ``offsetops.pipelines.session.package_zip``); the
executors run a Python without offsetops installed, so a job only passes when the documented
packaging delivers the code. The tables must equal the single-process core's results; the live
reload's, read by the executors from the loopback broker, the single-process live reload's.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.expiration import DEFAULT_RETENTION_MS, KIP848, plan_expiration
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.simulator import SimulationConfig, SimulationResult, simulate
from offsetops.pipelines.cli_args import JOB_SCRIPTS

from tests.deploy.conftest import REPO, VENV_BIN, build_py_files, java_available
from tests.deploy.spark_cluster import SparkCluster, run_cluster, spark_home
from tests.support.broker import BrokerClient, TansuBroker, mirror_log_dir

pytestmark = [pytest.mark.slow, pytest.mark.spark]

DAY_MS = 86_400_000
PARTITIONS = 3
SUBMIT_TIMEOUT_S = 420


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    if not java_available():
        pytest.skip("Java is needed for the Spark master and workers")
    yield from run_cluster(tmp_path_factory.mktemp("spark-cluster"))


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    """Kafka 4.0 data, mixed codecs, 8 KiB segments: several segments per partition, open transactions."""
    return simulate(
        SimulationConfig(
            out_dir=tmp_path_factory.mktemp("sim") / "logdir",
            groups=24,
            partitions=PARTITIONS,
            days=0.15,
            seed=1,
            segment_bytes=8 * 1024,
            kafka_version="4.0",
            compression="mixed",
        )
    )


@pytest.fixture(scope="module")
def py_files(cluster: SparkCluster) -> Path:
    """The zip, built exactly as docs/pipelines.md says."""
    return build_py_files(cluster.root / "offsetops.zip")


def submit(cluster: SparkCluster, py_files: Path, job: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``spark-submit --master spark://... --py-files offsetops.zip pipelines/<job>.py ...``."""

    argv = [
        str(VENV_BIN / "spark-submit"),
        "--master",
        cluster.master_url,
        "--py-files",
        str(py_files),
        "--conf",
        f"spark.pyspark.python={cluster.executor_python}",
        "--conf",
        f"spark.pyspark.driver.python={VENV_BIN / 'python'}",
        "--conf",
        "spark.driver.host=127.0.0.1",
        "--conf",
        "spark.driver.bindAddress=127.0.0.1",
        "--conf",
        "spark.executor.memory=512m",
        "--conf",
        "spark.executor.cores=1",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "--conf",
        "spark.ui.enabled=false",
        JOB_SCRIPTS[job],
        "--num-partitions",
        str(PARTITIONS),  # offsets.topic.num.partitions of the simulated cluster
        *args,
    ]
    # A pip-installed pyspark: SPARK_HOME is the package dir (docs/pipelines.md says to export it).
    env = {**os.environ, "SPARK_HOME": str(spark_home())}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S)
    assert done.returncode == 0, (
        f"{job} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    )
    return done


@pytest.fixture(scope="module")
def outputs(cluster: SparkCluster, py_files: Path, log_dir: SimulationResult) -> dict[str, Path]:
    """All four jobs, one after the other, on the cluster."""
    out = cluster.root / "out"
    now = str(log_dir.simulated_until_ms + 8 * DAY_MS)
    src = str(log_dir.out_dir)
    submit(cluster, py_files, "reload", "--input", src, "--output", str(out / "reload"))
    submit(cluster, py_files, "expire", "--input", src, "--output", str(out / "expire"), "--now-ms", now)
    submit(cluster, py_files, "audit", "--input", src, "--output", str(out / "audit"), "--now-ms", now)
    submit(
        cluster,
        py_files,
        "validate",
        "--input",
        str(out / "reload"),
        "--output",
        str(out / "validate"),
        "--now-ms",
        now,
    )
    return {
        "reload": out / "reload",
        "expire": out / "expire",
        "audit": out / "audit",
        "validate": out / "validate",
    }


@pytest.fixture(scope="module")
def live_output(
    cluster: SparkCluster, py_files: Path, log_dir: SimulationResult, kafka_broker: TansuBroker
) -> tuple[Path, str]:
    """The live job on the cluster: the executors fetch a mirror of the log dir from the broker."""
    topic = f"offsets-mirror-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        mirror_log_dir(bc, log_dir.out_dir, topic, partitions=PARTITIONS)
    out = cluster.root / "out" / "live"
    done = submit(
        cluster,
        py_files,
        "live",
        *("--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--output", str(out)),
        *("--max-range-offsets", "10000"),
    )
    assert f"{PARTITIONS} partitions in" in done.stdout, done.stdout
    return out, topic


@pytest.fixture(scope="module")
def reader() -> Iterator:
    """A local SparkSession to read the cluster's Parquet back with the explicit schemas."""
    from offsetops.pipelines.session import build_session

    yield build_session("local[1]", app_name="offsetops-deploy-tests", quiet=True, ship_code=False)


def test_executors_cannot_import_offsetops_without_py_files(cluster: SparkCluster) -> None:
    probe = subprocess.run(
        [
            str(cluster.executor_python),
            "-c",
            "import pyarrow, zstandard, pyspark; import offsetops.coordinator_core",
        ],
        cwd=cluster.root,
        capture_output=True,
        text=True,
        timeout=60,  # an executor's cwd is not the repo
    )
    assert probe.returncode != 0 and "No module named 'offsetops'" in probe.stderr, probe.stderr


def test_jobs_ran_on_both_workers(
    cluster: SparkCluster, outputs: dict[str, Path], live_output: tuple[Path, str]
) -> None:
    apps = cluster.state()["completedapps"]
    assert sorted(a["name"] for a in apps) == sorted(
        f"offsetops-{j}" for j in ("reload", "expire", "audit", "validate", "live")
    )
    for i in range(2):  # each worker started executors for each application
        assert len(list((cluster.root / f"work-{i}").glob("app-*"))) == 5


def test_reload_tables_equal_the_single_process_reload(
    outputs: dict[str, Path], log_dir: SimulationResult, reader
) -> None:
    from offsetops.pipelines.reload import read_tables
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.tables import all_cache_rows, comparable

    ref = all_cache_rows(load_log_dir(log_dir.out_dir, num_partitions=PARTITIONS))
    tables = read_tables(reader, str(outputs["reload"]))
    for name, schema in TABLE_SCHEMAS.items():
        drop = ["elapsed_ms"] if name == "load_stats" else []
        got = comparable([tuple(r) for r in tables[name].collect()], schema, drop=drop)
        assert got == comparable(ref[name], schema, drop=drop), name
    assert ref["offsets"] and ref["pending_offsets"], "the data must exercise offsets and open transactions"


def test_expire_tables_equal_the_single_process_plan(
    outputs: dict[str, Path], log_dir: SimulationResult, reader
) -> None:
    from offsetops.pipelines.expire import EXPIRE_SCHEMAS, plan_rows
    from offsetops.pipelines.reload import read_tables
    from offsetops.pipelines.tables import comparable

    now = log_dir.simulated_until_ms + 8 * DAY_MS
    plan = plan_expiration(
        load_log_dir(log_dir.out_dir, num_partitions=PARTITIONS),
        now_ms=now,
        retention_ms=DEFAULT_RETENTION_MS,
        coordinator=KIP848,
        forecast_horizon_ms=DAY_MS,
    )
    want = plan_rows(plan, -1)
    tables = read_tables(reader, str(outputs["expire"]), EXPIRE_SCHEMAS)
    for name, schema in EXPIRE_SCHEMAS.items():
        got = comparable([tuple(r) for r in tables[name].collect()], schema)
        assert got == comparable(want[name], schema), name
    assert want["tombstones"]


def test_audit_equals_the_single_process_audit(
    outputs: dict[str, Path], log_dir: SimulationResult, reader
) -> None:
    from offsetops.pipelines.audit import CLEANER_AUDIT_SCHEMA

    now = log_dir.simulated_until_ms + 8 * DAY_MS
    rows = reader.read.schema(CLEANER_AUDIT_SCHEMA).parquet(str(outputs["audit"] / "cleaner_audit")).collect()
    core = audit_log_dir(log_dir.out_dir, now_ms=now, record_history=False)
    assert sorted(r["offsets_partition"] for r in rows) == [p.partition for p in core.partitions]
    for row in rows:
        expect = next(p for p in core.partitions if p.partition == row["offsets_partition"]).to_json()
        assert json.loads(row["audit_json"]) == json.loads(json.dumps(expect))


def test_validate_writes_data_docs_from_the_cluster_tables(outputs: dict[str, Path]) -> None:
    reports = outputs["validate"] / "reports"
    assert (reports / "index.html").is_file()
    assert any((reports / "data_docs").rglob("*.html"))


def test_live_reload_on_the_executors_equals_the_single_process_live_reload(
    live_output: tuple[Path, str], kafka_broker: TansuBroker, reader
) -> None:
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig
    from offsetops.coordinator_core.sources.live import LiveSource, load_live_partition
    from offsetops.pipelines.reload import read_tables
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.tables import all_cache_rows, comparable

    out, topic = live_output
    with LiveSource(KafkaClientConfig(kafka_broker.bootstrap), topic=topic) as source:
        ref = all_cache_rows(
            load_live_partition(source, p, num_partitions=PARTITIONS) for p in source.partitions()
        )
    tables = read_tables(reader, str(out))
    for name, schema in TABLE_SCHEMAS.items():
        drop = ["elapsed_ms"] if name == "load_stats" else []
        got = comparable([tuple(r) for r in tables[name].collect()], schema, drop=drop)
        assert got == comparable(ref[name], schema, drop=drop), name
    assert ref["offsets"] and ref["pending_offsets"]
