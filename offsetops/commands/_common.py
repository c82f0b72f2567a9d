"""Helpers shared by the subcommands."""

from __future__ import annotations

import json
import sys
from typing import Any

from coordinator_core.errors import DecodeError


def die(message: str, code: int = 2) -> int:
    print(f"offsetops: error: {message}", file=sys.stderr)
    return code


def print_json(doc: Any) -> None:
    json.dump(doc, sys.stdout, separators=(",", ":"), sort_keys=False)
    sys.stdout.write("\n")


def report_errors(errors: list[DecodeError], limit: int = 20) -> None:
    """Print decode errors to stderr: every one is reported, a long list is summarised."""
    for err in errors[:limit]:
        print(f"  error: {err}", file=sys.stderr)
    if len(errors) > limit:
        print(f"  ... and {len(errors) - limit} more errors (use --json for all)", file=sys.stderr)


def parse_partitions(values: list[int] | None) -> list[int] | None:
    return sorted(set(values)) if values else None


CLIENT_CONFIG_HELP = (
    "Kafka client.properties (bootstrap.servers, security.protocol, SASL, TLS); "
    "OFFSETOPS_* variables fill what it leaves out"
)


def kafka_client_config(args: Any, bootstrap: str | None = None) -> Any:
    """The one Kafka client configuration of a command: ``--bootstrap`` over ``--client-config`` over
    the ``OFFSETOPS_*`` environment. Raises ``ClientConfigError`` with a one-line message."""
    from coordinator_core.kafka_client import KafkaClientConfig

    return KafkaClientConfig.resolve(bootstrap or getattr(args, "bootstrap", None),
                                     getattr(args, "client_config", None))
