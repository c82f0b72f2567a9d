"""One truth on every surface: the same verdict per partition, the same worst-first order and the same
words in the CLI (JSON and text of audit, expire, groups), report.html, the Dagster metadata and check
results, the Slack messages on the loopback server, and the Prometheus textfile.

The scenario is the session's full materialization (tests/assets/conftest.py): a simulated cluster with
a CRITICAL partition (its cleaner stalled two days), DEGRADED ones, and groups whose offsets expire
within the window (retention 60 min). Every surface is rendered from that one run and compared with the
one order of :mod:`offsetops.coordinator_core.findings`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey
from offsetops.coordinator_core.findings import (
    CRITICAL,
    DEGRADED,
    HEALTHY,
    prometheus_value,
    remedy_parts,
    worst_first,
)
from prometheus_client.parser import text_string_to_metric_families

from offsetops.cli import main
from tests.assets.conftest import Materialized
from tests.support.slack_server import SlackTestServer

pytestmark = pytest.mark.slow

RETENTION_MS = 60 * 60_000  # the fixture's expiration_plan retention_minutes


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def audit_doc(materialized: Materialized) -> dict[str, Any]:
    return json.loads((materialized.output_dir / "reports" / "cleaner_audit.json").read_text())


@pytest.fixture(scope="module")
def expected(audit_doc: dict[str, Any]) -> list[int]:
    """The unhealthy partitions in the one worst-first order: what every surface must show."""
    order = [d["partition"] for d in worst_first(audit_doc["partitions"]) if d["verdict"] != HEALTHY]
    verdicts = {d["verdict"] for d in audit_doc["partitions"]}
    assert {CRITICAL, DEGRADED} <= verdicts, "the scenario needs CRITICAL and DEGRADED partitions"
    return order


def _verdicts(audit_doc: dict[str, Any]) -> dict[int, str]:
    return {d["partition"]: d["verdict"] for d in audit_doc["partitions"]}


def test_the_merged_audit_report_is_worst_first_with_the_new_word(audit_doc, expected) -> None:
    listed = [d["partition"] for d in audit_doc["partitions"] if d["verdict"] != HEALTHY]
    assert listed == expected
    row = audit_doc["partitions"][0]
    assert "data_records" in row and "records" not in row  # one meaning per word


def test_cli_audit_json_and_text_agree(materialized, audit_doc, expected, capsys) -> None:
    history = str(materialized.resources["state"].audit_history_dir)
    argv = ("audit", str(materialized.log_dir), "--state-dir", history, "--no-record")
    doc = json.loads(_cli(capsys, *argv, "--json"))
    assert {p["partition"]: p["verdict"] for p in doc["partitions"]} == _verdicts(audit_doc)
    assert doc["worst_first"] == expected
    assert (
        list(dict.fromkeys(f["partition"] for f in doc["findings"] if f["partition"] is not None)) == expected
    )
    text = _cli(capsys, *argv)
    findings = re.findall(r"^  \[(CRITICAL|DEGRADED)\] partition (\d+):", text, re.M)
    assert list(dict.fromkeys(int(p) for _, p in findings)) == expected
    table = re.findall(r"^(\d+)\s+(HEALTHY|DEGRADED|CRITICAL)\s", text, re.M)
    assert [int(p) for p, v in table if v != HEALTHY] == expected


def test_report_html_agrees(materialized, expected) -> None:
    page = (materialized.output_dir / "reports" / "report.html").read_text()
    table = page.split('<table id="audit-partitions">', 1)[1].split("</table>", 1)[0]
    assert [int(p) for p in re.findall(r'<tr data-partition="(\d+)"', table)] == expected
    banner = page.split('id="overall"', 1)[1].split("</div>\n</div>", 1)[0]
    named = [int(p) for p in re.findall(r"(\d+) \((?:CRITICAL|DEGRADED)\)", banner)]
    assert named == expected[:5]
    if len(expected) > 5:
        assert f"and {len(expected) - 5} more" in banner
    assert 'id="chart-partition-bytes"' in page


def test_dagster_metadata_and_checks_agree(materialized, audit_doc, expected) -> None:
    verdicts = _verdicts(audit_doc)
    evaluations = materialized.result.get_asset_check_evaluations()
    per_partition = {
        int(e.partition): (e.passed, e.severity.value)
        for e in evaluations
        if e.check_name == "partition_verdict"
    }
    want = {HEALTHY: (True, "WARN"), DEGRADED: (False, "WARN"), CRITICAL: (False, "ERROR")}
    assert {p: per_partition[p] for p in verdicts} == {p: want[v] for p, v in verdicts.items()}
    by_name = {e.check_name: e for e in evaluations if e.partition is None}
    topic = by_name["topic_cleaner_verdict"]
    assert not topic.passed and topic.severity.value == "ERROR"
    assert topic.metadata["worst_first"].value == ", ".join(map(str, expected))
    failing = [r.data["partition"] for r in by_name["cleaner_verdict"].metadata["failing_partitions"].records]
    assert failing == expected
    for d in worst_first(audit_doc["partitions"])[:10]:  # the remedies' commands, as code, verbatim
        for r in d["reasons"]:
            for command in (text for is_command, text in remedy_parts(r["remedy"]) if is_command):
                if r["severity"] == d["verdict"]:
                    assert f"`{command}`" in topic.description
    # "the latest" materialization (what asset pages and partitioned checks show first) is the worst
    latest = materialized.instance.fetch_materializations(AssetKey("cleaner_audit"), limit=1).records[0]
    assert int(latest.asset_materialization.partition) == expected[0]
    expiration = by_name["topic_offsets_expiration"]
    assert expiration.metadata["verdict"].value == DEGRADED and expiration.severity.value == "WARN"
    run = materialized.instance.get_run_by_id(materialized.result.run_id)
    assert run.tags["offsetops/verdict"] == CRITICAL


def test_the_prometheus_textfile_agrees(materialized, audit_doc) -> None:
    text = (materialized.output_dir / "reports" / "offsetops.prom").read_text()
    status = {
        int(s.labels["partition"]): int(s.value)
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if s.name == "offsetops_cleaner_partition_status"
    }
    assert status == {p: prometheus_value(v) for p, v in _verdicts(audit_doc).items()}


def test_cli_groups_and_expire_agree_with_the_topic_summary(materialized, capsys) -> None:
    plan = json.loads((materialized.output_dir / "reports" / "expiration_plan.json").read_text())
    version = "4.0" if plan.get("coordinator", "kip848") == "kip848" else "3.9"
    common = ("--retention-ms", str(RETENTION_MS), "--broker-version", version)
    groups = json.loads(_cli(capsys, "groups", str(materialized.log_dir), "--json", *common))["groups"]
    at_risk = [g["group_id"] for g in groups if g["expiry"] and g["expiry"]["severity"] == DEGRADED]
    assert at_risk, "the scenario needs groups whose offsets expire within the window"
    expire = _cli(capsys, "expire", str(materialized.log_dir), *common)
    summary = re.findall(r"^  \[\d+\] '([^']+)' (DEGRADED|CRITICAL) ", expire, re.M)
    assert [g for g, sev in summary if sev == DEGRADED] == at_risk
    topic = AssetKey("offsets_topic_summary")
    record = materialized.instance.fetch_materializations(topic, limit=1).records[0]
    table = record.asset_materialization.metadata["groups_at_risk"]
    assert [r.data["group_id"] for r in table.records] == at_risk


def test_slack_agrees(materialized, audit_doc, expected, tmp_path: Path) -> None:
    from offsetops.assets.alerting.sensors import evaluate_alerts
    from offsetops.assets.resources import SlackResource, StateResource

    verdicts = _verdicts(audit_doc)
    codes = {r["code"] for d in audit_doc["partitions"] for r in d["reasons"] if r["severity"] != HEALTHY}
    with SlackTestServer(valid_tokens={"xoxb-test-token"}) as server:
        slack = SlackResource(
            token="xoxb-test-token",
            channel="#oncall",
            base_url=server.base_url,
            dagster_url="https://dagster.example.com",
        )
        state = StateResource(output_dir=str(materialized.output_dir))
        evaluate_alerts(materialized.instance, slack, state)
        texts = [m["text"] for m in server.messages]
    cleaner = [t for t in texts if "Log Cleaner" in t and "topic-wide" not in t]
    shown = []
    for t in cleaner:
        m = re.search(r"\(partitions? ([\d, ]+)\)", t)
        assert m, t
        shown += [int(p) for p in m.group(1).split(", ")]
        level = CRITICAL if t.startswith("[CRITICAL]") else DEGRADED
        assert all(verdicts[p] == level for p in map(int, m.group(1).split(", ")))
    assert shown == expected
    assert codes <= set(re.findall(r"`([a-z_]+)`", " ".join(cleaner)))  # every reason code present
    assert all("Operator report" in t for t in texts)
    assert not any(t.startswith("[WARNING]") for t in texts)  # one severity vocabulary
    assert any(t.startswith("[DEGRADED]") and "lose committed offsets soon" in t for t in texts)
