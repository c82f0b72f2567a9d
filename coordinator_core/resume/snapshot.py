"""A :class:`~offsetops.coordinator_core.loader.PartitionFold` to and from what a state file holds.

The fold is saved before it is materialized (``PartitionFold.finish`` adds the decode errors of the
survivors and the counts by type, which every run computes again). The errors the read of the log
found are saved with it, except the listing's anomalies (every run lists the dir again) and those at
or after the position (the next run reads those bytes again, and reports them again).
"""

from __future__ import annotations

from typing import Any

from offsetops.coordinator_core.errors import DecodeError, ErrorLog
from offsetops.coordinator_core.loader import PartitionFold, group_part
from offsetops.coordinator_core.resume.checked import MAX_TEXT, flag, int_in, obj, opt_int, rows, text
from offsetops.coordinator_core.resume.codec import StateTables

__all__ = ["error_of_row", "error_row", "fold_meta", "fold_tables", "orphan_groups", "restore_fold"]

_COUNTERS = (
    "segments",
    "batches",
    "records",
    "bytes",
    "tombstones",
    "control_records",
    "transactional_batches",
)


def fold_tables(fold: PartitionFold) -> StateTables:
    """The fold's containers (shared, not copied: encode them before the fold goes on)."""
    return StateTables(
        latest=fold.latest,
        open_txns=fold.open_txns,
        created=fold.created,
        tomb_max=fold.tomb_max,
        invalid_values=frozenset(fold.invalid_values),
    )


def fold_meta(fold: PartitionFold, errors: list[DecodeError]) -> dict[str, Any]:
    """The fold's counters, types, files and markers, and ``errors`` (the ones to keep), as JSON."""
    fold._flush_types()
    stats = fold.stats
    return {
        "counters": {name: getattr(stats, name) for name in _COUNTERS},
        "first_offset": stats.first_offset,
        "last_offset": stats.last_offset,
        "type_counts": sorted([t, n] for t, n in fold.type_counts.items()),
        "files": [[first, file] for first, file in fold.files],
        "first_marker": [[pid, off, commit] for pid, (off, commit) in fold.first_marker.items()],
        "errors": [error_row(e) for e in errors],
    }


def error_row(e: DecodeError) -> list[Any]:
    """An error as a state file's row (ValueError for a text too long to be read back)."""
    if max(len(e.kind), len(e.reason), len(e.file or "")) > MAX_TEXT:
        raise ValueError(f"an error reason over {MAX_TEXT} characters cannot be saved ({e.kind})")
    return [e.kind, e.reason, e.file, e.partition, e.position, e.offset, e.skipped_bytes, e.count]


def restore_fold(
    doc: Any, tables: StateTables, *, partition: int, semantics: str, anomalies: tuple[DecodeError, ...]
) -> PartitionFold:
    """The fold a state file holds, every field checked (StateFormatError otherwise); the listing's
    ``anomalies`` of this run come first among its errors, as in a fresh read."""
    doc = obj(doc, "fold")
    fold = PartitionFold(partition=partition, semantics=semantics)
    counters = obj(doc.get("counters"), "counters")
    for name in _COUNTERS:
        setattr(fold.stats, name, int_in(counters.get(name), name))
    fold.stats.first_offset = opt_int(doc.get("first_offset"), "first_offset")
    fold.stats.last_offset = opt_int(doc.get("last_offset"), "last_offset")
    types = rows(doc.get("type_counts"), "type_counts", 2)
    fold.type_counts = {int_in(t, "type", lo=-1): int_in(n, "type count") for t, n in types}
    files = rows(doc.get("files"), "files", 2)
    fold.files = [(int_in(first, "file offset"), text(file, "file")) for first, file in files]
    fold.first_marker = {
        int_in(pid, "producer id", lo=-1): (int_in(off, "marker offset"), flag(commit, "a commit flag"))
        for pid, off, commit in rows(doc.get("first_marker"), "first_marker", 3)
    }
    errors = ErrorLog(anomalies)
    errors.extend(error_of_row(row) for row in rows(doc.get("errors"), "errors", 8))
    fold.stats.errors = errors
    fold.latest.update(tables.latest)
    fold.open_txns.update((pid, dict(p)) for pid, p in tables.open_txns.items())
    fold.created.update(tables.created)
    fold.tomb_max.update(tables.tomb_max)
    fold.invalid_values.update(tables.invalid_values)
    fold._reindex_txns()
    return fold


def error_of_row(row: list[Any]) -> DecodeError:
    """An error of a state file's row, every field checked (StateFormatError otherwise)."""
    kind, reason, file, part, pos, off, skipped, count = row
    return DecodeError(
        text(kind, "error kind"),
        text(reason, "error reason"),
        None if file is None else text(file, "error file"),
        opt_int(part, "error partition"),
        opt_int(pos, "error position"),
        opt_int(off, "error offset", lo=-(1 << 63)),
        opt_int(skipped, "skipped bytes"),
        int_in(count, "error count", lo=1),
    )


def orphan_groups(fold: PartitionFold) -> int:
    """How many groups (Java semantics) exist only because an offset commit that does not survive
    created them (``OffsetMetadataManager.replay``): no surviving record, staged or not, names them."""
    if not fold.created:
        return 0
    named = {group_part(k) for k, e in fold.latest.items() if e[3] is not None}
    for pending in fold.open_txns.values():
        named.update(group_part(k) for k, e in pending.items() if e[3] is not None)
    return sum(1 for g in fold.created if g not in named)
