"""Hostile strings from the data reach every surface escaped by that medium's policy.

A group id, a log dir's name, a broker scan's strings and the clock file's ``declared_by`` are chosen by
whoever can commit offsets or write to the volumes; none may forge a line of ``audit`` text, reorder the
terminal (bidi), mark up the report, or split a Prometheus sample.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from offsetops.checks.operator_report import render_operator_report
from offsetops.checks.report_verdicts import ReportInputs
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.metrics_snapshot import compute_snapshot, snapshot_metrics
from offsetops.coordinator_core.records.builder import build_record_batch
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from offsetops.cli import main
from tests.support.forensics_log import T0, _commit

FORGED = "\nverdict: HEALTHY\n"
HOSTILE_GROUP = f"pay{FORGED}\x1b[2J\u202eexe.txt\u2028<b>x</b>"
HOSTILE_DIR = "logs\u202eevil\nverdict: HEALTHY"
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _hostile_log_dir(tmp_path: Path) -> Path:
    log_dir = tmp_path / HOSTILE_DIR
    pdir = log_dir / "__consumer_offsets-0"
    pdir.mkdir(parents=True)
    batch = build_record_batch([_commit(HOSTILE_GROUP, "t\x1b]0;x\x07", 0, 5, T0)], base_offset=0)
    (pdir / "00000000000000000000.log").write_bytes(batch)
    (log_dir / "offsetops-clock.json").write_text(
        json.dumps({"format": 1, "as_of_ms": T0 + 60_000, "declared_by": f"ci\x1b[31m{FORGED}\u202e"})
    )
    return log_dir


def _lines_are_ours(out: str) -> None:
    assert not RAW.search(out), repr(out)
    forged = [line for line in out.splitlines() if line.startswith("verdict: HEALTHY")]
    assert len(forged) <= 1  # only the audit's own verdict line


@pytest.mark.parametrize("command", ["audit", "groups", "describe", "expire"])
def test_cli_text_keeps_hostile_names_on_their_own_line(tmp_path: Path, capsys, command: str) -> None:
    log_dir = _hostile_log_dir(tmp_path)
    extra = ["--no-record"] if command == "audit" else ["--num-partitions", "1"]
    code = main([command, str(log_dir), *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    _lines_are_ours(out)
    _lines_are_ours(err)
    if command == "audit":
        # the clock's declaration and the directory are in the "as of" line, escaped
        assert "\\x1b[31m\\nverdict: HEALTHY\\n\\u202e" in out and "verdict: HEALTHY\n" in out
    if command in ("groups", "describe"):
        assert "pay\\nverdict: HEALTHY\\n\\x1b[2J\\u202eexe.txt\\u2028" in out


def test_report_html_neutralises_hostile_names(tmp_path: Path) -> None:
    plan = {
        "summary": {"offset_tombstones": 1, "dead_groups": 0, "forecast_offsets": 0},
        "tombstones": [
            {"kind": "offset_commit", "group_id": HOSTILE_GROUP, "topic": "t\u202e", "partition": 0,
             "reason": "x", "age_ms": 1, "offsets_partition": 0}
        ],
        "planned": [{"now_ms": T0}],
        "forecast": [],
        "dead_groups": [],
    }  # fmt: skip
    audit = {
        "verdict": "DEGRADED",
        "log_dir": HOSTILE_DIR,
        "audited_at_ms": T0,
        "summary": {},
        "reasons": [],
        "partitions": [
            {"partition": 0, "verdict": "DEGRADED", "size_bytes": 10, "reasons": [
                {"severity": "DEGRADED", "code": "corrupt_data", "message": HOSTILE_GROUP,
                 "remedy": "offsetops dump <segment>"}]}
        ],
    }  # fmt: skip
    page = render_operator_report(ReportInputs(audit, plan, None, None), run_id="r\u202e1")
    body = page.split("<body>", 1)[1]
    assert not RAW.search(body)
    assert "<b>x</b>" not in body and "&lt;b&gt;x&lt;/b&gt;" in body
    assert "\\u202e" in body and "\\x1b[2J" in body
    assert "<code>offsetops dump &lt;segment&gt;</code>" in body  # the remedy's command as code


def test_prometheus_label_values_from_the_data_are_escaped(tmp_path: Path) -> None:
    log_dir = _hostile_log_dir(tmp_path)
    caches = load_log_dir(str(log_dir), num_partitions=1)
    snap = compute_snapshot(
        caches,
        {},
        log_dir=None,
        now_ms=T0,
        retention_ms=3_600_000,
        forecast_horizon_ms=3_600_000,
        taken_at=T0 / 1000,
    )

    class Families:
        def collect(self):
            return list(snapshot_metrics(snap))

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families())  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    assert not RAW.search(text)
    parsed = {
        s.labels["group_id"]
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if "group_id" in s.labels
    }
    assert parsed == {"pay\\nverdict: HEALTHY\\n\\x1b[2J\\u202eexe.txt\\u2028<b>x</b>"}


def test_broker_scan_strings_are_escaped_in_audit_text(tmp_path: Path, capsys) -> None:
    """A scan carries its broker's log dir name and whatever its collector wrote; the central audit
    prints them escaped (a scan file is written by another host)."""
    log_dir = _hostile_log_dir(tmp_path)
    scans = tmp_path / "scans"
    assert main(["broker-scan", "--log-dir", f"1={log_dir}", "--out", str(scans), "--now", str(T0)]) == 0
    (scan,) = scans.glob("broker-*.json")
    doc = json.loads(scan.read_text())
    doc["log_dir"] = f"/data{FORGED}\x1b[2J\u202e"  # as a hostile collector would write it
    scan.write_text(json.dumps(doc))
    capsys.readouterr()
    code = main(["audit", "--broker-scans", str(scans), "--now", str(T0)])
    out, err = capsys.readouterr()
    assert code == 0, err
    _lines_are_ours(out)
    _lines_are_ours(err)
    assert "brokers: 1=/data\\nverdict: HEALTHY\\n\\x1b[2J\\u202e" in out
