"""One clock: a log dir's declared instant is what the demo, the UI's code location and the CLI use."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from offsetops.assets.resources import OffsetsSourceResource, build_resources, expiration_defaults_from_env
from offsetops.coordinator_core.clock import (
    CLOCK_FILE,
    CONFIGURED,
    DECLARED,
    WALL,
    ClockError,
    resolve_clock,
    write_clock_declaration,
)

AS_OF = 1_700_021_600_000  # 2023-11-15T04:13:20Z


def test_declared_clock_beats_the_wall_and_configured_beats_both(tmp_path: Path) -> None:
    (tmp_path / "__consumer_offsets-0").mkdir()
    assert resolve_clock(tmp_path, wall_ms=5).source == WALL
    write_clock_declaration(tmp_path, AS_OF, declared_by="a test")
    clock = resolve_clock(tmp_path, wall_ms=5)
    assert (clock.as_of_ms, clock.source) == (AS_OF, DECLARED)
    assert clock.iso == "2023-11-15T04:13:20.000Z"
    assert str(tmp_path / CLOCK_FILE) in clock.describe()
    # A single partition dir of that log dir evaluates as of the same instant.
    assert resolve_clock(tmp_path / "__consumer_offsets-0").as_of_ms == AS_OF
    assert resolve_clock(tmp_path, configured_ms=42).source == CONFIGURED
    assert resolve_clock("s3a://bucket/logdir", wall_ms=7).as_of_ms == 7  # no local declaration to read


@pytest.mark.parametrize("body", ['{"as_of_ms": "soon"}', "{not json", '{"as_of_ms": -1}', "{}"])
def test_a_bad_declaration_is_an_error_naming_the_file(tmp_path: Path, body: str) -> None:
    (tmp_path / CLOCK_FILE).write_text(body)
    with pytest.raises(ClockError, match=str(tmp_path / CLOCK_FILE)):
        resolve_clock(tmp_path)


def test_the_simulator_declares_its_clock(tmp_path: Path) -> None:
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    result = simulate(SimulationConfig(out_dir=tmp_path, groups=2, partitions=3, days=0.01, seed=1))
    doc = json.loads((tmp_path / CLOCK_FILE).read_text())
    assert doc["as_of_ms"] == result.simulated_until_ms
    assert resolve_clock(tmp_path).as_of_ms == result.simulated_until_ms


def test_the_resource_resolves_once_per_run(tmp_path: Path) -> None:
    source = OffsetsSourceResource(log_dir=str(tmp_path))
    first = source.clock()
    assert first.source == WALL
    write_clock_declaration(tmp_path, AS_OF, declared_by="a test")
    assert source.now_ms() == first.as_of_ms  # fixed for the run, even if the wall moves on
    assert OffsetsSourceResource(log_dir=str(tmp_path)).now_ms() == AS_OF
    assert OffsetsSourceResource(log_dir=str(tmp_path), as_of_ms=9).clock().source == CONFIGURED


def test_the_printed_ui_command_evaluates_like_the_demo(tmp_path: Path, monkeypatch) -> None:
    """The environment the demo prints for `dagster dev` gives the same clock and plan settings."""
    from offsetops.commands.demo import ui_command, ui_environment

    log_dir = tmp_path / "logdir"
    log_dir.mkdir()
    write_clock_declaration(log_dir, AS_OF, declared_by="a test")
    args = argparse.Namespace(partitions=12, retention_minutes=120, forecast_hours=6.0)
    env = ui_environment(args, tmp_path, log_dir)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    source = build_resources("local", env)["offsets_source"]
    run = source.settings()
    assert source.now_ms() == AS_OF and run["num_partitions"] == 12
    assert (run["retention_minutes"], run.source("retention_minutes")) == (
        120,
        "env OFFSETOPS_RETENTION_MINUTES",
    )
    assert expiration_defaults_from_env(env) == (120, 6.0)
    assert "OFFSETOPS_RETENTION_MINUTES=120" in ui_command(env)
    # The code location `dagster dev` loads reads the same settings as its defaults.
    probe = (
        "from offsetops.assets.expiration import ExpirationConfig as C;"
        "from offsetops.assets.partitions import NUM_PARTITIONS as N;"
        "from offsetops.assets.definitions import defs;"
        "r = defs.resources['offsets_source'].settings(C().flags());"
        "print(r['retention_minutes'], r['forecast_hours'], N)"
    )
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", probe],
        env={**env, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    ).stdout.split()
    assert out == ["120", "6.0", "12"]


def test_cli_audit_uses_the_declared_clock(tmp_path: Path) -> None:
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    result = simulate(SimulationConfig(out_dir=tmp_path, groups=3, partitions=2, days=0.02, seed=2))
    for command in (["audit", "--no-record"], ["expire"]):
        proc = subprocess.run(
            [sys.executable, "-m", "offsetops.cli", *command, str(tmp_path), "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        doc = json.loads(proc.stdout)
        assert doc.get("audited_at_ms", doc.get("now_ms")) == result.simulated_until_ms, command
