"""Every option of every subcommand fed hostile values: exit 2, one line on stderr naming the option,
no traceback. Options are found by walking the real parser, so a new option is swept too."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from offsetops.coordinator_core.untrusted import UntrustedFileError, read_regular_file

from offsetops.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]
#: Wrong for every typed option: not numbers, not finite, out of every range, absurdly long, control bytes.
HOSTILE = [
    "nan",
    "inf",
    "-inf",
    "1e308",
    "1e26",
    "-1",
    str(2**63),
    str(-(2**63)),
    "9" * 5000,
    "",
    "\x1b[2J",
    "1\n2",
]
HOSTILE_REGEX = ["a{99999999999}", "a{1001}", "(", "[z-a]", "x" * 2000, "(?P<"]


def _typed_options() -> Iterator[tuple[list[str], str, argparse.Action]]:
    """``(command path, option, action)`` for every option with an argument type, sub-commands included."""

    def walk(
        parser: argparse.ArgumentParser, path: list[str]
    ) -> Iterator[tuple[list[str], str, argparse.Action]]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, [*path, name])
            elif action.option_strings and action.type is not None:
                yield path, action.option_strings[-1], action

    yield from walk(build_parser(), [])


OPTIONS = list(_typed_options())
PARSER = build_parser()  # what main() builds; built once, as the sweep parses thousands of command lines


def _parse_error(capsys: pytest.CaptureFixture[str], argv: list[str], *, via_main: bool = True) -> str:
    with pytest.raises(SystemExit) as exc:
        if via_main:
            main(argv)
        else:
            PARSER.parse_args(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, (argv, err)
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.endswith("\n"), err  # one line
    return err


def test_the_sweep_covers_the_options_that_broke() -> None:
    names = {opt for _path, opt, _action in OPTIONS}
    assert {"--max-batch-bytes", "--forecast-hours", "--num-partitions", "--until", "--interval"} <= names
    assert {"--metrics-url", "--group-regex", "--retention-ms", "--partition", "--seed"} <= names
    assert len(OPTIONS) > 60


@pytest.mark.parametrize(
    ("path", "option", "action"), OPTIONS, ids=lambda v: v if isinstance(v, str) else None
)
def test_hostile_values_are_one_line_usage_errors(capsys, path: list[str], option: str, action) -> None:
    values = HOSTILE_REGEX if option.endswith("-regex") else HOSTILE
    for value in values:
        err = _parse_error(capsys, [*path, f"{option}={value}"], via_main=False)
        assert f"argument {option}" in err  # the option itself was refused, not a missing argument
        assert "\x1b" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["reload", "x", "--num-partitions", "100000000"],
        ["reload", "x", "--until=-1"],
        ["expire", "x", "--forecast-hours", "1e308"],
        ["expire", "x", "--retention-ms", "-5"],
        ["audit", "x", "--metrics-url", "http://[::1"],
        ["audit", "x", "--metrics-url", "1=ftp://host/metrics"],
        ["audit", "x", "--metrics-url", "http://host:99999/metrics"],
        ["failover", "x", "--threshold-ms", "-1"],
        ["exporter", "x", "--interval", "1e-9"],
        ["exporter", "x", "--interval", "0.5"],
        ["simulate", "x", "--compacted-fraction", "1.5"],
        ["partition-for", "g", "--partitions", "100000000"],
        ["groups", "x", "--group-regex", "a{99999999999}"],
        ["simulate", "x", "--kafka-version", "99.1"],
        ["pipeline", "reload", "--input", "i", "--output", "o", "--conf", "no-equals-sign"],
    ],
)
def test_absurd_but_parseable_values_get_a_range_error(capsys, argv: list[str]) -> None:
    _parse_error(capsys, argv)


def test_a_good_metrics_url_and_regex_still_parse() -> None:
    ns = build_parser().parse_args(
        ["audit", "x", "--metrics-url", "2=http://broker-2:9404/metrics?x=1", "--timeout-ms", "500"]
    )
    assert ns.metrics_url == ["2=http://broker-2:9404/metrics?x=1"]
    ns = build_parser().parse_args(["groups", "x", "--group-regex", "app-[0-9]{1,3}"])
    assert ns.group_regex.fullmatch("app-12")


@pytest.mark.parametrize("command", ["groups", "reload", "describe"])
def test_a_device_as_client_config_is_a_usage_error(capsys, command: str) -> None:
    assert main([command, "--client-config", "/dev/zero"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/dev/zero" in err and "not a regular file" in err


def test_a_fifo_as_client_config_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "client.properties"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-m", "offsetops.cli", "groups", "--client-config", str(fifo)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,  # before the fix the process blocked in open() until the test's timeout
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "a FIFO, not a regular file" in proc.stderr


def test_read_regular_file_checks_kind_size_and_links(tmp_path: Path) -> None:
    good = tmp_path / "a.properties"
    good.write_bytes(b"x=1\n")
    assert read_regular_file(good, kind="test", max_bytes=10) == b"x=1\n"
    with pytest.raises(UntrustedFileError, match="above the limit of 3 bytes") as exc:
        read_regular_file(good, kind="test", max_bytes=3)
    assert exc.value.path == str(good)
    link = tmp_path / "link"
    link.symlink_to(good)
    with pytest.raises(UntrustedFileError, match="symbolic link"):
        read_regular_file(link, kind="test", max_bytes=10)
    with pytest.raises(UntrustedFileError, match="a directory"):
        read_regular_file(tmp_path, kind="test", max_bytes=10)
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing", kind="test", max_bytes=10)


@pytest.mark.parametrize(
    ("variable", "value", "flag"),
    [
        ("OFFSETOPS_NUM_PARTITIONS", "100000000", ["--num-partitions", "100000000"]),
        ("OFFSETOPS_FORECAST_HOURS", "1e308", ["--forecast-hours", "1e308"]),
        ("OFFSETOPS_MAX_BATCH_BYTES", "10", ["--max-batch-bytes", "10"]),
    ],
)
def test_an_environment_value_gets_the_flags_error(
    capsys, monkeypatch, tmp_path: Path, variable: str, value: str, flag: list[str]
) -> None:
    """The same absurd value, given by flag or by the environment: exit 2, one line, the same reason."""
    command = ["expire", str(tmp_path)] if flag[0] == "--forecast-hours" else ["reload", str(tmp_path)]
    flag_err = _parse_error(capsys, [*command, *flag])
    reason = flag_err.split(f"argument {flag[0]}: ")[1].split(" (see ")[0]
    monkeypatch.setenv(variable, value)
    assert main(command) == 2
    env_err = capsys.readouterr().err
    assert env_err.count("\n") == 1 and variable in env_err and reason in env_err, (flag_err, env_err)
