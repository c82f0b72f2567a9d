"""Checked reads of a state file's JSON meta: each value of the kind and range it must have, or a
``StateFormatError`` naming the field (the file is untrusted, whatever its checksum says). The checks
are the broker scans' (``cleaner.scan_schema``), with this file's error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from offsetops.coordinator_core.cleaner.scan_schema import (
    ScanSchemaError,
    check_bool,
    check_int,
    check_label,
    check_list,
    check_mapping,
)
from offsetops.coordinator_core.resume.codec import StateFormatError

T = TypeVar("T")


def _checked(check: Callable[..., T], *args: Any, **kw: Any) -> T:
    try:
        return check(*args, **kw)
    except ScanSchemaError as exc:
        raise StateFormatError("state_corrupt", f"meta: {exc}") from None


def int_in(value: Any, what: str, lo: int = 0) -> int:
    """An int from ``lo`` to 2^63-1 (``bool`` is not one)."""
    return _checked(check_int, value, what, low=lo)


def opt_int(value: Any, what: str, lo: int = 0) -> int | None:
    return None if value is None else int_in(value, what, lo)


def text(value: Any, what: str) -> str:
    """A string of at most 4096 characters."""
    return _checked(check_label, value, what)


def flag(value: Any, what: str) -> bool:
    return _checked(check_bool, value, what)


def obj(value: Any, what: str) -> dict[str, Any]:
    return _checked(check_mapping, value, what)


def rows(value: Any, what: str, width: int) -> list[list[Any]]:
    """A list of ``width``-item lists."""
    for row in _checked(check_list, value, what):
        if len(_checked(check_list, row, f"an entry of {what}")) != width:
            raise StateFormatError("state_corrupt", f"meta: an entry of {what} has not {width} items")
    return value
