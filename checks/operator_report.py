"""The operator report: one self-contained HTML page per run that an on-call engineer reads offline.

It is built from the JSON reports the assets write into the reports dir (``cleaner_audit.json``,
``expiration_plan.json``, ``reload.json``, ``validation.json``); a missing one is shown as "not run".
The page has inline CSS and inline SVG charts (matplotlib, :mod:`offsetops.checks.charts`), no script and no
external reference, so it renders the same from a laptop, a pod or an object store with no network.
Every value that comes from the data (group ids, topics, reasons, file names) is HTML-escaped.

The overall verdict at the top is the worst of the cleaner audit, the expiration plan and the
validation. A deployment that serves the reports dir (web server, object store, shared volume) sets
``OFFSETOPS_REPORTS_BASE_URL``; :func:`report_url` then gives the link the Dagster assets and the Slack
alerts use.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from offsetops.checks.charts import dirty_ratio_chart, expiration_timeline_chart
from offsetops.coordinator_core.cleaner_audit import (
    CRITICAL,
    DEGRADED,
    HEALTHY,
    format_bytes,
    format_duration,
)

REPORT_FILE = "report.html"
"""The latest run's report, at the top of the reports dir."""
RUNS_DIR = "runs"
"""``runs/<run id>/report.html``: one kept per run."""
ENV_REPORTS_BASE_URL = "OFFSETOPS_REPORTS_BASE_URL"

VERDICTS = (HEALTHY, DEGRADED, CRITICAL)
NOT_RUN = "NOT RUN"
_ROOT = "\x00reports-root\x00"  # stands for the path from a page back to the reports dir
MAX_ROWS = 200
"""Rows shown per detail table; the page says how many more there are."""


def _rank(verdict: str) -> int:
    return VERDICTS.index(verdict) if verdict in VERDICTS else -1


def worst_verdict(*verdicts: str) -> str:
    """The worst of HEALTHY < DEGRADED < CRITICAL; sections that did not run are ignored."""
    ranked = [v for v in verdicts if v in VERDICTS]
    return max(ranked, key=_rank) if ranked else NOT_RUN


# -- where the report lives ------------------------------------------------------------------------


def reports_base_url(env: Mapping[str, str] | None = None) -> str | None:
    """``OFFSETOPS_REPORTS_BASE_URL`` (the URL that serves the reports dir), or None when unset."""
    env = os.environ if env is None else env
    value = env.get(ENV_REPORTS_BASE_URL, "").strip()
    return value.rstrip("/") if value else None


