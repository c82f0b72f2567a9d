"""``offsetops reload PATH --json`` imports what a log-dir reload needs and nothing else: no live
client, no resume state, no replica choice, no expiration planner, no share/streams replay and no
compression codec when the log holds none of them (each costs start-up time on every run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from offsetops.coordinator_core.simulator import SimulationConfig, simulate

# Runs ``offsetops ARGS`` as the console script does, then writes every imported module's name to FILE.
_PROBE = """
import json, sys
from offsetops.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    json.dump(sorted(sys.modules), fh)
sys.exit(code)
"""

#: Modules a reload of an uncompressed Kafka 3.9 log dir (classic groups only) must not import.
NOT_NEEDED = (
    # every run sets up the client's logging (its errors and redaction), never its connection check
    "offsetops.coordinator_core.kafka_client.probe",
    # every read reports why it did not resume (resume.reasons), and reads no state without --state
    "offsetops.coordinator_core.resume.codec",
    "offsetops.coordinator_core.resume.logdir",
    "offsetops.coordinator_core.resume.point",
    "offsetops.coordinator_core.resume.store",
    "offsetops.coordinator_core.resume.live",
    "offsetops.coordinator_core.sources.replicas",
    "offsetops.coordinator_core.sources.live",
    "offsetops.coordinator_core.expiration",
    "offsetops.coordinator_core.share_group",
    "offsetops.coordinator_core.streams_group",
    "offsetops.coordinator_core.kip848",
    "offsetops.coordinator_core.schema.json_view",
    "offsetops.coordinator_core.schema.control",
    "offsetops.coordinator_core.records.builder",
    "ssl",
    "socket",
    "hashlib",
    "tempfile",
    "gzip",
    "cramjam",
    "lz4",
    "zstandard",
    "crc32c",
    "javaproperties",
    "prometheus_client",
    "pyspark",
    "dagster",
)


@pytest.fixture(scope="module")
def classic_log_dir(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("classic") / "logs"
    simulate(SimulationConfig(out, groups=30, partitions=3, days=0.1, seed=7, kafka_version="3.9"))
    return str(out)


def _imported(tmp_path: Path, *argv: str) -> tuple[str, set[str]]:
    """Run ``offsetops ARGV`` in a fresh interpreter: its stdout and every module it imported."""
    where = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(where), *argv], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, set(json.loads(where.read_text()))


def _not_needed(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if any(m == n or m.startswith(f"{n}.") for n in NOT_NEEDED))


def test_reload_json_imports_only_what_the_reload_needs(classic_log_dir, tmp_path) -> None:
    out, loaded = _imported(tmp_path, "reload", classic_log_dir, "--json")
    doc = json.loads(out)
    groups = [g for p in doc["partitions"] for g in p["groups"]]
    assert sum(len(g["offsets"]) for g in groups) > 0  # it did reload offsets
    assert any(m["subscribed_topics"] for g in groups for m in g["members"])  # and members' subscriptions
    assert "offsetops.coordinator_core.loader" in loaded
    assert _not_needed(loaded) == []


def test_reload_text_imports_only_what_the_reload_needs(classic_log_dir, tmp_path) -> None:
    out, loaded = _imported(tmp_path, "reload", classic_log_dir)
    assert "total:" in out
    assert _not_needed(loaded) == []
