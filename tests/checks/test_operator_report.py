"""The operator report page without a browser: verdicts, ordering, escaping, links."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from offsetops.checks.operator_report import (
    ENV_REPORTS_BASE_URL,
    NOT_RUN,
    ReportInputError,
    report_url,
    reuse_operator_report,
    worst_verdict,
    write_operator_report,
)

NOW_MS = 1_760_000_000_000
XSS = "<img src=x onerror=alert(1)>"


def _partition(n: int, verdict: str, dirty: float, reasons: list[dict] | None = None) -> dict:
    return {
        "partition": n,
        "verdict": verdict,
        "reasons": reasons or [],
        "size_bytes": 3 << 20,
        "reclaimable_bytes": 1 << 20,
        "dirty_ratio": dirty,
        "open_transactions": [],
        "log_start_offset": 0,
        "log_end_offset": 100,
    }


def _write(reports: Path, **docs: object) -> None:
    reports.mkdir(parents=True, exist_ok=True)
    for name, doc in docs.items():
        (reports / f"{name}.json").write_text(json.dumps(doc))


def _audit() -> dict:
    finding = {
        "severity": "CRITICAL",
        "code": "hanging_transaction",
        "message": f"txn of {XSS}",
        "remedy": "abort",
    }
    return {
        "verdict": "CRITICAL",
        "reasons": [],
        "log_dir": "/data",
        "audited_at_ms": NOW_MS,
        "summary": {"critical": 1, "degraded": 1, "healthy": 1, "size_bytes": 9 << 20,
                    "reclaimable_bytes": 3 << 20, "max_dirty_ratio": 0.9, "open_transactions": 1},
        "config": {"min_cleanable_dirty_ratio": {"value": 0.5}},
        "partitions": [
            _partition(0, "HEALTHY", 0.1),
            _partition(6, "DEGRADED", 0.9, [dict(finding, severity="DEGRADED", message="dirty")]),
            _partition(47, "CRITICAL", 0.0, [finding]),
        ],
    }  # fmt: skip


def _plan(expired: bool) -> dict:
    tomb = {"offsets_partition": 3, "kind": "offset_commit", "group_id": XSS, "topic": "t", "partition": 0,
            "reason": "r", "age_ms": 7_200_000}  # fmt: skip
    hours = 5 * 3_600_000
    forecast = {"offsets_partition": 3, "group_id": "billing", "topic": "t", "partition": 1, "reason": "r",
                "base_timestamp": NOW_MS, "expires_at": NOW_MS + hours, "expires_in_ms": hours}  # fmt: skip
    return {
        "tombstones": [tomb] if expired else [],
        "dead_groups": [],
        "forecast": [forecast],
        "planned": [{"now_ms": NOW_MS, "retention_ms": 7 * 86_400_000, "forecast_horizon_ms": 86_400_000}],
        "summary": {
            "offset_tombstones": int(expired),
            "dead_groups": 0,
            "forecast_offsets": 1,
            "forecast_groups": 1,
        },
    }


def test_overall_is_the_worst_and_names_the_worst_partition_first(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    _write(reports, cleaner_audit=_audit(), expiration_plan=_plan(expired=True))
    out = write_operator_report(reports, run_id="r1")
    assert out.verdict == "CRITICAL"
    assert out.worst_partition == 47
    assert out.sections == {"cleaner audit": "CRITICAL", "failover": NOT_RUN, "expiration": "CRITICAL",
                            "reload": NOT_RUN, "validation": NOT_RUN}  # fmt: skip
    page = out.path.read_text(encoding="utf-8")
    assert (
        page.index('data-partition="47"')
        < page.index('data-partition="6"')
        < page.index('data-partition="0"')
    )
    assert "partitions 47 (CRITICAL), 6 (DEGRADED)" in page
    assert "1 groups lost committed offsets" in page
    assert out.run_path is not None and out.run_path.read_text(encoding="utf-8").count("<svg") == 2


def test_forecast_only_is_degraded(tmp_path: Path) -> None:
    _write(tmp_path, expiration_plan=_plan(expired=False))
    assert write_operator_report(tmp_path).verdict == "DEGRADED"
    assert worst_verdict(NOT_RUN, NOT_RUN) == NOT_RUN


def test_data_is_escaped_and_nothing_is_fetched(tmp_path: Path) -> None:
    _write(tmp_path, cleaner_audit=_audit(), expiration_plan=_plan(expired=True))
    page = write_operator_report(tmp_path).path.read_text(encoding="utf-8")
    assert XSS not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script" not in page and "<metadata>" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//""", page)


def test_report_url_uses_the_base_url(tmp_path: Path) -> None:
    assert (
        report_url(tmp_path, base_url="https://ops.example.com/r/") == "https://ops.example.com/r/report.html"
    )
    env = {ENV_REPORTS_BASE_URL: "https://ops.example.com/reports"}
    assert report_url(tmp_path, "runs/a b/report.html", env=env) == (
        "https://ops.example.com/reports/runs/a%20b/report.html"
    )
    assert report_url(tmp_path, env={}) == (tmp_path.absolute() / "report.html").as_uri()
    _write(tmp_path, cleaner_audit=_audit())
    out = write_operator_report(tmp_path, run_id="abc-1", base_url="https://ops.example.com/reports")
    assert out.url == "https://ops.example.com/reports/runs/abc-1/report.html"


