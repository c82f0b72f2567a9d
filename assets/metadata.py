"""Metadata and report files every asset domain writes the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import MetadataValue
from offsetops.coordinator_core.atomic import write_json_atomic
from offsetops.coordinator_core.clock import Clock


def clock_metadata(clock: Clock) -> dict[str, Any]:
    """The instant the run evaluated as of (the same for every partition and asset of the run)."""
    return {
        "as_of": MetadataValue.timestamp(clock.as_of_ms / 1000),
        "as_of_ms": MetadataValue.int(clock.as_of_ms),
        "clock": clock.describe(),
    }


def write_json(path: Path, doc: Any) -> Path:
    """Write a report as indented JSON, atomically (a reader never sees half a report)."""
    return write_json_atomic(path, doc, default=str)
