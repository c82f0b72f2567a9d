"""Metadata and report files every asset domain writes the same way."""

from __future__ import annotations

from collections.abc import Mapping
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


#: Where each asset that reads segment bytes records what its latest run read (``<asset>.json``).
BYTES_READ_DIR = "bytes_read"


def record_bytes_read(
    reports: Path, asset: str, run_id: str, per_partition: Mapping[int, int]
) -> dict[str, Any]:
    """Record the segment bytes ``asset`` read in run ``run_id`` (per offsets partition) for the topic
    summary, and return the run's total as metadata, ``run_bytes_read`` with a human twin (each
    partition's own figure is its ``bytes_read``)."""
    from offsetops.coordinator_core.cleaner.model import format_bytes

    total = sum(per_partition.values())
    doc = {
        "asset": asset,
        "run_id": run_id,
        "bytes_read": total,
        "partitions": {str(p): n for p, n in sorted(per_partition.items())},
    }
    write_json(reports / BYTES_READ_DIR / f"{asset}.json", doc)
    return {"run_bytes_read": MetadataValue.int(total), "run_read": format_bytes(total)}


def _run_record(path: Path, run_id: str) -> dict[str, Any] | None:
    """The record :func:`record_bytes_read` wrote at ``path``, when it is run ``run_id``'s (None for
    another run's; OSError and ValueError, of a file that cannot be read as JSON, propagate)."""
    import json

    from offsetops.coordinator_core.untrusted import read_regular_file

    doc = json.loads(read_regular_file(path, kind="report"))
    return doc if isinstance(doc, dict) and doc.get("run_id") == run_id else None


def run_bytes_read(reports: Path, run_id: str) -> dict[str, int]:
    """Segment bytes each asset read in run ``run_id`` (assets that read none, or ran in another run,
    are left out); a record that is not what :func:`record_bytes_read` writes raises ``ValueError``."""
    out: dict[str, int] = {}
    folder = reports / BYTES_READ_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        doc = _run_record(path, run_id)
        if doc is None:
            continue
        total = doc.get("bytes_read")
        if not isinstance(total, int) or isinstance(total, bool) or total < 0:
            raise ValueError(f"{path}: bytes_read is {total!r}, not a byte count")
        out[path.stem] = total
    return out


def bytes_read_by(reports: Path, asset: str, run_id: str) -> dict[int, int]:
    """Per offsets partition, the segment bytes ``asset`` read in run ``run_id``, as
    :func:`record_bytes_read` recorded them (empty when its latest record is another run's, or is not
    such a record: then nothing is claimed)."""
    try:
        doc = _run_record(reports / BYTES_READ_DIR / f"{asset}.json", run_id)
    except (OSError, ValueError):
        return {}
    parts = doc.get("partitions") if doc is not None else None
    if not isinstance(parts, dict):
        return {}
    out = {}
    for key, n in parts.items():
        if str(key).isdigit() and isinstance(n, int) and not isinstance(n, bool) and n >= 0:
            out[int(key)] = n
    return out
