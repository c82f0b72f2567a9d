"""A small simulated log dir with data-topic partitions, shared by the operator-view tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from offsetops.coordinator_core.simulator import SimulationConfig, simulate


@pytest.fixture(scope="session")
def sim_with_data(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """(log dir, truth) of a seeded run with ``data_topics`` on; read-only for the tests."""
    out = tmp_path_factory.mktemp("sim-data") / "logdir"
    config = SimulationConfig(out_dir=out, groups=24, partitions=4, days=0.15, seed=11, data_topics=True)
    result = simulate(config)
    return out, json.loads(result.truth_path.read_text())


@pytest.fixture(scope="session")
def sim_kip848(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """A Kafka 4.1 run: KIP-848 consumer groups next to classic ones, with data-topic partitions."""
    out = tmp_path_factory.mktemp("sim-kip848") / "logdir"
    config = SimulationConfig(
        out_dir=out, groups=12, partitions=3, days=0.1, seed=4, kafka_version="4.1", data_topics=True
    )
    return out, json.loads(simulate(config).truth_path.read_text())


def truth_offsets(truth: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """(group, topic, partition) -> the truth's committed offset record."""
    return {
        (g["group_id"], o["topic"], o["partition"]): o
        for part in truth["partitions"]
        for g in part["groups"]
        for o in g["offsets"]
    }


def truth_data(truth: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(d["topic"], d["partition"]): d for d in truth["data_partitions"]}


@pytest.fixture(scope="session")
def sim_share_streams(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """A Kafka 4.2 run: share and streams groups next to classic and consumer ones, with data topics."""
    out = tmp_path_factory.mktemp("sim-share-streams") / "logdir"
    config = SimulationConfig(
        out_dir=out, groups=30, partitions=4, days=0.15, seed=11, kafka_version="4.2", data_topics=True
    )
    return out, json.loads(simulate(config).truth_path.read_text())


def truth_groups(truth: dict[str, Any], group_type: str) -> list[dict[str, Any]]:
    """The truth's groups of one type that have members, by group id."""
    return sorted(
        (
            g
            for p in truth["partitions"]
            for g in p["groups"]
            if g["group_type"] == group_type and g["members"]
        ),
        key=lambda g: g["group_id"],
    )
