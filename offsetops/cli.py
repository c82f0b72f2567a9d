"""The ``offsetops`` command. Each subcommand lives in ``offsetops/commands/<name>.py``.

A command module defines ``register(subparsers)`` which adds its parser and sets ``func``;
``func(args)`` returns the process exit code. :data:`COMMANDS` names every subcommand with the line
``offsetops --help`` lists for it, so the top-level help imports no command: a command's module is
imported when its parser is first needed (it was chosen, or its ``--help`` asked for).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator, MutableMapping

from offsetops.commands._exit import EXIT_ERRORS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from offsetops.commands._run import add_run_args
from offsetops.coordinator_core import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and logging cost start-up time; the annotations are strings (PEP 563)
    import logging
    from collections.abc import Callable
    from typing import NoReturn

__all__ = ["COMMANDS", "EXIT_ERRORS", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

#: Every subcommand, as ``offsetops --help`` lists it: (name, one-line help). Its module is
#: ``offsetops.commands.<name with - as _>``, whose ``register`` adds the parser without a ``help=``.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("audit", "audit the Log Cleaner's health on __consumer_offsets (dirty ratio, hanging txns, progress)"),
    (
        "broker-scan",
        "scan one broker's log dir where it is mounted and write the result for the central audit",
    ),
    ("decode", "decode one __consumer_offsets record given as hex"),
    ("demo", "simulate a sample cluster and run every Dagster asset on it (the main job)"),
    ("describe", "per group and partition: committed offset, log start/end, lag and owner"),
    ("dump", "print every batch and record, decoded, like kafka-dump-log --offsets-decoder"),
    ("expire", "plan offset expiration (cleanupGroupMetadata) and optionally apply it, journaled"),
    (
        "exporter",
        "serve lag, out-of-range offsets, cleaner audit, expiration risk and failover forecast "
        "as Prometheus metrics",
    ),
    ("failover", "forecast each offsets partition's load time after a coordinator failover"),
    ("groups", "list groups with state, members, total lag and offsets out of range"),
    ("history", "who moved a group's offsets, and when: every commit, rewinds and outside commits flagged"),
    ("partition-for", "print the offsets partition that owns a group"),
    ("pipeline", "run a Spark job (reload, expire, audit, validate, live) on local Spark or a cluster"),
    ("reload", "rebuild the group coordinator's cache from a log dir or a live cluster"),
    ("simulate", "write a realistic __consumer_offsets log dir with a ground-truth truth.json"),
)


def command_module(name: str) -> str:
    """The module that registers subcommand ``name``."""
    return f"offsetops.commands.{name.replace('-', '_')}"


class OneLineParser(argparse.ArgumentParser):
    """argparse, except that a usage error is one line (the command, the option, why) and exit 2."""

    def error(self, message: str) -> NoReturn:
        from offsetops.coordinator_core.errors import printable

        self.exit(EXIT_USAGE, f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")


class _CommandParsers(MutableMapping[str, argparse.ArgumentParser]):
    """The subcommands' parsers by name (argparse's ``choices``): every declared name is a choice, and
    reading a declared command's parser imports its module, whose ``register`` adds it."""

    def __init__(self, action: _LazySubParsers) -> None:
        self._action = action
        self._parsers: dict[str, argparse.ArgumentParser] = {}
        self.pending: dict[str, None] = {}  # declared, module not imported yet (an ordered set)

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        if name in self.pending:
            importlib.import_module(command_module(name)).register(self._action)
            if name in self.pending:
                raise LookupError(f"{command_module(name)}.register did not add the {name!r} command")
        return self._parsers[name]

    def __setitem__(self, name: str, parser: argparse.ArgumentParser) -> None:
        self._parsers[name] = parser

    def __delitem__(self, name: str) -> None:
        self.pending.pop(name, None)
        self._parsers.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self.pending or name in self._parsers

    def __iter__(self) -> Iterator[str]:
        # declared order first (the order --help lists), then any parser added directly
        return iter({**self.pending, **dict.fromkeys(self._parsers)})

    def __len__(self) -> int:
        return len(self.pending.keys() | self._parsers.keys())


class _LazySubParsers(argparse._SubParsersAction):
    """argparse's subcommands, declared by name and help line and built on first use."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._commands = _CommandParsers(self)
        # argparse reads and fills these through the mapping interface only (typeshed says dict)
        self._name_parser_map = self.choices = self._commands  # pyright: ignore[reportAttributeAccessIssue]

    def declare(self, name: str, help_line: str) -> None:
        """List ``name`` in the help and accept it as a command, without importing its module."""
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), help_line))
        self._commands.pending[name] = None

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        if name in self._commands.pending:
            if "help" in kwargs:  # one help line per command, in COMMANDS
                raise ValueError(f"the help line of {name!r} belongs in offsetops.cli.COMMANDS")
            del self._commands.pending[name]
        return super().add_parser(name, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="offsetops",
        description="Operations for Kafka's __consumer_offsets: decode, reload, expire, audit, validate.",
    )
    parser.add_argument("--version", action="version", version=f"offsetops {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    add_run_args(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", action=_LazySubParsers)
    assert isinstance(sub, _LazySubParsers)
    sub.required = True
    for name, help_line in COMMANDS:
        sub.declare(name, help_line)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except (ArithmeticError, RecursionError, ValueError, TypeError) as exc:
        # An argument type that failed in a way argparse does not turn into a usage error.
        from offsetops.commands._common import die

        return die(f"bad argument: {exc}", EXIT_USAGE)
    # Past the arguments, the chosen command's module is loaded; what every run needs comes with it.
    import logging

    from offsetops.commands._common import die
    from offsetops.commands._run import resolve_args
    from offsetops.coordinator_core.clock import ClockError
    from offsetops.coordinator_core.kafka_client import quiet_kafka_logging
    from offsetops.coordinator_core.run import SettingsError

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # kafka-python logs every retry; offsetops says what failed in one line (all of it with --verbose).
    quiet_kafka_logging(args.verbose, logging.getLogger().handlers)
    for stream in (sys.stdout, sys.stderr):
        # Whatever the terminal's encoding, data that cannot be encoded is escaped, never a crash.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        # The run's settings, resolved once: every command computes with and reports these.
        resolve_args(args)
    except (SettingsError, ClockError) as exc:
        return die(str(exc))
    return _run(args, die, logging.getLogger("offsetops"))


def _run(args: argparse.Namespace, die: Callable[..., int], log: logging.Logger) -> int:
    """Run the chosen command: its exit code, or one line on stderr for whatever it raised."""
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        print("offsetops: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        # A path the command could not use (permissions, a symlink loop, a vanished file).
        log.debug("unusable path", exc_info=True)
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return die(f"{where}{exc.strerror or exc}", EXIT_USAGE)
    except MemoryError:
        return die("out of memory", EXIT_INTERNAL)
    except Exception as exc:
        # Never a traceback for a user; --verbose logs it for a bug report.
        log.info("internal error", exc_info=True)
        return die(
            f"internal error: {type(exc).__name__}: {exc} (run with --verbose for details)", EXIT_INTERNAL
        )


if __name__ == "__main__":
    sys.exit(main())
