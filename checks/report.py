"""The outcome of validating a cache: :class:`ValidationReport`, and its one-page HTML summary."""

from __future__ import annotations

import html
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from offsetops.checks.report_html import decode_errors_table
from offsetops.coordinator_core.atomic import write_json_atomic, write_text_atomic

SEVERITIES = ("error", "warning")


@dataclass(frozen=True, slots=True)
class ExpectationOutcome:
    """How one check fared."""

    check_id: str
    table: str
    severity: str
    expectation_type: str
    description: str
    success: bool
    unexpected_count: int | None = None
    sample: list[Any] = field(default_factory=list)
    exception: str | None = None

    @property
    def name(self) -> str:
        """The check's id, ``<table>.<rule>``."""
        return self.check_id


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """Result of :func:`offsetops.checks.suite.validate_cache`.

    ``success_error_level`` is what gates a pipeline: no ``error`` check failed. ``success`` also
    requires every ``warning`` check to pass.
    """

    success_error_level: bool
    success: bool
    counts: dict[str, int]
    outcomes: list[ExpectationOutcome]
    data_docs_index: Path
    summary_path: Path
    run_name: str
    now_ms: int
    num_partitions: int
    elapsed_ms: float
    decode_errors_sample: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> list[ExpectationOutcome]:
        """Every check that failed, errors first."""
        return sorted(
            (o for o in self.outcomes if not o.success),
            key=lambda o: (SEVERITIES.index(o.severity), o.check_id),
        )

    @property
    def by_severity(self) -> dict[str, dict[str, int]]:
        """``{"error": {"passed": n, "failed": m}, "warning": {...}}``."""
        tally = {s: {"passed": 0, "failed": 0} for s in SEVERITIES}
        for o in self.outcomes:
            tally[o.severity]["passed" if o.success else "failed"] += 1
        return tally

    def outcome(self, check_id: str) -> ExpectationOutcome:
        """The outcome of one check, by id."""
        for o in self.outcomes:
            if o.check_id == check_id:
                return o
        raise KeyError(check_id)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (paths as strings)."""
        return {
            "success_error_level": self.success_error_level,
            "success": self.success,
            "run_name": self.run_name,
            "now_ms": self.now_ms,
            "num_partitions": self.num_partitions,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "counts": dict(self.counts),
            "expectations": self.by_severity,
            "failed": [asdict(o) for o in self.failed],
            "outcomes": [asdict(o) for o in self.outcomes],
            "decode_errors_sample": list(self.decode_errors_sample),
            "data_docs_index": str(self.data_docs_index),
            "summary_path": str(self.summary_path),
        }


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2330;
background:#f6f7f9}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.verdict{display:inline-block;padding:4px 10px;border-radius:4px;color:#fff;font-weight:600}
.ok{background:#1f8a4c}.bad{background:#c0392b}.warn{background:#b7791f}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 16px;min-width:120px}
.card .n{font-size:24px;font-weight:700}.card .l{color:#5b6472;font-size:12px;text-transform:uppercase}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{border:1px solid #dde1e7;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef0f4}td.sample{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}
tr.failed.error td.status{color:#c0392b;font-weight:700}
tr.failed.warning td.status{color:#b7791f;font-weight:700}
td.status{white-space:nowrap}.muted{color:#5b6472}
"""


def _card(label: str, value: object, css_id: str) -> str:
    return (
        f'<div class="card" id="{css_id}"><div class="n">{html.escape(str(value))}</div>'
        f'<div class="l">{html.escape(label)}</div></div>'
    )


def _sample_text(sample: list[Any]) -> str:
    if not sample:
        return ""
    text = json.dumps(sample[:5], default=str, ensure_ascii=False)
    return text if len(text) <= 400 else text[:397] + "..."


def render_summary_html(report: ValidationReport) -> str:
    """One self-contained page (inline CSS, no scripts or external fetches) linking to Data Docs."""
    tally = report.by_severity
    if not report.success_error_level:
        verdict = '<span class="verdict bad" id="verdict">FAILED: error-level expectations failed</span>'
    elif not report.success:
        verdict = '<span class="verdict warn" id="verdict">PASSED with warnings</span>'
    else:
        verdict = '<span class="verdict ok" id="verdict">PASSED</span>'
    docs_href = os.path.relpath(report.data_docs_index, report.summary_path.parent)
    cards = "".join(
        [
            _card("groups", report.counts.get("groups", 0), "count-groups"),
            _card("offsets", report.counts.get("offsets", 0), "count-offsets"),
            _card("members", report.counts.get("members", 0), "count-members"),
            _card("pending offsets", report.counts.get("pending_offsets", 0), "count-pending-offsets"),
            _card("decode errors", report.counts.get("decode_errors", 0), "count-decode-errors"),
            _card("errors passed", tally["error"]["passed"], "error-passed"),
            _card("errors failed", tally["error"]["failed"], "error-failed"),
            _card("warnings passed", tally["warning"]["passed"], "warning-passed"),
            _card("warnings failed", tally["warning"]["failed"], "warning-failed"),
        ]
    )
    rows = []
    # failures first (errors, then warnings), then the passing checks in suite order
    ordered = report.failed + [o for o in report.outcomes if o.success]
    for o in ordered:
        status = "passed" if o.success else "FAILED"
        unexpected = "" if o.unexpected_count is None else str(o.unexpected_count)
        detail = o.exception or _sample_text(o.sample)
        state = "passed" if o.success else "failed"
        check = html.escape(o.check_id)
        rows.append(
            f'<tr class="{state} {o.severity}" data-check="{check}">'
            f"<td><code>{check}</code><br><span class='muted'>{html.escape(o.description)}</span></td>"
            f"<td>{o.severity}</td><td class='status'>{status}</td><td>{unexpected}</td>"
            f"<td class='sample'>{html.escape(detail)}</td></tr>"
        )
    decode_table = decode_errors_table(report.decode_errors_sample)
    decode_section = f"<h2>Decode errors (first rows)</h2>{decode_table}" if decode_table else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>offsetops cache validation: {html.escape(report.run_name)}</title>
<style>{_CSS}</style></head>
<body>
<h1>__consumer_offsets cache validation</h1>
<p class="muted">Run <code>{html.escape(report.run_name)}</code>, {report.num_partitions} offsets partitions,
validated in {report.elapsed_ms / 1000:.1f} s.</p>
{verdict}
<div class="cards">{cards}</div>
<p><a id="data-docs-link" href="{html.escape(docs_href)}">Great Expectations Data Docs</a>
(full results, every expectation and its unexpected values)</p>
<h2>Expectations</h2>
<table id="expectations"><tr><th>Check</th><th>Severity</th><th>Status</th><th>Unexpected</th>
<th>Sample / error</th></tr>
{"".join(rows)}
</table>
{decode_section}
</body></html>
"""


def write_summary(report: ValidationReport) -> Path:
    """Write :func:`render_summary_html` and a ``summary.json`` beside it; returns the HTML path."""
    write_text_atomic(report.summary_path, render_summary_html(report))
    write_json_atomic(
        report.summary_path.parent / "summary.json", report.to_dict(), indent=2, default=str, nan_as_null=True
    )
    return report.summary_path
