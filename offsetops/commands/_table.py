"""Aligned text tables and CSV for the operator views; every cell from the data is made safe."""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from offsetops.coordinator_core.escape import for_terminal

# A spreadsheet runs a cell starting with these as a formula (CSV injection); a leading quote disarms it.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> str:
    """A value as one table cell: ``-`` for None, control characters and newlines escaped, so a group
    id crafted with ANSI escapes or line breaks can neither repaint the terminal nor fake a row."""
    if value is None:
        return "-"
    return for_terminal(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO | None = None) -> None:
    stream: TextIO = sys.stdout if out is None else out
    body = [[cell(c) for c in r] for r in rows]
    grid = [list(headers), *body]
    widths = [max(len(r[i]) for r in grid) for i in range(len(headers))]
    for r in grid:
        stream.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def write_csv(headers: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO | None = None) -> None:
    writer = csv.writer(out or sys.stdout, lineterminator="\n")
    writer.writerow(headers)
    for r in rows:
        writer.writerow([_csv_cell(c) for c in r])
