"""Times as operators read and type them: ISO-8601, "3 d 4 h ago", and relative forms like ``-2h``.

Every output keeps epoch milliseconds (what Kafka stores) and adds these beside it; every time option
accepts epoch ms, ISO-8601 and relative forms, so an on-call engineer never converts by hand.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from offsetops.coordinator_core.clock import iso_utc, wall_clock_ms

_UNIT_MS = {
    "ms": 1,
    "s": 1000,
    "sec": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 7 * 86_400_000,
}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|sec|min|s|m|h|d|w)")
_RELATIVE = re.compile(r"([+-])\s*((?:\d+(?:\.\d+)?\s*(?:ms|sec|min|s|m|h|d|w)\s*)+)")


def now_ms() -> int:
    """The wall clock, for relative times a user types (``-2h``); read through the one clock."""
    return wall_clock_ms()


def format_duration(ms: int | float) -> str:
    """``3 d 4 h``, ``26 h``, ``5 h 12 min``, ``7 min``, ``12 s``: how an on-call engineer reads an age."""
    s = int(ms // 1000)
    if s < 60:
        return f"{s} s"
    m = s // 60
    if m < 60:
        return f"{m} min"
    h = m // 60
    if h < 10:
        return f"{h} h {m % 60} min" if m % 60 else f"{h} h"
    if h < 48:
        return f"{h} h"
    return f"{h // 24} d {h % 24} h" if h % 24 else f"{h // 24} d"


def ago(ms: int | None, now: int) -> str | None:
    """``3 d 4 h ago`` for a past time, ``in 2 h`` for a future one, relative to ``now`` (epoch ms)."""
    if ms is None:
        return None
    delta = now - ms
    return f"{format_duration(delta)} ago" if delta >= 0 else f"in {format_duration(-delta)}"


def describe_time(ms: int | None, now: int) -> str:
    """``1700000000000 (2023-11-14T22:13:20.000Z, 3 d 4 h ago)``: epoch ms with its human forms."""
    if ms is None:
        return "-"
    iso = iso_utc(ms)
    return f"{ms} ({iso}, {ago(ms, now)})" if iso else str(ms)


def time_json(ms: int | None, now: int) -> dict[str, object]:
    """The three forms of one time for JSON output: ``{"ms", "iso", "age"}``."""
    return {"ms": ms, "iso": iso_utc(ms), "age": ago(ms, now)}


def parse_duration(text: str) -> int:
    """``2h``, ``3d4h``, ``90min``, ``1500ms`` -> milliseconds."""
    body = text.strip().lower()
    if not body or not re.fullmatch(r"(?:\s*\d+(?:\.\d+)?\s*(?:ms|sec|min|s|m|h|d|w)\s*)+", body):
        raise ValueError(f"not a duration: {text!r} (try 2h, 3d4h, 90min, 30s)")
    return int(sum(float(n) * _UNIT_MS[u] for n, u in _PART.findall(body)))


def parse_time(text: str, *, now: int | None = None) -> int:
    """Parse a point in time into epoch milliseconds.

    Accepted: ``now``; epoch milliseconds (``1700000000000`` or ``1700000000000ms``); ISO-8601
    (``2023-11-14T22:13:20Z``, ``2023-11-14 22:13``, ``2023-11-14``; no zone means UTC, as Kafka's
    tools print UTC); relative to now (``-2h``, ``-3d4h``, ``+30min``).
    """
    body = text.strip()
    base = now_ms() if now is None else now
    if body.lower() == "now":
        return base
    digits = body[:-2] if body.lower().endswith("ms") else body
    if re.fullmatch(r"-?\d+", digits):
        return int(digits)
    rel = _RELATIVE.fullmatch(body.lower())
    if rel:
        delta = parse_duration(rel.group(2))
        return base - delta if rel.group(1) == "-" else base + delta
    try:
        dt = datetime.fromisoformat(body.replace(" ", "T", 1) if "T" not in body else body)
    except ValueError:
        raise ValueError(
            f"not a time: {text!r} (give epoch ms, ISO-8601 like 2024-05-01T12:00:00Z, or relative like -2h)"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)
