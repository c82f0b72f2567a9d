"""Static SVG charts for the operator report, drawn with matplotlib's SVG backend.

Each function returns an ``<svg>`` element as a string, ready to inline in a page: no script, no
external font or image, text kept as ``<text>`` (``svg.fonttype = none``) so it stays searchable and
small. The object-oriented API (``Figure`` + ``FigureCanvasSVG``) is used instead of ``pyplot`` so no
global state or GUI backend is touched, which keeps it safe inside Dagster's multi-threaded runs.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

VERDICT_COLOURS = {"HEALTHY": "#1f8a4c", "DEGRADED": "#b7791f", "CRITICAL": "#c0392b"}
_INK = "#1d2330"
_GRID = "#dde1e7"
_HEADER = re.compile(r"^.*?(?=<svg)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>", re.S)  # RDF boilerplate, no use in a page


def _figure(width_in: float, height_in: float):  # -> matplotlib Figure
    from matplotlib import rcParams
    from matplotlib.figure import Figure

    rcParams["svg.fonttype"] = "none"  # <text> elements, not glyph paths
    rcParams["svg.hashsalt"] = "offsetops"  # stable element ids: same data, same bytes
    rcParams["font.family"] = "sans-serif"
    fig = Figure(figsize=(width_in, height_in), dpi=96)
    fig.patch.set_alpha(0)
    return fig


def _svg(fig, element_id: str) -> str:
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    svg = _METADATA.sub("", _HEADER.sub("", buf.getvalue(), count=1), count=1)
    # an id and a role so the page (and a screen reader) can find the chart
    return svg.replace("<svg ", f'<svg id="{element_id}" role="img" ', 1)


def _style(ax) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(colors=_INK, labelsize=8)
    ax.grid(axis="y", color=_GRID, linewidth=0.6)
    ax.set_axisbelow(True)


#: what each part of a partition's bytes is, bottom to top, and its colour
BYTE_PARTS = (
    ("clean", "clean (below the cleaner checkpoint)", "#c9d3df"),
    ("cleanable", "dirty, cleanable now", "#b7791f"),
    ("pinned", "dirty, held back by an open transaction or uncleanable mark", "#c0392b"),
    ("active", "dirty, in the active segment (never cleaned until it rolls)", "#8a93a3"),
)


def partition_bytes(p: Mapping[str, Any]) -> dict[str, int]:
    """A partition's bytes by what the cleaner can do with them (from its audit JSON): clean, dirty and
    cleanable now, dirty and pinned (an open transaction holds the LSO, or an uncleanable mark), and
    the rest, the active segment and what follows the first uncleanable offset for that reason."""
    size = int(p.get("size_bytes") or 0)
    clean = int(p.get("clean_bytes") or 0)
    cleanable = int(p.get("cleanable_bytes") or 0)
    rest = max(size - clean - cleanable, 0)
    reasons = set(p.get("uncleanable_reasons") or [])
    held = bool(reasons & {"open_transaction"}) or bool(p.get("marked_uncleanable"))
    return {
        "clean": clean,
        "cleanable": cleanable,
        "pinned": rest if held else 0,
        "active": 0 if held else rest,
    }


def partition_bytes_chart(partitions: Sequence[Mapping[str, Any]]) -> str:
    """Bytes per ``__consumer_offsets`` partition, stacked by what the Log Cleaner can do with them.

    A partition whose dirty bytes are pinned (a hanging transaction holds the last stable offset, so
    LogCleanerManager.cleanableOffsets stops there) shows a red block even though its dirty ratio is
    0; the partition numbers under the bars are coloured by verdict, so the worst one is never hidden.
    """
    rows = sorted(partitions, key=lambda p: int(p["partition"]))
    xs = list(range(len(rows)))
    parts = [partition_bytes(p) for p in rows]
    fig = _figure(10, 3.0)
    ax = fig.add_subplot()
    bottom = [0.0] * len(rows)
    for key, label, colour in BYTE_PARTS:
        values = [part[key] / 2**20 for part in parts]
        ax.bar(xs, values, bottom=bottom, color=colour, width=0.8, label=label)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xticks(xs)
    ax.set_xticklabels([str(p["partition"]) for p in rows], fontsize=6, rotation=90)
    for tick, p in zip(ax.get_xticklabels(), rows, strict=True):
        verdict = str(p.get("verdict"))
        if verdict != "HEALTHY":
            tick.set_color(VERDICT_COLOURS.get(verdict, _INK))
            tick.set_fontweight("bold")
            tick.set_fontsize(8)
    ax.set_xlim(-1, len(rows))
    ax.set_xlabel("__consumer_offsets partition (unhealthy ones in their verdict's colour)", fontsize=9)
    ax.set_ylabel("MiB", fontsize=9, color=_INK)
    ax.legend(fontsize=7, frameon=False, loc="upper left", ncols=2)
    _style(ax)
    return _svg(fig, "chart-partition-bytes")


def expiration_timeline_chart(
    expires_at_ms: Sequence[int],
    *,
    now_ms: int,
    horizon_ms: int,
    expired_now: int,
) -> str:
    """Committed offsets expiring per hour (or per day past 48 h) from ``now_ms`` to the horizon.

    The first bar, "now", holds the offsets already past retention: the ones the next
    cleanupGroupMetadata pass deletes (the planned tombstones).
    """
    hour = 3_600_000
    bucket_ms = hour if horizon_ms <= 48 * hour else 24 * hour
    buckets = max(1, -(-horizon_ms // bucket_ms))
    counts = [0] * buckets
    for at in expires_at_ms:
        i = (at - now_ms) // bucket_ms
        if 0 <= i < buckets:
            counts[i] += 1
    fig = _figure(10, 2.6)
    ax = fig.add_subplot()
    xs = list(range(buckets + 1))
    ax.bar([0], [expired_now], color=VERDICT_COLOURS["CRITICAL"], width=0.8, label="expired now (tombstones)")
    ax.bar(xs[1:], counts, color=VERDICT_COLOURS["DEGRADED"], width=0.8, label="expiring (forecast)")
    step = max(1, buckets // 12)
    ticks = [0, *range(1, buckets + 1, step)]
    unit = "h" if bucket_ms == hour else "d"
    ax.set_xticks(ticks)
    ax.set_xticklabels(["now"] + [f"+{t - 1}{unit}" for t in ticks[1:]])
    ax.set_xlim(-0.7, buckets + 0.7)
    ax.set_ylabel("committed offsets", fontsize=9, color=_INK)
    start = datetime.fromtimestamp(now_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    ax.set_xlabel(f"time from {start} (one bar per {'hour' if unit == 'h' else 'day'})", fontsize=9)
    ax.legend(fontsize=8, frameon=False, loc="upper right")
    _style(ax)
    return _svg(fig, "chart-expiration-timeline")
