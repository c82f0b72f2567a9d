"""Settings an operator gives as ``key=value`` pairs (``--conf``, ``OFFSETOPS_SPARK_CONF``).

Files of settings are Java ``.properties`` and go through ``kafka_client.parse_properties`` instead.
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
