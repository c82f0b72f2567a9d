"""The validation summary (``index.html``, ``summary.json``) and the operator report (``report.html``)
follow the file policy: 0640, and a link planted at their path is replaced, never written through."""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path

from offsetops.checks.operator_report import REPORT_FILE, write_operator_report
from offsetops.checks.report import ValidationReport, write_summary


def test_index_html_and_summary_json_replace_planted_links(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("index.html", "summary.json"):
        (reports / name).symlink_to(victim)
    report = ValidationReport(
        success_error_level=True,
        success=True,
        counts={"groups": 0},
        outcomes=[],
        data_docs_index=reports / "data_docs" / "index.html",
        summary_path=reports / "index.html",
        run_name="t",
        now_ms=0,
        num_partitions=1,
        elapsed_ms=math.nan,  # a third-party number that is not finite is written as null
    )
    write_summary(report)
    assert victim.read_text() == "precious\n"
    for name in ("index.html", "summary.json"):
        assert not (reports / name).is_symlink()
        assert stat.S_IMODE((reports / name).stat().st_mode) == 0o640
    assert json.loads((reports / "summary.json").read_text())["elapsed_ms"] is None


def test_report_html_replaces_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / REPORT_FILE).symlink_to(victim)
    out = write_operator_report(reports)
    assert out.path == reports / REPORT_FILE and not out.path.is_symlink()
    assert victim.read_text() == "precious\n" and stat.S_IMODE(out.path.stat().st_mode) == 0o640
