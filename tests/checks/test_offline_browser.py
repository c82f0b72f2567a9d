"""The operator report and the Data Docs in headless Chromium with the network cut off.

Networking is cut at the browser: every request goes to a proxy on a dead loopback port (loopback not
bypassed) and no host name resolves. Each page is loaded over the DevTools protocol (``cdp.visit``),
which records every request the page makes; a control page with remote references proves the
recording sees them, and the report and every Data Docs page must ask for nothing but local files.

The report is built from a simulated log dir: the cleaner audit and the expiration plan are the real
``coordinator_core`` results, written in the JSON shape the Dagster assets write.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from offsetops.checks.operator_report import write_operator_report
from offsetops.checks.report import ValidationReport
from offsetops.checks.suite import suite_name
from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.cleaner.model import CRITICAL, DEGRADED, HEALTHY
from offsetops.coordinator_core.expiration import plan_expiration
from offsetops.coordinator_core.failover import DEFAULT_BYTES_PER_SECOND, forecast_failover, loads_from_audit
from offsetops.coordinator_core.loader import load_partition_dir
from offsetops.coordinator_core.sources.logdir import open_log_dir

from tests.checks.conftest import CORRUPTIONS
from tests.checks.test_browser import _chromium
from tests.support.cdp import Visit, visit

pytestmark = [pytest.mark.browser, pytest.mark.spark, pytest.mark.slow]

SIM_PARTITIONS = 10
RETENTION_MS = 60 * 60_000
HORIZON_MS = 24 * 3_600_000


@pytest.fixture(scope="module")
def chromium_args() -> list[str]:
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    return [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--proxy-server=http://127.0.0.1:{dead}",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ]


def _open(
    args: list[str], page: Path, tmp_path: Path, *, shot: str | None = None, height: int = 1600
) -> Visit:
    result = visit(args, page, tmp_path / "profile", height=height, screenshot=shot is not None)
    if shot is not None:
        assert result.screenshot is not None and result.screenshot[:8] == b"\x89PNG\r\n\x1a\n"
        (tmp_path / shot).write_bytes(result.screenshot)
        keep = os.environ.get("OFFSETOPS_SCREENSHOT_DIR")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / shot).write_bytes(result.screenshot)
    return result


def _text(dom: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", dom)))


def _card(dom: str, element_id: str) -> str:
    m = re.search(rf'id="{element_id}"><div class="n">([^<]*)</div>', dom)
    assert m, element_id
    return m.group(1)


@pytest.fixture(scope="module")
def reports(corrupted_report: ValidationReport, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A reports dir as a run leaves it: audit, plan, reload, validation and the Data Docs."""
    from offsetops.cli import main as cli_main

    root = tmp_path_factory.mktemp("offline-report")
    log_dir = root / "logdir"
    rc = cli_main(
        ["simulate", str(log_dir), "--groups", "24", "--days", "0.25", "--seed", "7", "--partitions",
         str(SIM_PARTITIONS), "--segment-bytes", "1MiB"]
    )  # fmt: skip
    assert rc == 0
    now_ms = int(json.loads((log_dir / "truth.json").read_text())["simulated_until_ms"])
    audit = audit_log_dir(log_dir, now_ms=now_ms, record_history=False)
    caches = [
        load_partition_dir(pd, num_partitions=SIM_PARTITIONS) for pd in open_log_dir(log_dir).partitions
    ]
    plan = plan_expiration(caches, now_ms=now_ms, retention_ms=RETENTION_MS, forecast_horizon_ms=HORIZON_MS)

    out = root / "reports"
    shutil.copytree(corrupted_report.summary_path.parent, out)
    audit_doc = audit.to_json()
    # The failover forecast rides on the audit (as rebuild_audit_report writes it); the threshold sits
    # between the second and third largest partitions' replay at the default rate, so two are slow.
    sizes = sorted((p.size_bytes for p in audit.partitions), reverse=True)
    threshold = int((sizes[1] + sizes[2]) / 2 / DEFAULT_BYTES_PER_SECOND * 1000)
    forecast = forecast_failover(loads_from_audit(audit.partitions), threshold_ms=threshold)
    audit_doc["failover"] = forecast.to_json()
    (out / "cleaner_audit.json").write_text(json.dumps(audit_doc))
    offset_tombs = [t for t in plan.tombstones if t.kind == "offset_commit"]
    plan_doc = {
        "tombstones": [t.to_journal() for t in plan.tombstones],
        "dead_groups": [d.to_json() for d in plan.dead_groups],
        "forecast": [f.to_json() for f in plan.forecast],
        "planned": [{"now_ms": now_ms, "retention_ms": RETENTION_MS, "forecast_horizon_ms": HORIZON_MS}],
        "summary": {
            "offset_tombstones": len(offset_tombs),
            "group_tombstones": len(plan.tombstones) - len(offset_tombs),
            "dead_groups": len(plan.dead_groups),
            "forecast_offsets": len(plan.forecast),
            "forecast_groups": len({f.group_id for f in plan.forecast}),
        },
    }
    (out / "expiration_plan.json").write_text(json.dumps(plan_doc))
    groups = sum(len(c.groups) for c in caches)
    offsets = sum(c.offset_count for c in caches)
    reload_doc = {
        "partitions": list(range(SIM_PARTITIONS)),
        "source": f"log dir {log_dir}",
        "elapsed_s": 1.0,
        "counts": {
            "groups": groups,
            "offsets": offsets,
            "pending_offsets": 0,
            "members": 0,
            "decode_errors": 0,
        },
        "segments": sum(len(pd.segments) for pd in open_log_dir(log_dir).partitions),
        "records": 0,
        "bytes": 0,
        "group_states": {},
        "error_kinds": {},
    }
    (out / "reload.json").write_text(json.dumps(reload_doc))
    (out / "validation.json").write_text(json.dumps(corrupted_report.to_dict(), default=str))
    operator = write_operator_report(out, run_id="run-1")
    rank = {HEALTHY: 0, DEGRADED: 1, CRITICAL: 2}
    worst = max(audit.partitions, key=lambda p: (rank[p.verdict], p.dirty_ratio, -p.partition))
    return {
        "operator": operator,
        "audit": audit,
        "worst": worst.partition,
        "offset_tombstones": len(offset_tombs),
        "forecast_offsets": len(plan.forecast),
        "groups": groups,
        "offsets": offsets,
        "validation": corrupted_report,
        "largest": sorted(audit.partitions, key=lambda p: -p.size_bytes)[:2],
    }


