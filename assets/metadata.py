"""Metadata and report files every asset domain writes the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import MetadataValue
from offsetops.coordinator_core.atomic import write_json_atomic
from offsetops.coordinator_core.clock import Clock
from offsetops.coordinator_core.run import RunSettings


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


def settings_metadata(run: RunSettings) -> dict[str, Any]:
    """The settings the asset was computed with and where each came from (the run model's JSON), and
    one line for the UI's summary."""
    return {"settings": MetadataValue.json(run.to_json()), "settings_summary": run.summary()}


def run_config_flags(config: Any, owner: str, fields: dict[str, str]) -> dict[str, tuple[Any, str]]:
    """The run-model flags a Dagster run config sets: ``{setting: (value, "Dagster run config ...")}``
    for each of ``fields`` (``{setting: config field}``) that is not None."""
    return {
        name: (getattr(config, attr), f"Dagster run config {owner}.{attr}")
        for name, attr in fields.items()
        if getattr(config, attr) is not None
    }
