"""The top-level parser: every subcommand listed from the registry, a command's module imported only when
that command is chosen, and ``offsetops --help`` without Spark, Dagster, Kafka clients or Prometheus."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

from offsetops import commands
from offsetops.cli import COMMANDS, build_parser, command_module, main

#: What ``offsetops --help`` must not pay for: each takes tens to hundreds of milliseconds to import.
HEAVY = ("pyspark", "dagster", "prometheus_client", "great_expectations", "kafka", "pandas", "pyarrow")
#: What no ``offsetops COMMAND --help`` needs: the Spark, Dagster and GX sides load when a job runs;
#: the Prometheus client only for the command that serves metrics.
HEAVY_FOR_ANY_HELP = HEAVY
SERVES_METRICS = "exporter"

_PROBE = """
import contextlib, io, json, sys
from offsetops.cli import main
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "help": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _run_in_fresh_interpreter(*argv: str) -> dict:
    """``main(argv)`` in a new interpreter: its exit code, its stdout and every module it imported."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(proc.stdout)


def _top_package(module: str) -> str:
    return module.partition(".")[0]


def _loaded_commands(modules: list[str]) -> set[str]:
    prefix = f"{commands.__name__}."
    return {m for m in modules if m.startswith(prefix) and not m.removeprefix(prefix).startswith("_")}


def test_top_level_help_imports_no_command_and_nothing_heavy() -> None:
    probe = _run_in_fresh_interpreter("--help")
    assert probe["code"] == 0
    loaded = {_top_package(m) for m in probe["modules"]}
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert _loaded_commands(probe["modules"]) == set()
    # nor the layers below the command line: the parser alone answers --help
    assert not [m for m in probe["modules"] if m.startswith(("offsetops.pipelines", "offsetops.checks"))]


@pytest.mark.parametrize("name", [name for name, _help in COMMANDS])
def test_command_help_imports_that_command_only(name: str) -> None:
    probe = _run_in_fresh_interpreter(name, "--help")
    assert probe["code"] == 0
    assert probe["help"].startswith(f"usage: offsetops {name} ")
    loaded = {_top_package(m) for m in probe["modules"]}
    if name == SERVES_METRICS:
        loaded.discard("prometheus_client")
    assert not loaded & set(HEAVY_FOR_ANY_HELP), sorted(loaded & set(HEAVY_FOR_ANY_HELP))
    others = {command_module(other) for other, _help in COMMANDS if other != name}
    # a command may build on another's module (demo runs simulate), never on every one
    assert command_module(name) in _loaded_commands(probe["modules"])
    assert len(_loaded_commands(probe["modules"]) & others) <= 1


def test_every_command_module_is_declared() -> None:
    on_disk = {
        f"{commands.__name__}.{info.name}"
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    }
    assert {command_module(name) for name, _help in COMMANDS} == on_disk
    assert [name for name, _help in COMMANDS] == sorted(name for name, _help in COMMANDS)


def test_top_level_help_lists_every_command_with_its_line(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at hyphens on a narrow terminal
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split()) + " "
    where = [text.find(f" {name} {help_line} ") for name, help_line in COMMANDS]
    assert -1 not in where, [name for (name, _help), at in zip(COMMANDS, where, strict=True) if at == -1]
    assert where == sorted(where)  # in the registry's order


def test_every_declared_command_builds_its_parser() -> None:
    parser = build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    choices = sub.choices
    assert choices is not None
    assert list(choices) == [name for name, _help in COMMANDS]
    for name, _help in COMMANDS:
        assert choices[name].prog == f"offsetops {name}"  # type: ignore[index]
    assert _loaded_commands(list(sys.modules)) >= {command_module(n) for n, _ in COMMANDS}


def test_a_second_help_line_for_a_declared_command_is_refused() -> None:
    parser = build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    with pytest.raises(ValueError, match=r"offsetops\.cli\.COMMANDS"):
        sub.add_parser("reload", help="a second line, out of the registry")  # type: ignore[attr-defined]


def test_unknown_and_missing_commands_are_one_line_usage_errors(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bogus"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert "invalid choice: 'bogus' (choose from 'audit', 'broker-scan'," in err
    assert "'reload', 'simulate') (see offsetops --help)" in err
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        "offsetops: error: the following arguments are required: COMMAND (see offsetops --help)\n"
    )
