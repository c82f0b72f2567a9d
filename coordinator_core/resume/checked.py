"""Checked reads of a state file's JSON meta: each value of the kind and range it must have, or a
``StateFormatError`` naming the field (the file is untrusted, whatever its checksum says).

The broker scans' checks (``cleaner.scan_schema``) have the same shape but live in the cleaner package,
whose import a resumed run should not pay for; these raise the state file's error."""

from __future__ import annotations

from typing import Any

from offsetops.coordinator_core.resume.codec import StateFormatError

#: the longest string a state file's meta may carry in one field (a path, an error's reason)
MAX_TEXT = 4096
_INT64 = 1 << 63


def bad(reason: str) -> StateFormatError:
    return StateFormatError("state_corrupt", f"meta: {reason}")


def int_in(value: Any, what: str, lo: int = 0) -> int:
    """An int from ``lo`` to 2^63-1 (``bool`` is not one)."""
    if type(value) is not int or not lo <= value < _INT64:
        raise bad(f"{what} is not an integer from {lo} to 2^63-1")
    return value


def opt_int(value: Any, what: str, lo: int = 0) -> int | None:
    return None if value is None else int_in(value, what, lo)


def text(value: Any, what: str) -> str:
    """A string of at most :data:`MAX_TEXT` characters."""
    if type(value) is not str or len(value) > MAX_TEXT:
        raise bad(f"{what} is not a string of at most {MAX_TEXT} characters")
    return value


def finite(value: Any, what: str) -> float:
    """A finite number from 0 (a float, or an int JSON wrote without a point)."""
    if type(value) not in (int, float) or not 0 <= value < float("inf"):
        raise bad(f"{what} is not a finite number from 0")
    return float(value)


def flag(value: Any, what: str) -> bool:
    if type(value) is not bool:
        raise bad(f"{what} is not true or false")
    return value


def obj(value: Any, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise bad(f"{what} is not an object")
    return value


def rows(value: Any, what: str, width: int) -> list[list[Any]]:
    """A list of ``width``-item lists."""
    if type(value) is not list or any(type(r) is not list or len(r) != width for r in value):
        raise bad(f"{what} is not a list of {width}-item lists")
    return value
