"""Helpers shared by the subcommands: errors, JSON output, escaping, argument types."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from offsetops.coordinator_core.errors import DecodeError, count_errors
from offsetops.coordinator_core.errors import printable as escape

EXIT_OK = 0
EXIT_ERRORS = 1  # the run finished but found errors and --strict was given (or the command failed)
EXIT_USAGE = 2  # bad arguments or unusable input (argparse uses 2 as well)
EXIT_INTERNAL = 3  # an unexpected internal failure (a bug); the message names it, --verbose shows where


def die(message: str, code: int = EXIT_USAGE) -> int:
    print(f"offsetops: error: {escape(message)}", file=sys.stderr)
    return code


def print_json(doc: Any) -> None:
    json.dump(doc, sys.stdout, separators=(",", ":"), sort_keys=False, allow_nan=False)
    sys.stdout.write("\n")


def quote(text: object) -> str:
    """A data string for text output: quoted, with non-printable characters escaped (``repr``)."""
    return repr(str(text))


def report_errors(errors: list[DecodeError], limit: int = 20) -> None:
    """Print decode errors to stderr: every one is reported, a long list is summarised."""
    for err in errors[:limit]:
        print(f"  {'notice' if err.is_notice else 'error'}: {escape(err)}", file=sys.stderr)
    if len(errors) > limit:
        print(f"  ... and {len(errors) - limit} more (use --json for all)", file=sys.stderr)


def strict_exit(errors: list[DecodeError], strict: bool) -> int:
    """The exit code of a reading command: 1 under ``--strict`` if any error (not notice) was found."""
    return EXIT_ERRORS if strict and count_errors(errors) else EXIT_OK


def parse_partitions(values: list[int] | None) -> list[int] | None:
    return sorted(set(values)) if values else None


CLIENT_CONFIG_HELP = (
    "Kafka client.properties (bootstrap.servers, security.protocol, SASL, TLS); "
    "OFFSETOPS_* variables fill what it leaves out"
)


def kafka_client_config(args: Any, bootstrap: str | None = None) -> Any:
    """The one Kafka client configuration of a command: ``--bootstrap`` over ``--client-config`` over
    the ``OFFSETOPS_*`` environment. Raises ``ClientConfigError`` with a one-line message."""
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig

    return KafkaClientConfig.resolve(
        bootstrap or getattr(args, "bootstrap", None), getattr(args, "client_config", None)
    )


def non_negative_float(text: str) -> float:
    """An argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def epoch_time(text: str) -> int:
    """An argparse type: a time (epoch ms, ISO-8601, or relative like -2h) that is not before 1970."""
    from offsetops.coordinator_core.timefmt import parse_time

    try:
        value = parse_time(text)  # relative forms are taken against the wall clock
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is before 1970 (epoch ms must not be negative)")
    return value
