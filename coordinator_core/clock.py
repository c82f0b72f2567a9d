"""The one clock every time-based rule is evaluated against (expiration, hanging transactions, ages).

A real broker's log dir is evaluated at the wall clock. A log dir that is a snapshot of another
instant declares that instant in ``offsetops-clock.json`` next to its partition dirs (the simulator
writes one: its data ends at the simulated time, so "now" is that time, not today). An explicit
instant (``--now``, ``OFFSETOPS_AS_OF_MS``) beats both. The demo, the Dagster assets and the CLI all
resolve the clock through :func:`resolve_clock`, so the same data gives the same verdict everywhere.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from offsetops.coordinator_core.atomic import write_json_atomic
from offsetops.coordinator_core.untrusted import UntrustedFileError, read_regular_file

CLOCK_FILE = "offsetops-clock.json"
CLOCK_FORMAT = 1

#: where the instant came from
CONFIGURED, DECLARED, WALL = "configured", "declared", "wall"


def iso_utc(ms: int | None) -> str | None:
    """``2023-11-14T22:13:20.000Z`` (UTC, millisecond precision), or None."""
    if ms is None:
        return None
    try:
        dt = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None  # a timestamp outside what datetime can show (corrupt or -1 sentinels)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ClockError(ValueError):
    """A clock declaration that cannot be used; the message names the file and the reason."""


@dataclass(frozen=True, slots=True)
class Clock:
    """The instant a run evaluates as of, and where it came from."""

    as_of_ms: int
    source: str
    detail: str
    #: the Kafka version of the broker whose log dir declared the instant, when it says so
    broker_version: str | None = None

    @property
    def iso(self) -> str:
        return iso_utc(self.as_of_ms) or str(self.as_of_ms)

    def describe(self) -> str:
        """``2023-11-15T04:13:20.000Z (declared by /data/logdir/offsetops-clock.json)``."""
        return f"{self.iso} ({self.detail})"


def _declaration_path(log_dir: str | os.PathLike[str]) -> Path | None:
    """The declaration of a log dir, or of the log dir holding a single partition dir."""
    path = Path(log_dir)
    for candidate in (path / CLOCK_FILE, path.parent / CLOCK_FILE):
        if os.path.lexists(candidate):
            return candidate
    return None


def read_declared_clock(log_dir: str | os.PathLike[str] | None) -> Clock | None:
    """The instant ``log_dir`` declares, or None (a real broker's log dir, a URI, a live cluster)."""
    if not log_dir or "://" in str(log_dir):
        return None
    path = _declaration_path(log_dir)
    if path is None:
        return None
    try:
        raw = read_regular_file(path, kind="clock")
    except OSError as exc:  # an UntrustedFileError names the file and the reason
        raise ClockError(str(exc) if isinstance(exc, UntrustedFileError) else f"{path}: {exc}") from None
    try:
        doc = json.loads(raw)
        as_of_ms = doc["as_of_ms"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ClockError(f"{path}: not a clock declaration ({exc.__class__.__name__}: {exc})") from exc
    if not isinstance(as_of_ms, int) or isinstance(as_of_ms, bool) or as_of_ms < 0:
        raise ClockError(f"{path}: as_of_ms must be a non-negative integer (epoch ms), got {as_of_ms!r}")
    by = doc.get("declared_by")
    version = doc.get("broker_version")
    return Clock(
        as_of_ms,
        DECLARED,
        f"declared by {path}" + (f" ({by})" if isinstance(by, str) else ""),
        version if isinstance(version, str) else None,
    )


def resolve_clock(
    log_dir: str | os.PathLike[str] | None = None,
    *,
    configured_ms: int | None = None,
    configured_by: str = "configured",
    wall_ms: int | None = None,
) -> Clock:
    """The clock for evaluating ``log_dir``: configured, else declared by the log dir, else the wall."""
    if configured_ms is not None:
        return Clock(int(configured_ms), CONFIGURED, configured_by)
    declared = read_declared_clock(log_dir)
    if declared is not None:
        return declared
    return Clock(wall_clock_ms() if wall_ms is None else wall_ms, WALL, "wall clock")


def wall_clock_ms() -> int:
    """The wall clock in epoch ms: the one place the core reads it (front ends, journal event times)."""
    return int(time.time() * 1000)


def write_clock_declaration(
    log_dir: str | os.PathLike[str], as_of_ms: int, *, declared_by: str, broker_version: str | None = None
) -> Path:
    """Declare that ``log_dir`` is evaluated as of ``as_of_ms`` (written atomically), and optionally the
    Kafka version of the broker that wrote it (the run model's broker version, below any setting)."""
    path = Path(log_dir) / CLOCK_FILE
    doc = {
        "format": CLOCK_FORMAT,
        "as_of_ms": int(as_of_ms),
        "as_of": iso_utc(as_of_ms),
        "declared_by": declared_by,
    }
    if broker_version:
        doc["broker_version"] = broker_version
    return write_json_atomic(path, doc)
