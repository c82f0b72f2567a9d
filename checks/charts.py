"""Static SVG charts for the operator report, drawn with matplotlib's SVG backend.

Each function returns an ``<svg>`` element as a string, ready to inline in a page: no script, no
external font or image, text kept as ``<text>`` (``svg.fonttype = none``) so it stays searchable and
small. The object-oriented API (``Figure`` + ``FigureCanvasSVG``) is used instead of ``pyplot`` so no
global state or GUI backend is touched, which keeps it safe inside Dagster's multi-threaded runs.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from datetime import UTC, datetime

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


def dirty_ratio_chart(
    partitions: Sequence[int],
    ratios: Sequence[float],
    verdicts: Sequence[str],
    *,
    min_cleanable_ratio: float | None,
) -> str:
    """Dirty ratio per ``__consumer_offsets`` partition, each bar coloured by its verdict.

    The dashed line is ``min.cleanable.dirty.ratio``: above it the cleaner would pick the partition
    (LogCleanerManager.grabFilthiestCompactedLog), unless something blocks it.
    """
    fig = _figure(10, 2.6)
    ax = fig.add_subplot()
    colours = [VERDICT_COLOURS.get(v, "#5b6472") for v in verdicts]
    ax.bar(list(partitions), list(ratios), color=colours, width=0.8)
    if min_cleanable_ratio is not None:
        ax.axhline(min_cleanable_ratio, color=_INK, linestyle="--", linewidth=0.8)
        ax.annotate(
            f"min.cleanable.dirty.ratio {min_cleanable_ratio:g}",
            xy=(1, min_cleanable_ratio),
            xycoords=("axes fraction", "data"),
            ha="right",
            va="bottom",
            fontsize=8,
            color=_INK,
        )
    ax.set_ylim(0, 1.05)
    ax.set_xlim(-1, max(partitions, default=0) + 1)
    ax.set_xlabel("__consumer_offsets partition", fontsize=9, color=_INK)
    ax.set_ylabel("dirty ratio", fontsize=9, color=_INK)
    _style(ax)
    return _svg(fig, "chart-dirty-ratio")


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
