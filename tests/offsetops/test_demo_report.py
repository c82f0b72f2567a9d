"""`offsetops demo` after its run: the operator report offsets_topic_summary wrote is the one printed,
drawn again only when something it shows changed, and then it says why."""

from __future__ import annotations

import json
from pathlib import Path

from offsetops.checks.operator_report import write_operator_report

from offsetops.commands.demo import _operator_report


def _reports(tmp_path: Path) -> Path:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "reload.json").write_text(json.dumps({"counts": {"decode_errors": 0, "groups": 3}}))
    return reports


def test_the_run_s_report_is_printed_without_drawing_it_again(tmp_path, capsys) -> None:
    reports = _reports(tmp_path)
    written = write_operator_report(reports, run_id="r1")
    before = written.path.stat().st_mtime_ns
    assert _operator_report(reports, "r1") == written
    assert written.path.stat().st_mtime_ns == before
    assert "written again" not in capsys.readouterr().out


def test_a_report_whose_inputs_changed_is_drawn_again_and_says_why(tmp_path, capsys) -> None:
    reports = _reports(tmp_path)
    write_operator_report(reports, run_id="r1")
    (reports / "reload.json").write_text(json.dumps({"counts": {"decode_errors": 4, "groups": 3}}))
    operator = _operator_report(reports, "r1")
    assert operator is not None and operator.sections["reload"] != "HEALTHY"
    assert "Reload: 4 decode errors" in operator.path.read_text(encoding="utf-8")
    out = capsys.readouterr().out
    assert "operator report written again: the reports it was drawn from changed since" in out


def test_an_unreadable_input_is_reported_not_raised(tmp_path, capsys) -> None:
    reports = _reports(tmp_path)
    (reports / "validation.json").write_text("{not json")
    assert _operator_report(reports, "r1") is None
    err = capsys.readouterr().err
    assert "operator report not written" in err and "validation.json" in err
