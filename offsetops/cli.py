"""The ``offsetops`` command. Each subcommand lives in ``offsetops/commands/<name>.py``.

A command module defines ``register(subparsers)`` which adds its parser and sets ``func``;
``func(args)`` returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from typing import NoReturn

from offsetops import commands
from offsetops.commands._common import EXIT_ERRORS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, die, escape
from offsetops.commands._run import add_run_args, resolve_args
from offsetops.coordinator_core import __version__

__all__ = ["EXIT_ERRORS", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

log = logging.getLogger("offsetops")


class OneLineParser(argparse.ArgumentParser):
    """argparse, except that a usage error is one line (the command, the option, why) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {escape(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="offsetops",
        description="Operations for Kafka's __consumer_offsets: decode, reload, expire, audit, validate.",
    )
    parser.add_argument("--version", action="version", version=f"offsetops {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    add_run_args(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except (ArithmeticError, RecursionError, ValueError, TypeError) as exc:
        # An argument type that failed in a way argparse does not turn into a usage error.
        return die(f"bad argument: {exc}", EXIT_USAGE)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from offsetops.coordinator_core.kafka_client import quiet_kafka_logging

    # kafka-python logs every retry; offsetops says what failed in one line (all of it with --verbose).
    quiet_kafka_logging(args.verbose, logging.getLogger().handlers)
    for stream in (sys.stdout, sys.stderr):
        # Whatever the terminal's encoding, data that cannot be encoded is escaped, never a crash.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    from offsetops.coordinator_core.clock import ClockError
    from offsetops.coordinator_core.run import SettingsError

    try:
        # The run's settings, resolved once: every command computes with and reports these.
        resolve_args(args)
    except (SettingsError, ClockError) as exc:
        return die(str(exc))
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
