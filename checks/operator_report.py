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

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from offsetops.checks.report_html import CSS, badge, esc, iso
from offsetops.checks.report_sections import (
    audit_section,
    failover_section,
    plan_section,
    reload_section,
    validation_section,
)
from offsetops.checks.report_verdicts import (
    NOT_RUN,
    VERDICTS,
    ReportInputError,
    ReportInputs,
    failover_load_ms,
    rank,
    section_verdicts,
    sorted_partitions,
    worst_verdict,
)
from offsetops.coordinator_core.atomic import write_json_atomic, write_text_atomic
from offsetops.coordinator_core.cleaner.model import DEGRADED, HEALTHY
from offsetops.coordinator_core.failover import format_load_time
from offsetops.coordinator_core.findings import and_more
from offsetops.coordinator_core.untrusted import read_regular_file

__all__ = [
    "ENV_REPORTS_BASE_URL",
    "NOT_RUN",
    "REPORT_FILE",
    "RUNS_DIR",
    "VERDICTS",
    "OperatorReport",
    "ReportInputError",
    "ReportInputs",
    "render_operator_report",
    "report_url",
    "reports_base_url",
    "reuse_operator_report",
    "run_report_relative",
    "worst_verdict",
    "write_operator_report",
]

REPORT_FILE = "report.html"
"""The latest run's report, at the top of the reports dir."""
RUNS_DIR = "runs"
"""``runs/<run id>/report.html``: one kept per run."""
STAMP_FILE = "report-inputs.json"
"""Beside ``runs/<run id>/report.html``: digests of the reports it was drawn from and of the pages written."""
#: changes whenever the page's rendering changes, so a report drawn by other code is never reused
REPORT_FORMAT = 1
ENV_REPORTS_BASE_URL = "OFFSETOPS_REPORTS_BASE_URL"
_ROOT = "\x00reports-root\x00"  # the path from a page back to the reports dir (escaped in the page)


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


@dataclass(frozen=True)
class OperatorReport:
    """What :func:`write_operator_report` wrote and the verdicts it showed."""

    path: Path
    run_path: Path | None
    verdict: str
    sections: dict[str, str]
    worst_partition: int | None
    url: str


