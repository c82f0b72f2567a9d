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


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0 (a duration in ms, an epoch-ms time, a partition number)."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def add_partition_filter(p: argparse.ArgumentParser) -> None:
    """``--partition N`` (repeat): only these ``__consumer_offsets`` partitions."""
    p.add_argument(
        "--partition", type=non_negative_int, action="append", metavar="N", help="only partition N (repeat)"
    )


def add_max_batch_bytes(p: argparse.ArgumentParser, *, default: int | None = DEFAULT_MAX_BATCH_BYTES) -> None:
    """``--max-batch-bytes``: the bound on one batch, framed or decompressed (hostile input stops there).

    ``default=None`` leaves it to the run model (``OFFSETOPS_MAX_BATCH_BYTES``, the config file)."""
    p.add_argument(
        "--max-batch-bytes",
        type=positive_int,
        default=default,
        metavar="N",
        help="largest batch accepted, framed or decompressed (message.max.bytes-style; default 32 MiB)",
    )