def test_unreadable_report_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "cleaner_audit.json").write_text("{not json")
    with pytest.raises(ReportInputError, match=r"cleaner_audit\.json"):
        write_operator_report(tmp_path)


def test_failover_forecast_section_worst_first_and_escaped(tmp_path: Path) -> None:
    audit = _audit()
    audit["verdict"], audit["partitions"] = "HEALTHY", [_partition(0, "HEALTHY", 0.1)]
    audit["failover"] = {
        "calibration": {"bytes_per_second": 2 * 2**20, "source": "broker_log", "samples": 1, "note": XSS},
        "threshold_ms": 10_000,
        "slow_partitions": [9, 4],
        "partitions": [
            {"partition": 9, "bytes": 64 << 20, "batches": 10, "records": 90, "live_keys": 5,
             "estimated_load_ms": 32_000, "observed_load_ms": None, "slow": True},
            {"partition": 4, "bytes": 8 << 20, "batches": 3, "records": 9, "live_keys": 2,
             "estimated_load_ms": 4_000, "observed_load_ms": 12_500, "slow": True},
            {"partition": 0, "bytes": 1 << 20, "batches": 1, "records": 1, "live_keys": 1,
             "estimated_load_ms": 500, "observed_load_ms": None, "slow": False},
        ],
    }  # fmt: skip
    _write(tmp_path, cleaner_audit=audit)
    out = write_operator_report(tmp_path)
    assert out.verdict == "DEGRADED" and out.sections["failover"] == "DEGRADED"
    page = out.path.read_text(encoding="utf-8")
    assert "partitions 9 (about 32.0 s), 4 (about 12.5 s) would keep their groups" in page
    section = page[page.index('<section id="failover">') :]
    slow_table = section[section.index('id="failover-slow-partitions"') : section.index("</table>")]
    assert re.findall(r'data-partition="(\d+)"', slow_table) == ["9", "4"]
    assert "__consumer_offsets-9</strong> would get COORDINATOR_LOAD_IN_PROGRESS for about" in section
    assert XSS not in page and "2.0 MiB/s" in section


def test_reload_section_counts_groups_per_type_and_says_where_share_offsets_are(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reload = {
        "counts": {"groups": 4, "offsets": 9, "decode_errors": 0},
        "group_states": {"Stable": 3, "NotReady": 1},
        "group_types": {"classic": 1, "consumer": 1, "share": 1, XSS: 1},
        "partitions": [0],
    }
    _write(reports, reload=reload)
    page = write_operator_report(reports, run_id="r1").path.read_text(encoding="utf-8")
    types = re.search(r'<p id="reload-group-types">(.*?)</p>', page)
    assert types is not None and "classic 1, consumer 1, share 1" in types.group(1)
    assert XSS not in page  # group types come from the data: escaped
    note = re.search(r'<p id="reload-share-note">(.*?)</p>', page)
    assert note is not None and "__share_group_state" in note.group(1)


def test_the_run_s_report_is_reused_while_its_inputs_and_pages_are_unchanged(tmp_path: Path) -> None:
    """What the demo prints after the run: the report offsets_topic_summary wrote, not drawn again."""
    reports = tmp_path / "reports"
    _write(reports, cleaner_audit=_audit(), expiration_plan=_plan(expired=False))
    written = write_operator_report(reports, run_id="r1")
    assert written.run_path is not None
    stamps = {p: p.stat().st_mtime_ns for p in (written.path, written.run_path)}
    reused, why_not = reuse_operator_report(reports, run_id="r1")
    assert (reused, why_not) == (written, "")
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda r: _write(r, expiration_plan=_plan(expired=True)), "the reports it was drawn from changed"),
        (
            lambda r: _write(r, reload={"counts": {"decode_errors": 3}}),
            "the reports it was drawn from changed",
        ),
        (lambda r: (r / "index.html").write_text("summary"), "the reports it was drawn from changed"),
        (lambda r: (r / "report.html").write_text("another run's page"), "report.html changed since"),
        (lambda r: (r / "runs" / "r1" / "report-inputs.json").write_text('{"format": 1, "ru'), "unreadable"),
        (lambda r: (r / "runs" / "r1" / "report-inputs.json").unlink(), "no report was written for run r1"),
    ],
)
def test_the_run_s_report_is_drawn_again_when_anything_it_shows_changed(tmp_path: Path, change, why) -> None:
    reports = tmp_path / "reports"
    _write(reports, cleaner_audit=_audit(), expiration_plan=_plan(expired=False))
    write_operator_report(reports, run_id="r1")
    change(reports)
    reused, why_not = reuse_operator_report(reports, run_id="r1")
    assert reused is None and why in why_not


def test_another_run_s_report_is_not_reused(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    _write(reports, cleaner_audit=_audit())
    write_operator_report(reports, run_id="r1")
    reused, why_not = reuse_operator_report(reports, run_id="r2")
    assert reused is None and why_not == "no report was written for run r2"
