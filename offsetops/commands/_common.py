"""Helpers shared by the subcommands: errors, JSON output, escaping, argument types."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

# The exit codes live in _exit.py (the top-level parser imports them alone); re-exported for the commands.
from offsetops.commands._exit import EXIT_ERRORS as EXIT_ERRORS
from offsetops.commands._exit import EXIT_INTERNAL as EXIT_INTERNAL
from offsetops.commands._exit import EXIT_OK as EXIT_OK
from offsetops.commands._exit import EXIT_USAGE as EXIT_USAGE
from offsetops.coordinator_core.cache_json import encode as encode_json
from offsetops.coordinator_core.errors import DecodeError, count_errors
from offsetops.coordinator_core.errors import printable as escape

# The argument types live in pipelines/cli_args.py; these two are re-exported for the commands.
from offsetops.pipelines.cli_args import epoch_time as epoch_time
from offsetops.pipelines.cli_args import non_negative_float as non_negative_float


def die(message: str, code: int = EXIT_USAGE) -> int:
    print(f"offsetops: error: {escape(message)}", file=sys.stderr)
    return code


def print_json(doc: Any) -> None:
    """``doc`` as one line of compact JSON on stdout."""
    print_json_chunks((encode_json(doc),))


def print_json_chunks(chunks: Iterable[str]) -> None:
    """One line of JSON text given in chunks (a large cache is never one string), each written as made."""
    write = sys.stdout.write
    for chunk in chunks:
        write(chunk)
    write("\n")


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