def test_recording_sees_what_a_page_asks_for(chromium_args: list[str], tmp_path: Path) -> None:
    page = tmp_path / "control.html"
    page.write_text(
        '<html><head><script src="https://cdn.example.com/lib.js"></script></head>'
        '<body><img src="http://198.51.100.7/pixel.png"></body></html>'
    )
    asked = _open(chromium_args, page, tmp_path).remote_requests
    assert any("cdn.example.com" in r for r in asked), asked
    assert any("198.51.100.7" in r for r in asked), asked


def test_operator_report_offline(reports: dict[str, Any], chromium_args: list[str], tmp_path: Path) -> None:
    operator = reports["operator"]
    seen = _open(chromium_args, operator.path, tmp_path, shot="operator-report.png", height=2200)
    dom = seen.dom
    text = _text(dom)
    assert re.search(r'id="overall-verdict">CRITICAL<', dom)
    assert operator.verdict == CRITICAL and operator.worst_partition == reports["worst"]
    assert re.search(rf'id="audit-worst">Worst partition: <strong>{reports["worst"]}</strong>', dom)
    first_row = re.search(r'<table id="audit-partitions">.*?<tr data-partition="(\d+)"', dom, re.S)
    assert first_row and int(first_row.group(1)) == reports["worst"]
    summary = reports["audit"].to_json()["summary"]
    assert _card(dom, "audit-critical") == str(summary["critical"])
    assert _card(dom, "audit-degraded") == str(summary["degraded"])
    assert _card(dom, "audit-open-txns") == str(summary["open_transactions"])
    assert _card(dom, "plan-offset-tombstones") == str(reports["offset_tombstones"])
    assert _card(dom, "plan-forecast-offsets") == str(reports["forecast_offsets"])
    assert _card(dom, "reload-groups") == str(reports["groups"])
    assert _card(dom, "reload-offsets") == str(reports["offsets"])
    assert _card(dom, "validation-error-failed") == str(len(CORRUPTIONS))
    assert 'id="chart-partition-bytes"' in dom and 'id="chart-expiration-timeline"' in dom
    assert "min.cleanable.dirty.ratio 0.5" in text  # chart text is real SVG text
    # The failover forecast: the two largest partitions over the threshold, the largest first, and
    # named in the banner.
    slow = re.findall(r'<tr data-partition="(\d+)"><td class="num">\d+</td><td><span class="verdict DEGRADED',
                      dom.split('id="failover-slow-partitions"', 1)[1].split("</table>", 1)[0])  # fmt: skip
    assert [int(p) for p in slow] == [p.partition for p in reports["largest"]]
    assert re.search(r'id="failover-verdict">DEGRADED<', dom)
    assert _card(dom, "failover-slow") == "2"
    banner = text[: text.index("cleaner audit")]
    assert f"Failover forecast DEGRADED: after a leader change, partitions {slow[0]} (about" in banner
    assert 'href="data_docs/index.html"' in dom
    assert len(seen.screenshot or b"") > 50_000
    assert seen.requests == [operator.path.resolve().as_uri()]  # the page itself, nothing else
    assert seen.remote_requests == []


def test_data_docs_offline(reports: dict[str, Any], chromium_args: list[str], tmp_path: Path) -> None:
    validation: ValidationReport = reports["validation"]
    site = validation.data_docs_index.parent
    index = _open(chromium_args, validation.data_docs_index, tmp_path, shot="data-docs-index.png", height=900)
    for table in validation.counts:
        assert re.search(rf'<a href="[^"]+">{re.escape(suite_name(table))}</a>', index.dom), table
    assert "ge-static-table" in index.dom
    # the vendored CSS and JS were loaded from the site's own folder
    assert any(u.endswith("static/vendor/bootstrap/css/bootstrap.min.css") for u in index.requests)
    assert any(u.endswith("static/vendor/jquery/jquery.min.js") for u in index.requests)
    assert index.remote_requests == []
    pages = sorted(site.glob("validations/**/*.html")) + sorted(site.glob("expectations/**/*.html"))
    assert len(pages) == 2 * len(validation.counts)
    for page in pages:
        seen = _open(chromium_args, page, tmp_path, shot=None)
        assert "Expectation" in _text(seen.dom), page
        assert seen.remote_requests == [], (page, seen.remote_requests)
    groups_page = next(p for p in pages if p.name.endswith("groups.html"))
    _open(chromium_args, groups_page, tmp_path, shot="data-docs-groups.png", height=1400)
