"""Settings an operator gives as text: ``key=value`` pairs (``--conf``, ``OFFSETOPS_SPARK_CONF``) and
the values every command takes, parsed and range-checked here; a ValueError names what is wrong.

Every value is checked for kind and range, wherever it comes from (a flag, an ``OFFSETOPS_*``
variable, a config file): integers are integers (no ``1e26``), numbers are finite, each has a range a
real cluster can have (an absurd but parseable value is a range error), regular expressions are
bounded in size and repetition, URLs are parsed. The command-line options themselves (argparse)
belong to the front ends: the ``offsetops`` command and the Spark jobs share them from
``pipelines/cli_args.py``, which turns these parsers into argument types. Files of settings are Java
``.properties`` and go through ``kafka_client.parse_properties`` instead.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Callable, Iterable

from offsetops.coordinator_core.records.batch import V2_MIN_SIZE

INT32_MAX = 2**31 - 1  # Kafka's int fields: partitions, message.max.bytes, broker ids
INT64_MAX = 2**63 - 1  # Kafka's long fields: offsets, epoch-ms timestamps
#: The largest offsets.topic.num.partitions accepted (Kafka's default is 50; large clusters use 100-200).
MAX_OFFSETS_PARTITIONS = 10_000
#: The latest instant accepted as a time (9999-12-31T23:59:59.999Z, the last one ISO-8601 can write).
MAX_EPOCH_MS = 253_402_300_799_999
#: The longest duration accepted in ms (100 years): retention, thresholds, timeouts.
MAX_DURATION_MS = 100 * 365 * 24 * 3600 * 1000
#: The longest expiry forecast, in hours (one leap year).
MAX_FORECAST_HOURS = 24 * 366
MAX_REGEX_LENGTH = 1000
MAX_REGEX_REPEAT = 1000


#: ``offsets.retention.minutes`` default since 2.0.0 (KIP-186): 7 days.
DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000

LEGACY = "legacy"  # the Scala GroupCoordinator, Kafka up to 3.x
KIP848 = "kip848"  # the Java group coordinator, the only one in Kafka 4.x
COORDINATORS = (LEGACY, KIP848)


def coordinator_for_broker_version(version: str | None) -> str:
    """The coordinator a broker of ``version`` runs by default: Scala up to 3.x, Java from 4.0."""
    if not version:
        return KIP848
    try:
        major = int(version.strip().lstrip("v").split(".")[0])
    except ValueError as exc:
        raise ValueError(f"broker version {version!r} is not like 3.9 or 4.0.0") from exc
    return KIP848 if major >= 4 else LEGACY


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
    """A value as an error message quotes it: repr (escaped), and cut when long."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:  # also more digits than int() converts
        raise ValueError(f"not an integer: {_shown(text)}") from None


def int_in_range(minimum: int, maximum: int, *, name: str = "integer") -> Callable[[str], int]:
    """A parser: an integer in ``[minimum, maximum]``; ValueError otherwise."""

    def parse(text: str) -> int:
        value = _integer(text)
        if value < minimum:
            raise ValueError(
                f"must not be negative, got {value}"
                if minimum == 0
                else f"must be at least {minimum}, got {value}"
            )
        if value > maximum:
            raise ValueError(f"must be at most {maximum:,}, got {value:,}")
        return value

    parse.__name__ = name
    return parse


