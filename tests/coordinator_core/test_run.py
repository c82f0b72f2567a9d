"""The run model: one precedence for every setting, each value with its source, and the clock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from offsetops.coordinator_core.clock import write_clock_declaration
from offsetops.coordinator_core.run import (
    EXPIRATION_SETTINGS,
    MAX_CONFIG_BYTES,
    SettingsError,
    read_settings_file,
    resolve_run,
    settings_line,
)

NOW = 1_700_000_000_000


def _props(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_each_layer_beats_the_next_and_says_so(tmp_path: Path) -> None:
    config = _props(
        tmp_path / "offsetops.properties", "offsets.retention.minutes=300\noffsetops.forecast.hours=6\n"
    )
    server = _props(
        tmp_path / "server.properties",
        "offsets.retention.minutes=400\noffsets.topic.num.partitions=12\ninter.broker.protocol.version=3.9-IV0\n",
    )
    env = {"OFFSETOPS_RETENTION_MINUTES": "120", "OFFSETOPS_FORECAST_HOURS": "12"}
    run = resolve_run(
        flags={"forecast_hours": (2.0, "flag --forecast-hours")},
        environ=env,
        config_file=config,
        server_properties=server,
        now=(NOW, "flag --now"),
    )
    assert (run["forecast_hours"], run.source("forecast_hours")) == (2.0, "flag --forecast-hours")
    assert (run["retention_minutes"], run.source("retention_minutes")) == (
        120,
        "env OFFSETOPS_RETENTION_MINUTES",
    )
    assert run.retention_ms == 120 * 60_000
    assert run["num_partitions"] == 12 and run.source("num_partitions").startswith("broker server.properties")
    assert run["broker_version"] == "3.9"
    assert run["coordinator"] == "legacy" and run.source("coordinator") == "Kafka default for broker 3.9"
    assert run.now_ms == NOW and run.to_json()["now"]["source"] == "flag --now"
    without_env = resolve_run(environ={}, config_file=config, server_properties=server, now=(NOW, "t"))
    assert without_env["retention_minutes"] == 300
    assert (
        without_env.source("retention_minutes")
        == f"config file {config} (--config) (offsets.retention.minutes)"
    )
    broker_only = resolve_run(environ={"OFFSETOPS_SERVER_PROPERTIES": server}, now=(NOW, "t"))
    assert broker_only["retention_minutes"] == 400
    assert (
        broker_only.source("retention_minutes")
        == f"broker server.properties {server} (offsets.retention.minutes)"
    )


def test_config_file_from_the_environment(tmp_path: Path) -> None:
    config = _props(tmp_path / "c.properties", "offsets.retention.minutes=90\n")
    run = resolve_run(environ={"OFFSETOPS_CONFIG": config}, now=(NOW, "t"))
    assert run["retention_minutes"] == 90 and "(OFFSETOPS_CONFIG)" in run.source("retention_minutes")


@pytest.mark.parametrize(
    ("version", "minutes", "coordinator", "semantics"),
    [("1.1", 1440, "legacy", "scala"), ("2.0", 10080, "legacy", "scala"), ("3.9", 10080, "legacy", "java"),
     ("4.0", 10080, "kip848", "java"), (None, 10080, "kip848", "java")],
)  # fmt: skip
def test_kafka_defaults_follow_the_declared_broker_version(
    tmp_path: Path, version: str | None, minutes: int, coordinator: str, semantics: str
) -> None:
    """offsets.retention.minutes was 1440 before 2.0 (KIP-186); the Scala coordinator runs up to 3.x."""
    write_clock_declaration(tmp_path, NOW, declared_by="test", broker_version=version)
    run = resolve_run(environ={}, log_dir=str(tmp_path))
    assert (run["retention_minutes"], run["coordinator"], run["semantics"]) == (
        minutes,
        coordinator,
        semantics,
    )
    assert run.now_ms == NOW and run.clock.source == "declared"
    if version:
        assert run.source("broker_version").startswith(f"declared by {tmp_path}")
    else:
        assert run["broker_version"] is None


def test_a_legacy_coordinator_asked_for_replays_with_its_own_loader() -> None:
    run = resolve_run(environ={"OFFSETOPS_COORDINATOR": "legacy"}, now=(NOW, "t"))
    assert run["semantics"] == "scala" and "env OFFSETOPS_COORDINATOR" in run.source("semantics")


def test_the_clock_from_the_environment_beats_the_declaration(tmp_path: Path) -> None:
    write_clock_declaration(tmp_path, NOW, declared_by="test")
    run = resolve_run(environ={"OFFSETOPS_AS_OF_MS": str(NOW + 5)}, log_dir=str(tmp_path))
    assert run.now_ms == NOW + 5 and run.to_json()["now"]["source"] == "env OFFSETOPS_AS_OF_MS"


@pytest.mark.parametrize(
    ("env", "match"),
    [({"OFFSETOPS_RETENTION_MINUTES": "two hours"}, "retention_minutes from env OFFSETOPS_RETENTION_MINUTES"),
     ({"OFFSETOPS_RETENTION_MINUTES": "0"}, "must be at least 1, got 0"),
     ({"OFFSETOPS_SEMANTICS": "kotlin"}, "expected one of java, scala"),
     ({"OFFSETOPS_AS_OF_MS": "-1"}, "OFFSETOPS_AS_OF_MS"),
     ({"OFFSETOPS_BROKER_VERSION": "latest"}, "not a Kafka version")],
)  # fmt: skip
def test_a_bad_value_names_its_source(env: dict[str, str], match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        resolve_run(environ=env)


def test_the_config_file_is_a_bounded_regular_file(tmp_path: Path) -> None:
    big = tmp_path / "big.properties"
    big.write_bytes(b"#" * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(SettingsError, match="more than"):
        read_settings_file(big)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(SettingsError, match="not a regular file"):  # never blocks on the FIFO
        read_settings_file(fifo)
    with pytest.raises(SettingsError, match="cannot open"):
        read_settings_file(tmp_path / "missing.properties")
    with pytest.raises(SettingsError, match="not a regular file"):
        resolve_run(environ={"OFFSETOPS_CONFIG": str(tmp_path)})


def test_settings_json_and_line() -> None:
    run = resolve_run(environ={"OFFSETOPS_RETENTION_MINUTES": "120"}, now=(NOW, "flag --now"))
    doc = run.to_json()
    assert doc["retention_minutes"] == {"value": 120, "source": "env OFFSETOPS_RETENTION_MINUTES"}
    assert set(doc) >= {
        "now",
        "retention_minutes",
        "num_partitions",
        "coordinator",
        "semantics",
        "max_batch_bytes",
    }
    line = settings_line(doc, EXPIRATION_SETTINGS)
    assert line is not None and line.startswith("settings: now 2023-11-14T22:13:20.000Z (flag --now)")
    assert "retention_minutes 120 (env OFFSETOPS_RETENTION_MINUTES)" in line and "max_batch_bytes" not in line
    assert settings_line(None) is None and run.summary().count(";") == len(doc) - 1


def test_cleaner_settings_follow_the_same_precedence(tmp_path: Path) -> None:
    """log.cleaner.* and delete.retention.ms: the config file beats server.properties; both say so."""
    from offsetops.coordinator_core.cleaner.config import CleanerConfig

    server = _props(
        tmp_path / "server.properties", "log.cleaner.min.cleanable.ratio=0.1\ndelete.retention.ms=5\n"
    )
    config = _props(tmp_path / "c.properties", "log.cleaner.min.cleanable.ratio=0.2\n")
    run = resolve_run(environ={}, config_file=config, server_properties=server, now=(NOW, "t"))
    cleaner = CleanerConfig().layered(
        (run.broker_config, run.broker_config_source), (run.config_file_values, run.config_file_source)
    )
    assert cleaner.min_cleanable_dirty_ratio == 0.2 and cleaner.source_of(
        "min_cleanable_dirty_ratio"
    ).startswith(f"config file {config}")
    assert cleaner.delete_retention_ms == 5
    assert cleaner.source_of("delete_retention_ms") == f"broker server.properties {server}"


def test_describe_configs_results_rank_as_the_brokers_own() -> None:
    """A live cluster's DescribeConfigs answer stands where server.properties would, below env and file."""
    described = {"offsets.retention.minutes": "4320", "inter.broker.protocol.version": "4.0-IV3"}
    label = "DescribeConfigs broker 1 on kafka-0:9092"
    run = resolve_run(environ={}, broker_config=described, broker_config_source=label, now=(NOW, "t"))
    assert (run["retention_minutes"], run.source("retention_minutes")) == (
        4320,
        f"{label} (offsets.retention.minutes)",
    )
    assert run["broker_version"] == "4.0" and run["coordinator"] == "kip848"
    over = resolve_run(
        environ={"OFFSETOPS_RETENTION_MINUTES": "60"},
        broker_config=described,
        broker_config_source=label,
        now=(NOW, "t"),
    )
    assert over["retention_minutes"] == 60


