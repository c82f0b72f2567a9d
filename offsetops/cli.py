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

from coordinator_core import __version__
from offsetops import commands

EXIT_OK = 0
EXIT_ERRORS = 1  # the run finished but found errors and --strict was given
EXIT_USAGE = 2  # bad arguments or unusable input (argparse uses 2 as well)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offsetops",
        description="Operations for Kafka's __consumer_offsets: decode, reload, expire, audit, validate.",
    )
    parser.add_argument("--version", action="version", version=f"offsetops {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
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
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from coordinator_core.kafka_client import quiet_kafka_logging

    # kafka-python logs every retry; offsetops says what failed in one line (all of it with --verbose).
    quiet_kafka_logging(args.verbose, logging.getLogger().handlers)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        print("offsetops: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
