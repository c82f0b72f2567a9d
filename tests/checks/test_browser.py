"""Render the summary page and the Data Docs index in Debian's headless chromium."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from offsetops.checks.report import ValidationReport
from offsetops.checks.suite import suite_name

from tests.checks.conftest import CORRUPTIONS

pytestmark = [pytest.mark.browser, pytest.mark.spark]

CHROMIUM = "/usr/bin/chromium"


def _chromium() -> str:
    path = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if not path:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    return path


def _chromium_args(user_data_dir: Path) -> list[str]:
    return [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        f"--user-data-dir={user_data_dir}",
    ]


def render_dom(page: Path, tmp_path: Path) -> str:
    """The DOM of ``page`` after chromium has loaded it (scripts run, CSS applied)."""
    proc = subprocess.run(
        [*_chromium_args(tmp_path / "profile-dom"), "--dump-dom", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _text(dom: str) -> str:
    """Visible-ish text of a DOM: tags dropped, entities decoded, whitespace collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", dom)))


def test_summary_page_shows_key_numbers(corrupted_report: ValidationReport, tmp_path: Path) -> None:
    dom = render_dom(corrupted_report.summary_path, tmp_path)
    text = _text(dom)
    counts = corrupted_report.counts
    tally = corrupted_report.by_severity
    for css_id, value in [
        ("count-groups", counts["groups"]),
        ("count-offsets", counts["offsets"]),
        ("count-members", counts["members"]),
        ("count-decode-errors", counts["decode_errors"]),
        ("error-passed", tally["error"]["passed"]),
        ("error-failed", tally["error"]["failed"]),
        ("warning-passed", tally["warning"]["passed"]),
        ("warning-failed", tally["warning"]["failed"]),
    ]:
        match = re.search(rf'id="{css_id}"><div class="n">(\d+)</div>', dom)
        assert match, css_id
        assert int(match.group(1)) == value, css_id
    assert tally["error"]["failed"] == len(CORRUPTIONS)
    assert "FAILED: error-level expectations failed" in text
    for check_id in CORRUPTIONS:
        row = re.search(rf'<tr class="failed error" data-check="{re.escape(check_id)}">.*?</tr>', dom, re.S)
        assert row, check_id
        assert "FAILED" in row.group(0)
    assert 'href="data_docs/index.html"' in dom
    assert "crc_mismatch" in text  # the decode error sample is shown


def test_summary_page_screenshot(corrupted_report: ValidationReport, tmp_path: Path) -> None:
    shot = tmp_path / "summary.png"
    proc = subprocess.run(
        [
            *_chromium_args(tmp_path / "profile-shot"),
            f"--screenshot={shot}",
            "--window-size=1280,1600",
            corrupted_report.summary_path.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000  # a real page, not a blank canvas


def test_data_docs_index_renders(corrupted_report: ValidationReport, tmp_path: Path) -> None:
    dom = render_dom(corrupted_report.data_docs_index, tmp_path)
    text = _text(dom)
    for table in corrupted_report.counts:
        assert suite_name(table) in text
    assert "Validation" in text