@pytest.mark.parametrize(
    ("env", "flag_error"),
    [({"OFFSETOPS_NUM_PARTITIONS": "100000000"}, "must be at most 10,000, got 100,000,000"),
     ({"OFFSETOPS_FORECAST_HOURS": "1e308"}, "must be a finite number above 0 and at most 8784"),
     ({"OFFSETOPS_FORECAST_HOURS": "nan"}, "must be a finite number above 0 and at most 8784"),
     ({"OFFSETOPS_MAX_BATCH_BYTES": "10"}, "must be at least 49, got 10"),
     ({"OFFSETOPS_RETENTION_MINUTES": "9" * 5000}, "not an integer"),
     ({"OFFSETOPS_AS_OF_MS": str(2**62)}, "must be at most 253,402,300,799,999")],
)  # fmt: skip
def test_a_value_from_the_environment_meets_the_flags_range(env: dict[str, str], flag_error: str) -> None:
    """The run model parses each setting with the parser of its flag (coordinator_core/settings.py):
    an absurd value is refused with the same reason whichever source gave it."""
    with pytest.raises(SettingsError, match=flag_error) as exc:
        resolve_run(environ=env, now=None if "OFFSETOPS_AS_OF_MS" in env else (NOW, "t"))
    assert next(iter(env)) in str(exc.value)  # names the variable


