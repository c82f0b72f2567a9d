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
