"""The validation pass over superseded values (what ``doLoadGroupsAndOffsets`` would have failed on).

The broker decodes every record's value while it loads a partition, so a corrupt value fails the load
even when a later record overwrites it. The loader keeps only the last value per key and decodes
those at the end; to still report the others, every value is checked as it is folded:

- offset commits (types 0/1, nearly every record): a structural check without building objects, as
  strict as ``decode_offset_commit_value`` (a known version and a metadata length that fits); only a
  value that fails it is decoded, for the error message;
- everything else (group metadata, KIP-848 records; few per partition): decoded in full; for a
  ``consumer`` group, each member's subscription is also read as the load reads it (``embedded``), since
  bytes that fail that read outside a ``SchemaException`` fail the load of the whole partition.

A value found corrupt here is not reported again when it survives (a ``corrupt_embedded`` one survives
with the rest of its group, as far as it can be read).
"""

from __future__ import annotations

from offsetops.coordinator_core.embedded import fatal_finding
from offsetops.coordinator_core.schema import (
    SchemaError,
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_value,
)

_MAX_KNOWN_TYPE = 24


def offset_commit_value_ok(value: bytes) -> bool:
    """Whether an OffsetCommitValue (v0-v3 checked here, v4 decoded) would decode."""
    n = len(value)
    if n < 2 or value[0]:
        return False
    version = value[1]
    if version == 3:
        if n < 16 or value[14] & 0x80:
            return False
        return n >= 24 + ((value[14] << 8) | value[15])
    if version == 0 or version == 2 or version == 1:
        if n < 12 or value[10] & 0x80:
            return False
        return n >= (28 if version == 1 else 20) + ((value[10] << 8) | value[11])
    if version == 4:
        try:
            decode_offset_commit_value(value)
        except SchemaError:
            return False
        return True
    return False


def value_error(record_type: int, value: bytes) -> tuple[str, str] | None:
    """The ``(kind, reason)`` of a value of ``record_type`` that does not decode, else None.

    Not the exception itself: its traceback would keep the loader's frames (and the mapped segment they
    hold) alive past the end of the walk.
    """
    try:
        if record_type <= 1:
            if offset_commit_value_ok(value):
                return None
            decode_offset_commit_value(value)
        elif record_type == 2:
            fatal = fatal_finding(decode_group_metadata_value(value))
            if fatal is not None:
                return fatal.kind, fatal.reason
        elif record_type <= _MAX_KNOWN_TYPE:
            decode_value(record_type, value)
    except SchemaError as exc:
        return exc.kind, str(exc)
    return None


def value_label(record_type: int) -> str:
    """How the loader names a value of ``record_type`` in error reasons."""
    if record_type <= 1:
        return "offset commit value"
    if record_type == 2:
        return "group metadata value"
    return f"record type {record_type} value"
