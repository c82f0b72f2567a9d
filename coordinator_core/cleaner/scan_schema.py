"""The schema of a broker scan (``broker-<id>.json``), checked field by field before anything is judged.

A scan comes from a shared volume that any collector, or anyone who can write there, fills: every field
is checked for its type, for being a finite number and for its range before the central run uses it.
The checks are data, derived from the dataclasses a scan is read into (:class:`PartitionAudit`,
:class:`OpenTransaction`, :class:`DecodeError`), so a new field is checked the day it is added. A
partition entry that fails is that partition's :class:`PartitionFailure` (never HEALTHY); a file whose
frame fails (format, broker id, the partitions map) is refused whole. Paths a scan carries (``log_dir``,
a copy's ``path``) are labels for the report: the central run never opens them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable
from typing import Any

from offsetops.coordinator_core.cleaner.model import PartitionAudit
from offsetops.coordinator_core.sources.replicas import BatchDigest, ReplicaCopy

__all__ = [
    "INT64_MAX",
    "MAX_NOTES",
    "MAX_PARTITION",
    "MAX_TEXT",
    "ScanSchemaError",
    "check_dataclass_fields",
    "check_int",
    "check_label",
    "check_list",
    "check_mapping",
    "check_replica_copy",
]

INT64_MAX = (1 << 63) - 1
#: partition numbers of __consumer_offsets are non-negative Java ints
MAX_PARTITION = (1 << 31) - 1
#: the longest string a scan may carry in one field (a path, a note, a reason)
MAX_TEXT = 4096
#: the most notes a scan may carry (each a line of the report)
MAX_NOTES = 10_000
#: ratios of a partition audit: a share of the partition's bytes, in [0, 1]
_RATIOS = frozenset({"dirty_ratio", "unpinned_dirty_ratio"})


class ScanSchemaError(ValueError):
    """A scan field of the wrong type, not finite or out of range; the message names the field."""


def check_int(value: Any, where: str, *, low: int = 0, high: int = INT64_MAX) -> int:
    """An integer (not a bool) in ``[low, high]``: sizes and offsets are non-negative Java longs."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ScanSchemaError(f"{where} must be an integer, got {_kind(value)}")
    if not low <= value <= high:
        raise ScanSchemaError(f"{where} must be in [{low}, {high}], got {_short(value)}")
    return value


def check_float(value: Any, where: str, *, low: float = 0.0, high: float = math.inf) -> float:
    """A finite number in ``[low, high]`` (NaN and the infinities are refused: never HEALTHY)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ScanSchemaError(f"{where} must be a number, got {_kind(value)}")
    if not math.isfinite(value):
        raise ScanSchemaError(f"{where} must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise ScanSchemaError(f"{where} must be in [{low:g}, {high:g}], got {_short(value)}")
    return float(value)


def check_label(value: Any, where: str) -> str:
    """A string of at most :data:`MAX_TEXT` characters: shown in the report, never opened."""
    if not isinstance(value, str):
        raise ScanSchemaError(f"{where} must be a string, got {_kind(value)}")
    if len(value) > MAX_TEXT:
        raise ScanSchemaError(f"{where} is {len(value)} characters long (at most {MAX_TEXT})")
    return value


def check_bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ScanSchemaError(f"{where} must be true or false, got {_kind(value)}")
    return value


def check_list(value: Any, where: str, *, most: int | None = None) -> list[Any]:
    if not isinstance(value, list):
        raise ScanSchemaError(f"{where} must be a list, got {_kind(value)}")
    if most is not None and len(value) > most:
        raise ScanSchemaError(f"{where} has {len(value)} entries (at most {most})")
    return value


def check_mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScanSchemaError(f"{where} must be an object, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _int_range(name: str) -> tuple[int, int]:
    # times and ages may be negative (a record timestamp ahead of the clock, -1 for "none"): any long
    if name.endswith("_ms"):
        return -INT64_MAX - 1, INT64_MAX
    return 0, INT64_MAX


def _checker(hint: Any, name: str) -> Callable[[Any, str], Any]:
    """The check of one annotated field: its type, its range; None only where the type allows it."""
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        inner = [a for a in args if a is not type(None)]
        (one,) = inner
        check = _checker(one, name)
        return lambda v, where: None if v is None else check(v, where)
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = args
        check = _checker(item, name)
        return lambda v, where: [check(x, f"{where}[{i}]") for i, x in enumerate(check_list(v, where))]
    if origin is dict:
        _key, val = args
        check = _checker(val, name)
        return lambda v, where: {
            check_label(k, f"{where} key"): check(x, f"{where}.{k}")
            for k, x in check_mapping(v, where).items()
        }
    if hint is bool:
        return check_bool
    if hint is int:
        low, high = _int_range(name)
        return lambda v, where: check_int(v, where, low=low, high=high)
    if hint is float:
        high = 1.0 if name in _RATIOS else math.inf
        return lambda v, where: check_float(v, where, high=high)
    if hint is str:
        return check_label
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        nested: type = hint
        return lambda v, where: nested(**check_dataclass_fields(nested, v, where))
    raise TypeError(f"no scan check for {hint!r} ({name})")  # a new field type: add its check here


@functools.cache
def _field_checks(cls: type, skip: frozenset[str]) -> tuple[tuple[str, bool, Callable[[Any, str], Any]], ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append((f.name, required, _checker(hints[f.name], f.name)))
    return tuple(out)


def check_dataclass_fields(
    cls: type, doc: Any, where: str, *, skip: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The fields of ``cls`` from ``doc``, each checked against its annotation (ScanSchemaError else)."""
    doc = check_mapping(doc, where)
    out: dict[str, Any] = {}
    for name, required, check in _field_checks(cls, skip):
        if name not in doc:
            if required:
                raise ScanSchemaError(f"{where}.{name} is missing")
            continue
        out[name] = check(doc[name], f"{where}.{name}")
    return out


