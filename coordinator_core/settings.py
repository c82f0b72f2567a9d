"""Settings an operator gives on a command line: ``key=value`` pairs (``--conf``,
``OFFSETOPS_SPARK_CONF``), and the argument types and options every command shares.

Every argument type checks kind and range while the command line is parsed, so a bad value is one
line and exit 2 before anything runs: integers are integers (no ``1e26``), numbers are finite, each
has a range a real cluster can have (an absurd but parseable value is a range error), regular
expressions are bounded in size and repetition, URLs are parsed. Files of settings are Java
``.properties`` and go through ``kafka_client.parse_properties`` instead.
"""

from __future__ import annotations

import argparse
import math
import re
import urllib.parse
from collections.abc import Callable, Iterable

from offsetops.coordinator_core.records.batch import V2_MIN_SIZE
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES

INT32_MAX = 2**31 - 1  # Kafka's int fields: partitions, message.max.bytes, broker ids
INT64_MAX = 2**63 - 1  # Kafka's long fields: offsets, epoch-ms timestamps
#: The largest offsets.topic.num.partitions accepted (Kafka's default is 50; large clusters use 100-200).
MAX_OFFSETS_PARTITIONS = 10_000
#: The latest instant accepted as a time (9999-12-31T23:59:59.999Z, the last one ISO-8601 can write).
MAX_EPOCH_MS = 253_402_300_799_999
#: The longest duration accepted in ms (100 years): retention, thresholds, timeouts.
MAX_DURATION_MS = 100 * 365 * 24 * 3600 * 1000
MAX_REGEX_LENGTH = 1000
MAX_REGEX_REPEAT = 1000


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


def _shown(text: str) -> str:
    """An argument as an error message quotes it: repr (escaped), and cut when long."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:  # also more digits than int() converts
        raise argparse.ArgumentTypeError(f"not an integer: {_shown(text)}") from None


def int_range(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: an integer in ``[minimum, maximum]``."""

    def parse(text: str) -> int:
        value = _integer(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"must not be negative, got {value}"
                if minimum == 0
                else f"must be at least {minimum}, got {value}"
            )
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value

    parse.__name__ = "integer"
    return parse


def float_range(minimum: float, maximum: float, *, above_minimum: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in ``[minimum, maximum]`` (``(minimum, maximum]`` if
    ``above_minimum``); NaN and infinities are refused."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {_shown(text)}") from None
        low_ok = value > minimum if above_minimum else value >= minimum
        if not math.isfinite(value) or not low_ok or value > maximum:
            low = f"above {minimum:g}" if above_minimum else f"at least {minimum:g}"
            raise argparse.ArgumentTypeError(
                f"must be a finite number {low} and at most {maximum:g}, got {_shown(text)}"
            )
        return value

    parse.__name__ = "number"
    return parse


positive_int = int_range(1, INT64_MAX)
positive_int.__doc__ = "An argparse type: an integer from 1 to 2^63-1 (Kafka's long)."
non_negative_int = int_range(0, INT64_MAX)
non_negative_int.__doc__ = "An argparse type: an integer from 0 to 2^63-1 (an offset, an epoch-ms time)."
non_negative_float = float_range(0.0, 1e15)
non_negative_float.__doc__ = "An argparse type: a finite number >= 0."
duration_ms = int_range(1, MAX_DURATION_MS)
duration_ms.__doc__ = "An argparse type: a duration in ms, from 1 ms to 100 years."
offsets_partitions = int_range(1, MAX_OFFSETS_PARTITIONS)
offsets_partitions.__doc__ = "An argparse type: offsets.topic.num.partitions (1 to 10,000)."
partition_number = int_range(0, MAX_OFFSETS_PARTITIONS - 1)
partition_number.__doc__ = "An argparse type: a __consumer_offsets partition number."
broker_id = int_range(0, INT32_MAX)
broker_id.__doc__ = "An argparse type: a broker id (node.id / broker.id)."
hours = float_range(0.0, MAX_DURATION_MS / 3_600_000)
hours.__doc__ = "An argparse type: a number of hours, from 0 to 100 years."
minutes = int_range(1, MAX_DURATION_MS // 60_000)
minutes.__doc__ = "An argparse type: a whole number of minutes, from 1 to 100 years."
# The simulator's knobs (offsetops simulate, offsetops demo).
simulated_groups = int_range(0, 1_000_000)
simulated_days = float_range(0.0, 3650.0, above_minimum=True)
fraction = float_range(0.0, 1.0)
fraction.__doc__ = "An argparse type: a share from 0 to 1."


epoch_ms = int_range(0, MAX_EPOCH_MS)
epoch_ms.__doc__ = "An argparse type: an instant in epoch ms, from 1970 to the year 9999."


def key_value(text: str) -> str:
    """An argparse type: ``KEY=VALUE`` with a non-empty key (checked now; :func:`parse_pairs` splits it)."""
    key, sep, _value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expects KEY=VALUE, got {_shown(text)}")
    return text


def epoch_time(text: str) -> int:
    """An argparse type: a time (epoch ms, ISO-8601, or relative like -2h) from 1970 to the year 9999."""
    from offsetops.coordinator_core.timefmt import time_arg

    value = time_arg(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is before 1970 (epoch ms must not be negative)")
    if value > MAX_EPOCH_MS:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is after the year 9999")
    return value


_REPEAT = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def bounded_regex(text: str) -> re.Pattern[str]:
    """An argparse type: a regular expression of at most 1,000 characters whose ``{m,n}`` counts are at
    most 1,000, compiled (Python's ``re`` would otherwise take a huge count, or fail outside argparse)."""
    if len(text) > MAX_REGEX_LENGTH:
        raise argparse.ArgumentTypeError(f"regular expression longer than {MAX_REGEX_LENGTH} characters")
    for m in _REPEAT.finditer(text):
        counts = [int(c) for c in m.groups() if c]
        if any(c > MAX_REGEX_REPEAT for c in counts):
            raise argparse.ArgumentTypeError(
                f"regular expression repeats more than {MAX_REGEX_REPEAT} times: {_shown(m.group(0))}"
            )
    try:
        return re.compile(text)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression: {_shown(text)} ({exc})") from None


def http_url(text: str) -> str:
    """An argparse type: an ``http://`` or ``https://`` URL with a host (and a valid port, if any)."""
    try:
        url = urllib.parse.urlsplit(text.strip())
        port = url.port  # raises ValueError for a port out of range or not a number
        host = url.hostname
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a URL: {_shown(text)} ({exc})") from None
    if url.scheme not in ("http", "https") or not host:
        raise argparse.ArgumentTypeError(f"not an http(s) URL with a host: {_shown(text)}")
    if port == 0 or any(ord(c) < 0x21 or ord(c) == 0x7F for c in text.strip()):
        raise argparse.ArgumentTypeError(f"not a usable URL: {_shown(text)}")
    return text.strip()


def add_partition_filter(p: argparse.ArgumentParser) -> None:
    """``--partition N`` (repeat): only these ``__consumer_offsets`` partitions."""
    p.add_argument(
        "--partition", type=partition_number, action="append", metavar="N", help="only partition N (repeat)"
    )


def add_max_batch_bytes(p: argparse.ArgumentParser) -> None:
    """``--max-batch-bytes``: the bound on one batch, framed or decompressed (hostile input stops there)."""
    p.add_argument(
        "--max-batch-bytes",
        type=int_range(V2_MIN_SIZE, INT32_MAX),
        default=DEFAULT_MAX_BATCH_BYTES,
        metavar="N",
        help="largest batch accepted, framed or decompressed (message.max.bytes-style; default 32 MiB)",
    )
