"""``reload --json`` written in chunks is one line of compact JSON, exactly the document it holds, with the
caches' text spliced where ``"partitions"`` stands and the run's other keys around it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from offsetops.coordinator_core.cache_json import encode
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.simulator import SimulationConfig, simulate

from offsetops.cli import main
from tests.support.shared import real_kafka_logdirs

LOGDIRS = {p.name: p for p in real_kafka_logdirs()}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sim") / "logdir"
    simulate(SimulationConfig(out, groups=30, partitions=4, days=0.2, seed=5, kafka_version="4.2"))
    return out


def _reload_json(capsys, *argv: str) -> tuple[str, dict[str, Any]]:
    assert main(["reload", *argv, "--json"]) == 0
    out = capsys.readouterr().out
    return out, json.loads(out)


def _without_elapsed(partitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stats a run's timing and its resume state shape (a reload without ``--state`` says why it
    read from the start; ``load_log_dir`` is no run and says nothing) left out."""
    for p in partitions:
        p["stats"].pop("elapsed_ms")
        p["stats"].pop("resume_reason")
        p["stats"].pop("resume_detail")
    return partitions


def test_reload_json_is_the_compact_encoding_of_its_document(capsys, logdir: Path) -> None:
    out, doc = _reload_json(capsys, str(logdir))
    assert out == encode(doc) + "\n"  # key order, escaping and separators exactly json.dumps's
    assert list(doc) == ["partitions", "settings"]
    assert {p["stats"]["resume_reason"] for p in doc["partitions"]} == {"not_requested"}
    expected = [c.to_json() for c in load_log_dir(logdir)]
    assert _without_elapsed(doc["partitions"]) == _without_elapsed(expected)


def test_reload_json_until_keeps_as_of_after_the_partitions(capsys, logdir: Path) -> None:
    out, doc = _reload_json(capsys, str(logdir), "--until", "50")
    assert out == encode(doc) + "\n"
    assert list(doc) == ["partitions", "as_of", "settings"]
    assert all(p["stats"]["last_offset"] is None or p["stats"]["last_offset"] < 50 for p in doc["partitions"])


@pytest.mark.skipif(
    "DanielMorales9__kafkafun" not in LOGDIRS, reason="../shared/fixtures/real-kafka not present"
)
def test_reload_json_of_brokers_log_dirs_keeps_the_replicas(capsys) -> None:
    out, doc = _reload_json(capsys, "--log-dir", f"0={LOGDIRS['DanielMorales9__kafkafun']}")
    assert out == encode(doc) + "\n"
    assert list(doc) == ["partitions", "replicas", "settings"]
    assert len(doc["replicas"]) == len(doc["partitions"]) > 0