def test_a_value_from_the_config_file_meets_the_flags_range(tmp_path: Path) -> None:
    config = _props(tmp_path / "offsetops.properties", "offsets.topic.num.partitions=0\n")
    with pytest.raises(SettingsError, match="must be at least 1, got 0") as exc:
        resolve_run(config_file=config, environ={}, now=(NOW, "t"))
    assert "offsets.topic.num.partitions" in str(exc.value) and config in str(exc.value)


def test_a_broker_may_keep_offsets_for_kafkas_longest_retention(tmp_path: Path) -> None:
    props = _props(tmp_path / "server.properties", f"offsets.retention.minutes={2**31 - 1}\n")
    run = resolve_run(server_properties=props, environ={}, now=(NOW, "t"))
    assert run["retention_minutes"] == 2**31 - 1


def test_a_setting_without_a_value_reads_unknown_or_none_by_its_source() -> None:
    """Nothing declared a value: unknown; a default that chooses none (no resume state): none."""
    doc = {
        "broker_version": {"value": None, "source": "unknown (no flag, variable, config file declares it)"},
        "resume_state_dir": {"value": None, "source": "offsetops default (no resume state)"},
        "semantics": {"value": None, "source": None},
    }
    assert settings_line(doc) == (
        "settings: broker_version unknown (unknown (no flag, variable, config file declares it)); "
        "resume_state_dir none (offsetops default (no resume state)); semantics unknown (None)"
    )
