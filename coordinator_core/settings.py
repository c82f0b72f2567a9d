"""Settings an operator gives as text: ``key=value`` pairs (``--conf``, ``OFFSETOPS_SPARK_CONF``) and
the integers every command takes, parsed and checked here; a ValueError names what is wrong.

The command-line options themselves (argparse) belong to the front ends: the ``offsetops`` command
and the Spark jobs share them from ``pipelines/cli_args.py``. Files of settings are Java
``.properties`` and go through ``kafka_client.parse_properties`` instead.
"""

from __future__ import annotations

from collections.abc import Iterable


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
        raise ValueError(f"not an integer: {text!r}") from None


def parse_positive_int(text: str) -> int:
    """An integer >= 1 (a count, a size in bytes); ValueError otherwise."""
    value = _integer(text)
    if value < 1:
        raise ValueError(f"must be at least 1, got {value}")
    return value


def parse_non_negative_int(text: str) -> int:
    """An integer >= 0 (a duration in ms, an epoch-ms time, a partition number); ValueError otherwise."""
    value = _integer(text)
    if value < 0:
        raise ValueError(f"must not be negative, got {value}")
    return value