def float_in_range(
    minimum: float, maximum: float, *, above_minimum: bool = False, name: str = "number"
) -> Callable[[str], float]:
    """A parser: a finite number in ``[minimum, maximum]`` (``(minimum, maximum]`` if ``above_minimum``);
    NaN and infinities are refused with a ValueError."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"not a number: {_shown(text)}") from None
        low_ok = value > minimum if above_minimum else value >= minimum
        if not math.isfinite(value) or not low_ok or value > maximum:
            low = f"above {minimum:g}" if above_minimum else f"at least {minimum:g}"
            raise ValueError(f"must be a finite number {low} and at most {maximum:g}, got {_shown(text)}")
        return value

    parse.__name__ = name
    return parse


#: An integer from 1 to 2^63-1 (Kafka's long: a count, a size in bytes); ValueError otherwise.
parse_positive_int = int_in_range(1, INT64_MAX, name="parse_positive_int")
#: An integer from 0 to 2^63-1 (an offset, an epoch-ms time); ValueError otherwise.
parse_non_negative_int = int_in_range(0, INT64_MAX, name="parse_non_negative_int")
#: A finite number >= 0.
parse_non_negative_float = float_in_range(0.0, 1e15, name="parse_non_negative_float")
#: A duration in ms, from 1 ms to 100 years.
parse_duration_ms = int_in_range(1, MAX_DURATION_MS, name="parse_duration_ms")
#: offsets.retention.minutes: Kafka's int, at least 1 (a broker may set 2^31-1 to keep offsets "forever").
parse_retention_minutes = int_in_range(1, INT32_MAX, name="parse_retention_minutes")
#: The offsets retention in ms: as many as offsets.retention.minutes allows.
parse_retention_ms = int_in_range(1, INT32_MAX * 60_000, name="parse_retention_ms")
#: offsets.topic.num.partitions (1 to 10,000).
parse_offsets_partitions = int_in_range(1, MAX_OFFSETS_PARTITIONS, name="parse_offsets_partitions")
#: A __consumer_offsets partition number.
parse_partition_number = int_in_range(0, MAX_OFFSETS_PARTITIONS - 1, name="parse_partition_number")
#: A broker id (node.id / broker.id).
parse_broker_id = int_in_range(0, INT32_MAX, name="parse_broker_id")
#: A number of hours, from 0 to 100 years.
parse_hours = float_in_range(0.0, MAX_DURATION_MS / 3_600_000, name="parse_hours")
#: The expiry forecast's horizon in hours: above 0, at most one leap year.
parse_forecast_hours = float_in_range(
    0.0, MAX_FORECAST_HOURS, above_minimum=True, name="parse_forecast_hours"
)
#: The expiry forecast's horizon in ms: above 0, at most one leap year.
parse_forecast_horizon_ms = int_in_range(1, MAX_FORECAST_HOURS * 3_600_000, name="parse_forecast_horizon_ms")
#: A whole number of minutes, from 1 to 100 years.
parse_minutes = int_in_range(1, MAX_DURATION_MS // 60_000, name="parse_minutes")
#: An instant in epoch ms, from 1970 to the year 9999.
parse_epoch_ms = int_in_range(0, MAX_EPOCH_MS, name="parse_epoch_ms")
#: The bound on one batch (message.max.bytes-style): from the smallest v2 batch to 2^31-1.
parse_max_batch_bytes = int_in_range(V2_MIN_SIZE, INT32_MAX, name="parse_max_batch_bytes")
#: A share from 0 to 1.
parse_fraction = float_in_range(0.0, 1.0, name="parse_fraction")


def parse_state_dir(text: str) -> str:
    """A directory path for the resume state (``--state``, ``OFFSETOPS_RESUME_STATE_DIR``): not empty, at most
    4096 characters, no NUL."""
    path = text.strip()
    if not path or len(path) > 4096 or "\x00" in path:
        raise ValueError(f"{_shown(text)} is not a directory path (1 to 4096 characters, no NUL)")
    return path


def parse_key_value(text: str) -> str:
    """``KEY=VALUE`` with a non-empty key (checked now; :func:`parse_pairs` splits it)."""
    key, sep, _value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expects KEY=VALUE, got {_shown(text)}")
    return text


def parse_epoch_time(text: str) -> int:
    """A time (epoch ms, ISO-8601, or relative like -2h, taken against the wall clock) from 1970 to the
    year 9999."""
    from offsetops.coordinator_core.timefmt import parse_time

    value = parse_time(text)
    if value < 0:
        raise ValueError(f"{_shown(text)} is before 1970 (epoch ms must not be negative)")
    if value > MAX_EPOCH_MS:
        raise ValueError(f"{_shown(text)} is after the year 9999")
    return value


_REPEAT = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def parse_bounded_regex(text: str) -> re.Pattern[str]:
    """A regular expression of at most 1,000 characters whose ``{m,n}`` counts are at most 1,000,
    compiled (Python's ``re`` would otherwise take a huge count, or fail with OverflowError)."""
    if len(text) > MAX_REGEX_LENGTH:
        raise ValueError(f"regular expression longer than {MAX_REGEX_LENGTH} characters")
    for m in _REPEAT.finditer(text):
        counts = [int(c) for c in m.groups() if c]
        if any(c > MAX_REGEX_REPEAT for c in counts):
            raise ValueError(
                f"regular expression repeats more than {MAX_REGEX_REPEAT} times: {_shown(m.group(0))}"
            )
    try:
        return re.compile(text)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise ValueError(f"not a regular expression: {_shown(text)} ({exc})") from None


def parse_http_url(text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host (and a valid port, if any)."""
    try:
        url = urllib.parse.urlsplit(text.strip())
        port = url.port  # raises ValueError for a port out of range or not a number
        host = url.hostname
    except ValueError as exc:
        raise ValueError(f"not a URL: {_shown(text)} ({exc})") from None
    if url.scheme not in ("http", "https") or not host:
        raise ValueError(f"not an http(s) URL with a host: {_shown(text)}")
    if port == 0 or any(ord(c) < 0x21 or ord(c) == 0x7F for c in text.strip()):
        raise ValueError(f"not a usable URL: {_shown(text)}")
    return text.strip()
