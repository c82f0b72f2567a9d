"""Settings an operator gives on a command line: ``key=value`` pairs (``--conf``,
``OFFSETOPS_SPARK_CONF``), and the argument types and options every command shares.

Files of settings are Java ``.properties`` and go through ``kafka_client.parse_properties`` instead.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES


def parse_pairs(items: Iterable[str] | None, *, option: str) -> dict[str, str]:
    """``["k=v", ...]`` to a dict (the last of a repeated key wins); ``option`` names the source in
    the ValueError a pair without ``=`` or without a key raises."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{option} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_max_batch_bytes(p: argparse.ArgumentParser) -> None:
    """``--max-batch-bytes``: the bound on one batch, framed or decompressed (hostile input stops there)."""
    p.add_argument(
        "--max-batch-bytes",
        type=positive_int,
        default=DEFAULT_MAX_BATCH_BYTES,
        metavar="N",
        help="largest batch accepted, framed or decompressed (message.max.bytes-style; default 32 MiB)",
    )
