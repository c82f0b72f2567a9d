"""A local SparkSession for the pipeline tests (session-scoped), and simulator log dirs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from offsetops.coordinator_core.simulator import SimulationConfig, SimulationResult, simulate


def _java_available() -> bool:
    return shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark() -> Iterator:
    """``local[2]`` Spark with the UI off; skipped cleanly without Java."""
    if not _java_available():
        pytest.skip("no Java runtime: Spark tests need one")
    from offsetops.pipelines.session import build_session

    session = build_session("local[2]", app_name="offsetops-tests", quiet=True, ship_code=False)
    yield session


@pytest.fixture(scope="session")
def sim_txn(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    """Kafka 4.0 simulator data, mixed codecs, 8 KiB segments so transactions span segments."""
    out = tmp_path_factory.mktemp("sim") / "logdir"
    return simulate(
        SimulationConfig(
            out_dir=Path(out),
            groups=24,
            partitions=3,
            days=0.15,
            seed=1,  # has a hanging transaction: pending_offsets is not empty
            segment_bytes=8 * 1024,
            kafka_version="4.0",
            compression="mixed",
        )
    )


@pytest.fixture(scope="session")
def sim_share_streams_small(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    """Kafka 4.2 simulator data: share and streams groups beside classic and consumer ones, 8 KiB segments."""
    out = tmp_path_factory.mktemp("sim-4.2") / "logdir"
    return simulate(
        SimulationConfig(
            out_dir=Path(out),
            groups=30,
            partitions=3,
            days=0.15,
            seed=11,
            segment_bytes=8 * 1024,
            kafka_version="4.2",
        )
    )