def _as_of_ms(inputs: ReportInputs) -> int | None:
    if inputs.plan and inputs.plan.get("planned"):
        return int(inputs.plan["planned"][0]["now_ms"])
    if inputs.audit and inputs.audit.get("audited_at_ms") is not None:
        return int(inputs.audit["audited_at_ms"])
    if inputs.validation and inputs.validation.get("now_ms") is not None:
        return int(inputs.validation["now_ms"])
    return None


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
    why = _why(inputs, sections)
    as_of = _as_of_ms(inputs)
    section_badges = " ".join(f"{esc(name)} {badge(v)}" for name, v in sections.items())
    banner_class = overall.replace(" ", "-")
    run_text = f"Run <code>{esc(run_id)}</code>, " if run_id else ""
    why_html = (
        "<ul>" + "".join(f"<li>{esc(w)}</li>" for _, w in why) + "</ul>"
        if why
        else "<div>Nothing needs attention.</div>"
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>offsetops report: {esc(overall)}{f" · run {esc(run_id)}" if run_id else ""}</title>
<style>{CSS}</style></head>
<body><main>
<h1>__consumer_offsets operator report</h1>
<p class="muted">{run_text}evaluated as of <span id="as-of">{iso(as_of)}</span>.</p>
<div class="banner {esc(banner_class)}" id="overall">
<div class="big" id="overall-verdict">{esc(overall)}</div>
{why_html}
</div>
<p id="sections">{section_badges}</p>
{audit_section(inputs.audit)}
{failover_section(inputs.audit)}
{plan_section(inputs.plan)}
{reload_section(inputs.reload, inputs.validation)}
{validation_section(inputs.validation, docs_href, summary_href)}
{settings_footer(inputs)}
</main></body></html>
"""


def _why(inputs: ReportInputs, sections: dict[str, str]) -> list[tuple[str, str]]:
    """(verdict, sentence) per section that needs attention, the worst section first."""
    why: list[tuple[str, str]] = []
    why = []
    if inputs.audit and sections["cleaner audit"] != HEALTHY:
        parts = [p for p in sorted_partitions(inputs.audit) if p["verdict"] != HEALTHY]
        names = and_more(parts, 5, lambda p: f"{p['partition']} ({p['verdict']})")
        why.append(
            (sections["cleaner audit"], f"Cleaner audit {sections['cleaner audit']}: partitions {names}")
        )
    if inputs.audit and sections["failover"] == DEGRADED:
        fo = inputs.audit["failover"]
        slow = [p for p in fo["partitions"] if p.get("slow")]
        names = and_more(
            slow, 5, lambda p: f"{p['partition']} (about {format_load_time(failover_load_ms(p))})"
        )
        why.append(
            (
                DEGRADED,
                f"Failover forecast DEGRADED: after a leader change, partitions {names} would keep their "
                f"groups in COORDINATOR_LOAD_IN_PROGRESS longer than {format_load_time(fo['threshold_ms'])}",
            )
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
        ids = and_more(inputs.validation.get("failed", []), 5, lambda o: str(o["check_id"]))
        why.append((sections["validation"], f"Validation {sections['validation']}: {ids}"))
    why.sort(key=lambda item: -rank(item[0]))  # the worst section first
    return why


def settings_footer(inputs: ReportInputs) -> str:
    """The settings the reports were computed with and where each came from (the run model's JSON the
    expiration plan, else the cleaner audit, carries)."""
    doc = (inputs.plan or {}).get("settings") or (inputs.audit or {}).get("settings")
    if not isinstance(doc, dict) or not doc:
        return '<footer id="settings" class="muted">Settings: not recorded by these reports.</footer>'
    rows = "".join(
        f"<tr><td>{esc(name)}</td><td>{esc(entry.get('iso') or entry.get('value'))}</td>"
        f"<td>{esc(entry.get('source'))}</td></tr>"
        for name, entry in doc.items()
        if isinstance(entry, dict)
    )
    return (
        '<footer id="settings"><h2>Settings</h2><table><thead><tr><th>setting</th><th>value</th>'
        f"<th>from</th></tr></thead><tbody>{rows}</tbody></table></footer>"
    )


def write_operator_report(
    reports_dir: str | Path,
    *,
    run_id: str | None = None,
    base_url: str | None = None,
) -> OperatorReport:
    """Write ``report.html`` (and ``runs/<run id>/report.html``) from the JSON reports in ``reports_dir``;
    with a run id, also what they were drawn from (:data:`STAMP_FILE`), so the run's report can be reused."""
    reports = Path(reports_dir)
    inputs = ReportInputs.from_reports_dir(reports)
    targets = _targets(reports, run_id)
    links = _links(reports)
    # Drawn once; only the relative links differ between report.html and runs/<id>/report.html.
    page = render_operator_report(
        inputs,
        run_id=run_id,
        docs_href=f"{_ROOT}data_docs/index.html" if links["docs"] else None,
        summary_href=f"{_ROOT}index.html" if links["summary"] else None,
    )
    pages = {}
    for target in targets:
        root = os.path.relpath(reports, target.parent)
        text = page.replace(esc(_ROOT), "" if root == "." else f"{root}/")
        write_text_atomic(target, text)
        pages[target.relative_to(reports).as_posix()] = _sha256(text.encode("utf-8"))
    if run_id:
        stamp = {"format": 1, "run_id": run_id, "inputs": _inputs_digest(inputs, links), "pages": pages}
        write_json_atomic(targets[1].parent / STAMP_FILE, stamp)
    return _described(reports, inputs, targets, run_id, base_url)


def reuse_operator_report(
    reports_dir: str | Path, *, run_id: str, base_url: str | None = None
) -> tuple[OperatorReport | None, str]:
    """The report :func:`write_operator_report` wrote for ``run_id``, when its pages are still the ones it
    wrote and the reports it was drawn from have not changed since; else None and why not."""
    reports = Path(reports_dir)
    targets = _targets(reports, run_id)
    stamp_path = targets[1].parent / STAMP_FILE
    if not stamp_path.exists():
        return None, f"no report was written for run {run_id}"
    try:
        stamp = json.loads(read_regular_file(stamp_path, kind="report"))
    except (OSError, ValueError) as exc:
        return None, f"{stamp_path} unreadable ({exc})"
    if not isinstance(stamp, dict) or stamp.get("format") != 1 or stamp.get("run_id") != run_id:
        return None, f"{stamp_path} is not this run's"
    inputs = ReportInputs.from_reports_dir(reports)
    if stamp.get("inputs") != _inputs_digest(inputs, _links(reports)):
        return None, "the reports it was drawn from changed since"
    for target in targets:
        relative = target.relative_to(reports).as_posix()
        try:
            digest = _sha256(read_regular_file(target, kind="report"))
        except OSError as exc:
            return None, f"{relative} unreadable ({exc})"
        if digest != (stamp.get("pages") or {}).get(relative):
            return None, f"{relative} changed since"
    return _described(reports, inputs, targets, run_id, base_url), ""


def _targets(reports: Path, run_id: str | None) -> list[Path]:
    """``report.html``, and the run's own copy when there is a run id."""
    return [reports / REPORT_FILE, *([reports / run_report_relative(run_id)] if run_id else [])]


def _links(reports: Path) -> dict[str, bool]:
    """Which pages the report links to exist (the Data Docs, the validation summary)."""
    return {
        "docs": (reports / "data_docs" / "index.html").exists(),
        "summary": (reports / "index.html").exists(),
    }


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _inputs_digest(inputs: ReportInputs, links: dict[str, bool]) -> str:
    """A digest of everything a page is drawn from: the four reports and which linked pages exist."""
    doc = [inputs.audit, inputs.plan, inputs.reload, inputs.validation, links, REPORT_FORMAT]
    return _sha256(json.dumps(doc, sort_keys=True, default=str).encode("utf-8", "surrogatepass"))


def _described(
    reports: Path, inputs: ReportInputs, targets: list[Path], run_id: str | None, base_url: str | None
) -> OperatorReport:
    """What the pages at ``targets`` show: the verdicts, the worst partition, the link."""
    sections = section_verdicts(inputs)
    parts = sorted_partitions(inputs.audit) if inputs.audit else []
    worst = parts[0]["partition"] if parts and parts[0]["verdict"] != HEALTHY else None
    relative = run_report_relative(run_id) if run_id else REPORT_FILE
    return OperatorReport(
        path=targets[0],
        run_path=targets[1] if run_id else None,
        verdict=worst_verdict(*sections.values()),
        sections=sections,
        worst_partition=worst,
        url=report_url(reports, relative, base_url=base_url),
    )