def check_partition_audit(doc: Any, where: str, *, central: frozenset[str]) -> PartitionAudit:
    """A scan's ``partitions[N].audit``, checked, as the :class:`PartitionAudit` it was written from."""
    fields = check_dataclass_fields(PartitionAudit, doc, where, skip=central)
    return PartitionAudit(**fields)


def check_partition_number(key: Any, where: str) -> int:
    """A key of a scan's ``partitions`` map: the partition number as decimal digits."""
    if not isinstance(key, str) or not key.isascii() or not key.isdigit() or len(key) > 10:
        raise ScanSchemaError(f"{where}: partition key {_short(key)} is not a partition number")
    return check_int(int(key), where, high=MAX_PARTITION)


def check_notes(value: Any, where: str) -> list[str]:
    return [check_label(n, f"{where}[{i}]") for i, n in enumerate(check_list(value, where, most=MAX_NOTES))]


def check_config(value: Any, where: str, *, depth: int = 2) -> dict[str, Any]:
    """The cleaner config a scan was made with (``{key: {"value": ..., "source": ...}}``): only compared
    with the audit's, so scalars, or objects of scalars, suffice."""
    doc = check_mapping(value, where)
    for key, item in doc.items():
        check_label(key, f"{where} key")
        at = f"{where}.{key}"
        if isinstance(item, dict) and depth > 1:
            check_config(item, at, depth=depth - 1)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ScanSchemaError(f"{at} must be a finite number, got {item!r}")
        elif not isinstance(item, (str, int, float, bool)) and item is not None:
            raise ScanSchemaError(f"{at} must be a string, number or boolean, got {_kind(item)}")
        elif isinstance(item, str):
            check_label(item, at)
    return dict(doc)


def check_replica_copy(broker_id: int, doc: Any, where: str) -> ReplicaCopy:
    """A scan's ``copies[i]``, checked, as the :class:`ReplicaCopy` it was written from."""
    d = check_mapping(doc, where)

    def pair(v: Any, at: str) -> tuple[int, int]:
        item = check_list(v, at)
        if len(item) != 2:
            _bad(at, "[epoch, start_offset]")
        e, start = item
        return check_int(e, f"{at}[0]", high=MAX_PARTITION), check_int(start, f"{at}[1]")

    until = d.get("digests_until")
    raw_digests = check_list(d.get("digests"), f"{where}.digests")
    return ReplicaCopy(
        broker_id=broker_id,
        partition=check_int(d.get("partition"), f"{where}.partition", high=MAX_PARTITION),
        path=check_label(d.get("path"), f"{where}.path"),
        size_bytes=check_int(d.get("size_bytes"), f"{where}.size_bytes"),
        leader_epochs=tuple(
            pair(v, f"{where}.leader_epochs[{i}]")
            for i, v in enumerate(check_list(d.get("leader_epochs"), f"{where}.leader_epochs"))
        ),
        log_start_offset=check_int(d.get("log_start_offset"), f"{where}.log_start_offset"),
        log_end_offset=check_int(d.get("log_end_offset"), f"{where}.log_end_offset"),
        first_dirty_offset=check_int(d.get("first_dirty_offset"), f"{where}.first_dirty_offset"),
        digests=_digests(raw_digests, f"{where}.digests"),
        digests_until=None if until is None else check_int(until, f"{where}.digests_until"),
    )


def _digests(raw: list[Any], where: str) -> tuple[BatchDigest, ...]:
    """The batch digests of a copy, each checked; every parsed entry is dropped as soon as it is
    converted, so the peak is about what is kept, not what was parsed plus what is kept."""
    raw.reverse()
    out: list[BatchDigest] = []
    while raw:
        item = raw.pop()
        if not _digest_ok(item):
            _check_digest(item, f"{where}[{len(out)}]")  # raises, naming the field
        out.append(BatchDigest(*item))
    return tuple(out)


def _digest_ok(item: Any) -> bool:
    if type(item) is not list or len(item) != 4:
        return False
    b, e, n, h = item
    return (
        type(b) is int
        and type(e) is int
        and type(n) is int
        and 0 <= b <= INT64_MAX
        and 0 <= e <= INT64_MAX
        and 0 <= n <= INT64_MAX
        and type(h) is str
        and len(h) <= MAX_TEXT
    )


def _check_digest(v: Any, at: str) -> None:
    item = check_list(v, at)
    if len(item) != 4:
        _bad(at, "[base_offset, last_offset, size, digest]")
    for i, x in enumerate(item[:3]):
        check_int(x, f"{at}[{i}]")
    check_label(item[3], f"{at}[3]")


def _bad(where: str, shape: str) -> Any:
    raise ScanSchemaError(f"{where} must be {shape}")