def report_url(
    reports_dir: str | Path,
    relative: str = REPORT_FILE,
    *,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """The link to ``relative`` (a path inside the reports dir) for people and alerts.

    With a base URL (argument, else ``OFFSETOPS_REPORTS_BASE_URL``) it is ``<base>/<relative>``;
    without, the local file's ``file://`` URI, which only works on the machine that wrote it.
    """
    base = base_url.rstrip("/") if base_url else reports_base_url(env)
    if base:
        return f"{base}/{quote(relative.lstrip('/'))}"
    return (Path(reports_dir).absolute() / relative).as_uri()


def run_report_relative(run_id: str) -> str:
    """Where a run's report sits inside the reports dir: ``runs/<run id>/report.html``."""
    safe = "".join(c for c in run_id if c.isalnum() or c in "-_") or "run"
    return f"{RUNS_DIR}/{safe}/{REPORT_FILE}"


# -- inputs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportInputs:
    """The JSON documents of one run (None when that asset did not run)."""

    audit: dict[str, Any] | None
    plan: dict[str, Any] | None
    reload: dict[str, Any] | None
    validation: dict[str, Any] | None

    @classmethod
    def from_reports_dir(cls, reports_dir: str | Path) -> ReportInputs:
        d = Path(reports_dir)

        def load(name: str) -> dict[str, Any] | None:
            path = d / name
            if not path.exists():
                return None
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ReportInputError(f"{path}: not a readable JSON report ({exc})") from exc

        return cls(
            load("cleaner_audit.json"),
            load("expiration_plan.json"),
            load("reload.json"),
            load("validation.json"),
        )


class ReportInputError(ValueError):
    """A report file exists but cannot be read; the message names it."""


# -- verdicts of each section ----------------------------------------------------------------------


def audit_verdict(audit: Mapping[str, Any] | None) -> str:
    return str(audit["verdict"]) if audit else NOT_RUN


def plan_verdict(plan: Mapping[str, Any] | None) -> str:
    """CRITICAL when committed offsets have already expired (groups lost them), DEGRADED when some
    expire within the forecast window, else HEALTHY."""
    if not plan:
        return NOT_RUN
    s = plan.get("summary", {})
    if s.get("offset_tombstones", 0) or s.get("dead_groups", 0):
        return CRITICAL
    if s.get("forecast_offsets", 0):
        return DEGRADED
    return HEALTHY


def validation_verdict(validation: Mapping[str, Any] | None) -> str:
    """CRITICAL when an error-level expectation failed, DEGRADED for a warning, else HEALTHY."""
    if not validation:
        return NOT_RUN
    if not validation.get("success_error_level", False):
        return CRITICAL
    return HEALTHY if validation.get("success", False) else DEGRADED


def reload_verdict(reload: Mapping[str, Any] | None) -> str:
    """CRITICAL when records could not be decoded: the cache may not be what the coordinator holds."""
    if not reload:
        return NOT_RUN
    return CRITICAL if reload.get("counts", {}).get("decode_errors", 0) else HEALTHY


def section_verdicts(inputs: ReportInputs) -> dict[str, str]:
    """The verdict of each section, in page order."""
    return {
        "cleaner audit": audit_verdict(inputs.audit),
        "expiration": plan_verdict(inputs.plan),
        "reload": reload_verdict(inputs.reload),
        "validation": validation_verdict(inputs.validation),
    }


def sorted_partitions(audit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Audited partitions worst first: verdict, then dirty ratio, then reclaimable bytes."""
    return sorted(
        audit.get("partitions", []),
        key=lambda p: (
            -_rank(p["verdict"]),
            -float(p.get("dirty_ratio") or 0),
            -int(p.get("reclaimable_bytes") or 0),
            p["partition"],
        ),
    )


@dataclass(frozen=True)
class OperatorReport:
    """What :func:`write_operator_report` wrote and the verdicts it showed."""

    path: Path
    run_path: Path | None
    verdict: str
    sections: dict[str, str]
    worst_partition: int | None
    url: str


# -- rendering -------------------------------------------------------------------------------------

_CSS = """
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


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _badge(verdict: str, element_id: str | None = None) -> str:
    attr = f' id="{element_id}"' if element_id else ""
    return f'<span class="verdict {_e(verdict.replace(" ", "-"))}"{attr}>{_e(verdict)}</span>'


def _card(label: str, value: object, element_id: str, raw: object = None) -> str:
    raw_html = f'<div class="raw">{_e(raw)}</div>' if raw is not None else ""
    return (
        f'<div class="card" id="{element_id}"><div class="n">{_e(value)}</div>'
        f'<div class="l">{_e(label)}</div>{raw_html}</div>'
    )


def _iso(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _bytes_cell(n: int | None) -> str:
    if n is None:
        return '<td class="num">-</td>'
    return f'<td class="num" title="{int(n)} bytes">{_e(format_bytes(n))}</td>'


def _more(total: int, shown: int, what: str) -> str:
    return (
        f'<p class="muted">{total - shown} more {_e(what)} not shown; see the JSON report.</p>'
        if total > shown
        else ""
    )


def _sample(outcome: Mapping[str, Any]) -> str:
    return outcome.get("exception") or json.dumps(outcome.get("sample", [])[:3], default=str)[:300]


def _as_of_ms(inputs: ReportInputs) -> int | None:
    if inputs.plan and inputs.plan.get("planned"):
        return int(inputs.plan["planned"][0]["now_ms"])
    if inputs.audit and inputs.audit.get("audited_at_ms") is not None:
        return int(inputs.audit["audited_at_ms"])
    if inputs.validation and inputs.validation.get("now_ms") is not None:
        return int(inputs.validation["now_ms"])
    return None


def _audit_section(audit: Mapping[str, Any] | None) -> str:
    if not audit:
        return (
            '<section id="audit"><h2>Cleaner audit '
            + _badge(NOT_RUN)
            + "</h2><p>No audit in this run.</p></section>"
        )
    s = audit.get("summary", {})
    parts = sorted_partitions(audit)
    cards = "".join(
        [
            _card("critical partitions", s.get("critical", 0), "audit-critical"),
            _card("degraded partitions", s.get("degraded", 0), "audit-degraded"),
            _card("healthy partitions", s.get("healthy", 0), "audit-healthy"),
            _card("max dirty ratio", f"{float(s.get('max_dirty_ratio', 0)):.2f}", "audit-max-dirty"),
            _card(
                "size", format_bytes(s.get("size_bytes", 0)), "audit-size", f"{s.get('size_bytes', 0)} bytes"
            ),
            _card(
                "reclaimable",
                format_bytes(s.get("reclaimable_bytes", 0)),
                "audit-reclaimable",
                f"{s.get('reclaimable_bytes', 0)} bytes",
            ),
            _card("open transactions", s.get("open_transactions", 0), "audit-open-txns"),
        ]
    )
    topic_reasons = "".join(
        f"<li>{_badge(r['severity'])} <code>{_e(r['code'])}</code> {_e(r['message'])}"
        f'<div class="remedy">Remedy: {_e(r["remedy"])}</div></li>'
        for r in audit.get("reasons", [])
        if r.get("severity") != HEALTHY
    )
    min_ratio = (audit.get("config", {}).get("min_cleanable_dirty_ratio") or {}).get("value")
    by_number = sorted(parts, key=lambda p: p["partition"])
    chart = dirty_ratio_chart(
        [p["partition"] for p in by_number],
        [float(p.get("dirty_ratio") or 0) for p in by_number],
        [p["verdict"] for p in by_number],
        min_cleanable_ratio=None if min_ratio is None else float(min_ratio),
    )

    def row(p: Mapping[str, Any]) -> str:
        reasons = "".join(
            f"<div>{_badge(r['severity'])} <code>{_e(r['code'])}</code> {_e(r['message'])}"
            f'<div class="remedy">Remedy: {_e(r["remedy"])}</div></div>'
            for r in p.get("reasons", [])
            if r.get("severity") != HEALTHY
        )
        txns = p.get("open_transactions") or []
        txn_text = "".join(
            f"<div><code>producer {_e(t.get('producer_id'))}</code> "
            f"since offset {_e(t.get('first_offset'))}</div>"
            for t in txns[:3]
            if isinstance(t, Mapping)
        )
        return (
            f'<tr data-partition="{int(p["partition"])}" data-verdict="{_e(p["verdict"])}">'
            f'<td class="num">{int(p["partition"])}</td><td>{_badge(p["verdict"])}</td>'
            f'<td class="num">{float(p.get("dirty_ratio") or 0):.3f}</td>'
            f"{_bytes_cell(p.get('size_bytes'))}{_bytes_cell(p.get('reclaimable_bytes'))}"
            f'<td class="num">{len(txns)}{txn_text}</td>'
            f'<td class="num">{_e(p.get("log_start_offset"))}..{_e(p.get("log_end_offset"))}</td>'
            f"<td>{reasons or '<span class=muted>no findings</span>'}</td></tr>"
        )

    head = (
        "<tr><th>partition</th><th>verdict</th><th>dirty ratio</th><th>size</th><th>reclaimable</th>"
        "<th>open txns</th><th>offsets</th><th>findings and remedy</th></tr>"
    )
    unhealthy = [p for p in parts if p["verdict"] != HEALTHY]
    healthy = [p for p in parts if p["verdict"] == HEALTHY]
    worst = parts[0] if parts else None
    worst_line = (
        f'<p id="audit-worst">Worst partition: <strong>{int(worst["partition"])}</strong> '
        f"({_e(worst['verdict'])}, "
        f"dirty ratio {float(worst.get('dirty_ratio') or 0):.2f})</p>"
        if worst and worst["verdict"] != HEALTHY
        else ""
    )
    return (
        f'<section id="audit"><h2>Cleaner audit {_badge(audit_verdict(audit), "audit-verdict")}</h2>'
        f'<p class="muted">Log dir <code>{_e(audit.get("log_dir"))}</code>, '
        f"audited as of {_iso(audit.get('audited_at_ms'))}.</p>"
        f"{worst_line}<div class=cards>{cards}</div>"
        + (f"<h3>Topic findings</h3><ul>{topic_reasons}</ul>" if topic_reasons else "")
        + f'<h3>Dirty ratio per partition</h3><div class="chart">{chart}</div>'
        f'<h3>Partitions needing attention ({len(unhealthy)})</h3><table id="audit-partitions">{head}'
        + "".join(row(p) for p in unhealthy)
        + "</table>"
        + (
            f"<details><summary>{len(healthy)} healthy partitions</summary>"
            f'<table id="audit-healthy-partitions">{head}'
            + "".join(row(p) for p in healthy)
            + "</table></details>"
            if healthy
            else ""
        )
        + "</section>"
    )


def _plan_section(plan: Mapping[str, Any] | None) -> str:
    if not plan:
        return (
            '<section id="expiration"><h2>Expiration plan '
            + _badge(NOT_RUN)
            + "</h2><p>No plan in this run.</p></section>"
        )
    s = plan.get("summary", {})
    planned = plan.get("planned") or [{}]
    now_ms = planned[0].get("now_ms")
    horizon_ms = int(planned[0].get("forecast_horizon_ms") or 24 * 3_600_000)
    retention_ms = planned[0].get("retention_ms")
    tombstones = plan.get("tombstones", [])
    offset_tombs = [t for t in tombstones if t.get("kind") == "offset_commit"]
    forecast = plan.get("forecast", [])
    lost_groups = sorted({t["group_id"] for t in offset_tombs})
    cards = "".join(
        [
            _card("offset tombstones", s.get("offset_tombstones", 0), "plan-offset-tombstones"),
            _card("groups losing offsets now", len(lost_groups), "plan-groups-losing"),
            _card("dead groups", s.get("dead_groups", 0), "plan-dead-groups"),
            _card("offsets expiring in window", s.get("forecast_offsets", 0), "plan-forecast-offsets"),
            _card("groups at risk", s.get("forecast_groups", 0), "plan-forecast-groups"),
        ]
    )
    chart = (
        expiration_timeline_chart(
            [int(f["expires_at"]) for f in forecast],
            now_ms=int(now_ms),
            horizon_ms=horizon_ms,
            expired_now=len(offset_tombs),
        )
        if now_ms is not None
        else ""
    )
    at_risk: dict[str, dict[str, Any]] = {}
    for f in forecast:
        entry = at_risk.setdefault(
            f["group_id"],
            {"group": f["group_id"], "partition": f.get("offsets_partition"), "offsets": 0, "first": f},
        )
        entry["offsets"] += 1
        if f["expires_at"] < entry["first"]["expires_at"]:
            entry["first"] = f
    risk_rows = sorted(at_risk.values(), key=lambda e: (e["first"]["expires_at"], e["group"]))
    risk_html = "".join(
        f'<tr><td><code>{_e(e["group"])}</code></td><td class="num">{_e(e["partition"])}</td>'
        f'<td class="num">{e["offsets"]}</td><td>{_iso(e["first"]["expires_at"])}</td>'
        f'<td class="num">{_e(format_duration(e["first"]["expires_in_ms"]))}</td>'
        f"<td>{_e(e['first']['reason'])}</td></tr>"
        for e in risk_rows[:MAX_ROWS]
    )
    tomb_html = "".join(
        f'<tr><td><code>{_e(t["group_id"])}</code></td><td class="num">{_e(t.get("offsets_partition"))}</td>'
        f"<td>{_e(t.get('kind'))}</td>"
        f"<td><code>{_e(t.get('topic'))}-{_e(t.get('partition'))}</code></td>"
        f'<td class="num">{_e(format_duration(t["age_ms"]) if t.get("age_ms") is not None else "-")}</td>'
        f"<td>{_e(t.get('reason'))}</td></tr>"
        if t.get("kind") == "offset_commit"
        else f"<tr><td><code>{_e(t['group_id'])}</code></td>"
        f'<td class="num">{_e(t.get("offsets_partition"))}</td>'
        f"<td>{_e(t.get('kind'))}</td><td>-</td><td>-</td><td>{_e(t.get('reason'))}</td></tr>"
        for t in tombstones[:MAX_ROWS]
    )
    lost = (
        f'<p id="plan-lost">{len(lost_groups)} group(s) lost committed offsets (past retention; the next '
        f"cleanup deletes them): "
        + ", ".join(f"<code>{_e(g)}</code>" for g in lost_groups[:20])
        + (f" and {len(lost_groups) - 20} more" if len(lost_groups) > 20 else "")
        + "</p>"
        if lost_groups
        else ""
    )
    return (
        f'<section id="expiration"><h2>Expiration plan {_badge(plan_verdict(plan), "plan-verdict")}</h2>'
        f'<p class="muted">As of {_iso(now_ms)}; offsets.retention.minutes '
        f"{_e(None if retention_ms is None else int(retention_ms) // 60000)}; forecast window "
        f"{_e(format_duration(horizon_ms))}. A dry run: nothing was written to Kafka.</p>"
        f"{lost}<div class=cards>{cards}</div>"
        f'<h3>Offsets expiring over the coming window</h3><div class="chart">{chart}</div>'
        f"<h3>Groups at risk ({len(risk_rows)})</h3>"
        + (
            '<table id="plan-at-risk"><tr><th>group</th><th>offsets partition</th><th>offsets</th>'
            f"<th>first expiry</th><th>in</th><th>rule</th></tr>{risk_html}</table>"
            + _more(len(risk_rows), min(len(risk_rows), MAX_ROWS), "groups")
            if risk_rows
            else "<p>No offset expires within the window.</p>"
        )
        + f"<h3>Planned tombstones ({len(tombstones)})</h3>"
        + (
            '<table id="plan-tombstones"><tr><th>group</th><th>offsets partition</th><th>kind</th>'
            f"<th>topic-partition</th><th>age</th><th>reason</th></tr>{tomb_html}</table>"
            + _more(len(tombstones), min(len(tombstones), MAX_ROWS), "tombstones")
            if tombstones
            else "<p>Nothing to delete now.</p>"
        )
        + "</section>"
    )


def _reload_section(reload: Mapping[str, Any] | None, validation: Mapping[str, Any] | None) -> str:
    if not reload:
        return (
            '<section id="reload"><h2>Reload '
            + _badge(NOT_RUN)
            + "</h2><p>No reload in this run.</p></section>"
        )
    counts = reload.get("counts", {})
    cards = "".join(
        [
            _card("groups", counts.get("groups", 0), "reload-groups"),
            _card("committed offsets", counts.get("offsets", 0), "reload-offsets"),
            _card("pending offsets", counts.get("pending_offsets", 0), "reload-pending"),
            _card("members", counts.get("members", 0), "reload-members"),
            _card("segments", reload.get("segments", 0), "reload-segments"),
            _card("records", reload.get("records", 0), "reload-records"),
            _card(
                "bytes",
                format_bytes(reload.get("bytes", 0)),
                "reload-bytes",
                f"{reload.get('bytes', 0)} bytes",
            ),
            _card("decode errors", counts.get("decode_errors", 0), "reload-decode-errors"),
        ]
    )
    states = ", ".join(f"{_e(k)} {int(v)}" for k, v in sorted((reload.get("group_states") or {}).items()))
    kinds = ", ".join(f"{_e(k)} {int(v)}" for k, v in sorted((reload.get("error_kinds") or {}).items()))
    sample = (validation or {}).get("decode_errors_sample") or []
    sample_rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{_e(e.get(k))}</td>"
            for k in ("offsets_partition", "file", "position", "offset", "kind", "reason")
        )
        + "</tr>"
        for e in sample
    )
    return (
        f'<section id="reload"><h2>Reload {_badge(reload_verdict(reload), "reload-verdict")}</h2>'
        f'<p class="muted">Source {_e(reload.get("source"))}; '
        f"{len(reload.get('partitions', []))} partitions in "
        f"{_e(reload.get('elapsed_s'))} s.</p><div class=cards>{cards}</div>"
        f"<p>Group states: {states or '-'}</p>"
        + (f"<p>Decode errors by kind: {kinds}</p>" if kinds else "")
        + (
            '<h3>Decode errors (first rows)</h3><table id="decode-errors"><tr><th>partition</th><th>file</th>'
            f"<th>position</th><th>offset</th><th>kind</th><th>reason</th></tr>{sample_rows}</table>"
            if sample_rows
            else ""
        )
        + "</section>"
    )


def _validation_section(
    validation: Mapping[str, Any] | None, docs_href: str | None, summary_href: str | None
) -> str:
    if not validation:
        return (
            '<section id="validation"><h2>Validation '
            + _badge(NOT_RUN)
            + "</h2><p>No validation in this run.</p></section>"
        )
    tally = validation.get("expectations", {})
    err, warn = tally.get("error", {}), tally.get("warning", {})
    cards = "".join(
        [
            _card("errors failed", err.get("failed", 0), "validation-error-failed"),
            _card("warnings failed", warn.get("failed", 0), "validation-warning-failed"),
            _card("passed", err.get("passed", 0) + warn.get("passed", 0), "validation-passed"),
        ]
    )
    failed = validation.get("failed", [])
    rows = "".join(
        f'<tr data-check="{_e(o["check_id"])}"><td><code>{_e(o["check_id"])}</code></td>'
        f"<td>{_e(o['severity'])}</td>"
        f'<td class="num">{_e("-" if o.get("unexpected_count") is None else o["unexpected_count"])}</td>'
        f"<td>{_e(o.get('description'))}</td>"
        f"<td><code>{_e(_sample(o))}</code></td></tr>"
        for o in failed
    )
    links = []
    if docs_href:
        links.append(f'<a id="data-docs-link" href="{_e(docs_href)}">Great Expectations Data Docs</a>')
    if summary_href:
        links.append(f'<a id="validation-summary-link" href="{_e(summary_href)}">validation summary</a>')
    return (
        f'<section id="validation"><h2>Validation '
        f"{_badge(validation_verdict(validation), 'validation-verdict')}</h2>"
        f"<p>{' · '.join(links)}</p><div class=cards>{cards}</div>"
        + (
            '<table id="validation-failed"><tr><th>check</th><th>severity</th><th>unexpected</th>'
            f"<th>expectation</th><th>sample</th></tr>{rows}</table>"
            if rows
            else "<p>Every expectation passed.</p>"
        )
        + "</section>"
    )


def render_operator_report(
    inputs: ReportInputs,
    *,
    run_id: str | None = None,
    docs_href: str | None = None,
    summary_href: str | None = None,
) -> str:
    """The whole page as a string (no I/O)."""
    sections = section_verdicts(inputs)
    overall = worst_verdict(*sections.values())
    why = []
    if inputs.audit and sections["cleaner audit"] != HEALTHY:
        parts = [p for p in sorted_partitions(inputs.audit) if p["verdict"] != HEALTHY]
        names = ", ".join(f"{p['partition']} ({p['verdict']})" for p in parts[:5])
        why.append(
            (sections["cleaner audit"], f"Cleaner audit {sections['cleaner audit']}: partitions {names}")
        )
    if inputs.plan and sections["expiration"] != HEALTHY:
        s = inputs.plan.get("summary", {})
        lost = len(
            {t["group_id"] for t in inputs.plan.get("tombstones", []) if t.get("kind") == "offset_commit"}
        )
        facts = [f"{lost} groups lost committed offsets"] if lost else []
        if s.get("dead_groups"):
            facts.append(f"{s['dead_groups']} dead groups to delete")
        if s.get("forecast_groups"):
            facts.append(
                f"{s['forecast_groups']} groups ({s.get('forecast_offsets', 0)} offsets) "
                "expire within the window"
            )
        why.append((sections["expiration"], f"Expiration {sections['expiration']}: " + ", ".join(facts)))
    if inputs.reload and sections["reload"] != HEALTHY:
        why.append(
            (
                sections["reload"],
                f"Reload: {inputs.reload.get('counts', {}).get('decode_errors', 0)} decode errors",
            )
        )
    if inputs.validation and sections["validation"] != HEALTHY:
        ids = ", ".join(o["check_id"] for o in inputs.validation.get("failed", [])[:5])
        why.append((sections["validation"], f"Validation {sections['validation']}: {ids}"))
    why.sort(key=lambda item: -_rank(item[0]))  # the worst section first
    as_of = _as_of_ms(inputs)
    section_badges = " ".join(f"{_e(name)} {_badge(v)}" for name, v in sections.items())
    banner_class = overall.replace(" ", "-")
    run_text = f"Run <code>{_e(run_id)}</code>, " if run_id else ""
    why_html = (
        "<ul>" + "".join(f"<li>{_e(w)}</li>" for _, w in why) + "</ul>"
        if why
        else "<div>Nothing needs attention.</div>"
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>offsetops report: {_e(overall)}{f" · run {_e(run_id)}" if run_id else ""}</title>
<style>{_CSS}</style></head>
<body><main>
<h1>__consumer_offsets operator report</h1>
<p class="muted">{run_text}evaluated as of <span id="as-of">{_iso(as_of)}</span>.</p>
<div class="banner {_e(banner_class)}" id="overall"><div class="big" id="overall-verdict">{_e(overall)}</div>
{why_html}
</div>
<p id="sections">{section_badges}</p>
{_audit_section(inputs.audit)}
{_plan_section(inputs.plan)}
{_reload_section(inputs.reload, inputs.validation)}
{_validation_section(inputs.validation, docs_href, summary_href)}
</main></body></html>
"""


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_operator_report(
    reports_dir: str | Path,
    *,
    run_id: str | None = None,
    base_url: str | None = None,
) -> OperatorReport:
    """Write ``report.html`` (and ``runs/<run id>/report.html``) from the JSON reports in ``reports_dir``."""
    reports = Path(reports_dir)
    inputs = ReportInputs.from_reports_dir(reports)
    targets = [reports / REPORT_FILE]
    if run_id:
        targets.append(reports / run_report_relative(run_id))
    docs = reports / "data_docs" / "index.html"
    summary = reports / "index.html"
    # Drawn once; only the relative links differ between report.html and runs/<id>/report.html.
    page = render_operator_report(
        inputs,
        run_id=run_id,
        docs_href=f"{_ROOT}data_docs/index.html" if docs.exists() else None,
        summary_href=f"{_ROOT}index.html" if summary.exists() else None,
    )
    for target in targets:
        root = os.path.relpath(reports, target.parent)
        _atomic_write(target, page.replace(_ROOT, "" if root == "." else f"{root}/"))
    sections = section_verdicts(inputs)
    verdict = worst_verdict(*sections.values())
    parts = sorted_partitions(inputs.audit) if inputs.audit else []
    worst = parts[0]["partition"] if parts and parts[0]["verdict"] != HEALTHY else None
    relative = run_report_relative(run_id) if run_id else REPORT_FILE
    return OperatorReport(
        path=targets[0],
        run_path=targets[1] if run_id else None,
        verdict=verdict,
        sections=sections,
        worst_partition=worst,
        url=report_url(reports, relative, base_url=base_url),
    )
