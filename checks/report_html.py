"""HTML building blocks of the operator report: inline CSS, escaping, badges, cards, cells.

Everything that comes from the data goes through :func:`esc`; the page has no script and no external
reference (its Content-Security-Policy allows inline styles and data: images only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from offsetops.coordinator_core.cleaner.model import format_bytes
from offsetops.coordinator_core.escape import for_html

MAX_ROWS = 200
"""Rows shown per detail table; the page says how many more there are."""

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;
background:#f6f7f9}
main{max-width:1200px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dde1e7;padding-bottom:4px}
h3{font-size:14px;margin:16px 0 6px}
.verdict{display:inline-block;padding:3px 9px;border-radius:4px;color:#fff;font-weight:700;font-size:13px}
.HEALTHY{background:#1f8a4c}.DEGRADED{background:#b7791f}.CRITICAL{background:#c0392b}.NOT-RUN{background:#8a93a3}
.banner{padding:14px 18px;border-radius:6px;color:#fff;margin:12px 0 8px}
.banner .big{font-size:26px;font-weight:800;letter-spacing:.5px}
.banner ul{margin:6px 0 0;padding-left:20px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:8px 14px;min-width:110px}
.card .n{font-size:20px;font-weight:700}.card .l{color:#5b6472;font-size:11px;text-transform:uppercase}
.card .raw{color:#5b6472;font-size:11px}
table{border-collapse:collapse;background:#fff;width:100%;font-size:13px}
th,td{border:1px solid #dde1e7;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#eef0f4}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.muted{color:#5b6472}
.chart{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:6px;margin:8px 0}
.chart svg{max-width:100%;height:auto}code{font-size:12px}details{margin:8px 0}
.remedy{color:#364152;font-size:12px}
"""


def esc(value: object) -> str:
    """The HTML policy of coordinator_core.escape: controls, bidi and separators made visible, then
    entities."""
    return for_html(value)


DECODE_ERROR_COLUMNS = (
    ("offsets_partition", "partition"),
    ("file", "file"),
    ("position", "position"),
    ("offset", "offset"),
    ("kind", "kind"),
    ("reason", "reason"),
)


def decode_errors_table(sample: Sequence[Mapping[str, Any]], element_id: str | None = None) -> str:
    """The decode errors a validation sampled, one row each (every cell escaped); "" when there are none."""
    if not sample:
        return ""
    attr = f' id="{element_id}"' if element_id else ""
    head = "".join(f"<th>{label}</th>" for _, label in DECODE_ERROR_COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{esc(e.get(key))}</td>" for key, _ in DECODE_ERROR_COLUMNS) + "</tr>"
        for e in sample
    )
    return f"<table{attr}><tr>{head}</tr>{rows}</table>"


def badge(verdict: str, element_id: str | None = None) -> str:
    attr = f' id="{element_id}"' if element_id else ""
    return f'<span class="verdict {esc(verdict.replace(" ", "-"))}"{attr}>{esc(verdict)}</span>'


def card(label: str, value: object, element_id: str, raw: object = None) -> str:
    raw_html = f'<div class="raw">{esc(raw)}</div>' if raw is not None else ""
    return (
        f'<div class="card" id="{element_id}"><div class="n">{esc(value)}</div>'
        f'<div class="l">{esc(label)}</div>{raw_html}</div>'
    )


def iso(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def bytes_cell(n: int | None) -> str:
    if n is None:
        return '<td class="num">-</td>'
    return f'<td class="num" title="{int(n)} bytes">{esc(format_bytes(n))}</td>'


def more_rows(total: int, shown: int, what: str) -> str:
    return (
        f'<p class="muted">{total - shown} more {esc(what)} not shown; see the JSON report.</p>'
        if total > shown
        else ""
    )


def sample(outcome: Mapping[str, Any]) -> str:
    return outcome.get("exception") or json.dumps(outcome.get("sample", [])[:3], default=str)[:300]
