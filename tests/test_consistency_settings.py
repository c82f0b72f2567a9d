"""One truth on every surface, settings half: the retention given once reaches every surface alike.

On a simulated cluster with expiring groups, ``offsets.retention.minutes`` is given once (by the
``OFFSETOPS_*`` environment, by the config file, by the brokers' ``server.properties``, in turn), and every
surface that can run here must count the same offsets at risk per partition and the same tombstones, and
name the same setting and source: ``expire --json`` and its text, ``groups``/``describe --json``, the
exporter's /metrics scraped over loopback HTTP, the Dagster assets (the plan's metadata, the report, the
``offsets_metrics`` textfile) and the Slack message on the loopback Slack server. Before the run model,
the textfile and the exporter said 0 at risk (they defaulted to 7 days) while the plan said otherwise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from offsetops.cli import main
from tests.support.slack_server import SlackTestServer

RETENTION = 120  # minutes: the simulated groups that went idle hours ago expire within the forecast window
TOKEN = "xoxb-consistency"
AT_RISK = "offsetops_expiration_offsets_at_risk"
DUE = "offsetops_expiration_tombstones_due"


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All 50 partitions (the code location's default), 40 groups over six hours, a 3.9 broker."""
    from offsetops.coordinator_core.simulator import SimulationConfig, simulate

    out = tmp_path_factory.mktemp("consistency") / "logdir"
    simulate(
        SimulationConfig(out_dir=out, groups=40, partitions=50, days=0.25, seed=7, segment_bytes=512 * 1024)
    )
    return out


def _given(how: str, tmp_path: Path) -> tuple[dict[str, str], str]:
    """The environment that gives the retention once, and the source every surface must name."""
    if how == "env":
        return {"OFFSETOPS_RETENTION_MINUTES": str(RETENTION)}, "env OFFSETOPS_RETENTION_MINUTES"
    path = tmp_path / f"{how}.properties"
    path.write_text(f"offsets.retention.minutes={RETENTION}\n", encoding="utf-8")
    if how == "config":
        return {
            "OFFSETOPS_CONFIG": str(path)
        }, f"config file {path} (OFFSETOPS_CONFIG) (offsets.retention.minutes)"
    return {
        "OFFSETOPS_SERVER_PROPERTIES": str(path)
    }, f"broker server.properties {path} (offsets.retention.minutes)"


@pytest.fixture(params=["env", "config", "server"])
def given(request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], str]:
    for name in [n for n in os.environ if n.startswith("OFFSETOPS_")]:
        monkeypatch.delenv(name)
    env, source = _given(request.param, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env, source


def _cli(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _plan_counts(doc: dict[str, Any]) -> tuple[dict[int, int], int]:
    """Offsets at risk per partition (the forecast) and tombstones due (offsets and groups), from a plan."""
    at_risk = Counter(f["offsets_partition"] for f in doc["forecast"])
    return dict(at_risk), len(doc["tombstones"])


def _metric_counts(text: str) -> tuple[dict[int, int], int, dict[str, dict[str, str]]]:
    """At risk per partition, tombstones due, and ``offsetops_settings_info`` from an exposition."""
    at_risk: dict[int, int] = {}
    due = 0
    settings: dict[str, dict[str, str]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == AT_RISK and s.value:
                at_risk[int(s.labels["offsets_partition"])] = int(s.value)
            elif s.name == DUE:
                due += int(s.value)
            elif s.name == "offsetops_settings_info":
                settings[s.labels["name"]] = s.labels
    return at_risk, due, settings


def _cli_surfaces(scenario: Path, capsys, source: str) -> tuple[dict[int, int], int]:
    plan = json.loads(_cli(capsys, "expire", str(scenario), "--json"))
    assert plan["settings"]["retention_minutes"] == {"value": RETENTION, "source": source}
    assert plan["retention_ms"] == RETENTION * 60_000 and plan["coordinator"] == "legacy"  # declared 3.9
    at_risk, due = _plan_counts(plan)
    assert sum(at_risk.values()) > 0 and due > 0, "the scenario must hold expiring groups"
    text = _cli(capsys, "expire", str(scenario))
    groups = len({f["group_id"] for f in plan["forecast"]})
    assert f"forecast (next 24 h): {sum(at_risk.values())} offsets in {groups} groups" in text
    assert f"retention_minutes {RETENTION} ({source})" in text
    for view in ("groups", "describe"):
        doc = json.loads(_cli(capsys, view, str(scenario), "--json"))
        assert doc["settings"]["retention_minutes"] == {"value": RETENTION, "source": source}
    return at_risk, due


def _scrape_exporter(scenario: Path) -> str:
    """``offsetops exporter`` as its own process on a free loopback port, scraped once over HTTP."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "offsetops.cli", "exporter", str(scenario), "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the first refresh is done before it listens
        found = re.search(r"serving (http://\S+/metrics)", line)
        assert found, line + proc.stderr.read()
        with urllib.request.urlopen(found.group(1), timeout=30) as response:
            return response.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_retention_given_once_is_the_same_on_cli_and_exporter(scenario: Path, given, capsys) -> None:
    _env, source = given
    at_risk, due = _cli_surfaces(scenario, capsys, source)
    scraped, scraped_due, settings = _metric_counts(_scrape_exporter(scenario))
    assert (scraped, scraped_due) == (at_risk, due)
    assert settings["retention_minutes"]["value"] == str(RETENTION)
    assert settings["retention_minutes"]["source"] == source


def _java() -> bool:
    import shutil

    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


@pytest.mark.skipif(not _java(), reason="Java is needed for a local SparkSession")
def test_retention_given_once_is_the_same_in_dagster_report_textfile_and_slack(
    scenario: Path, given, capsys, tmp_path: Path
) -> None:
    from dagster import DagsterInstance, materialize
    from offsetops.assets.alerting.sensors import evaluate_alerts
    from offsetops.assets.expiration import expiration_plan
    from offsetops.assets.metrics import TEXTFILE, offsets_metrics
    from offsetops.assets.partitions import all_partitions_tags
    from offsetops.assets.reload import coordinator_cache
    from offsetops.assets.resources import OffsetsSourceResource, SlackResource, SparkResource, StateResource
    from offsetops.assets.summary import offsets_topic_summary

    _env, source = given
    at_risk, due = _cli_surfaces(scenario, capsys, source)
    state = StateResource(output_dir=str(tmp_path / "out"))
    resources = {
        "offsets_source": OffsetsSourceResource(log_dir=str(scenario)),
        "spark": SparkResource(master="local[2]", app_name="offsetops-consistency"),
        "state": state,
    }
    with DagsterInstance.ephemeral() as instance:
        result = materialize(
            [coordinator_cache, expiration_plan, offsets_topic_summary, offsets_metrics],
            resources=resources,
            instance=instance,
            tags=all_partitions_tags(50),
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
        assert result.success
        reports = state.reports_path
        plan = json.loads((reports / "expiration_plan.json").read_text(encoding="utf-8"))
        assert _plan_counts(plan) == (at_risk, due)
        assert plan["settings"]["retention_minutes"]["source"] == source
        # Dagster metadata: each partition's materialization of the plan says how it was made.
        meta = result.asset_materializations_for_node("expiration_plan")[0].metadata
        assert meta["settings"].value["retention_minutes"] == {"value": RETENTION, "source": source}
        metrics_meta = result.asset_materializations_for_node("offsets_metrics")[0].metadata
        assert metrics_meta["settings"].value["retention_minutes"]["source"] == source
        assert metrics_meta[f"sum({AT_RISK})"].value == sum(at_risk.values())
        # The textfile node-exporter reads: the OffsetsExpiringSoon rule sees what the plan says.
        textfile, textfile_due, settings = _metric_counts((reports / TEXTFILE).read_text(encoding="utf-8"))
        assert (textfile, textfile_due) == (at_risk, due)
        assert settings["retention_minutes"]["source"] == source
        # The report: its expiration facts and its settings footer.
        page = (reports / "report.html").read_text(encoding="utf-8")
        groups = len({f["group_id"] for f in plan["forecast"]})
        assert f"{groups} groups ({sum(at_risk.values())} offsets) expire within the window" in page
        footer = page[page.index('<footer id="settings">') :]
        assert f"<td>retention_minutes</td><td>{RETENTION}</td>" in footer
        assert _html(source) in footer
        # Slack, on the loopback server: the alert names the at-risk groups and the same setting.
        with SlackTestServer(valid_tokens={TOKEN}) as slack:
            evaluate_alerts(instance, SlackResource(token=TOKEN, base_url=slack.base_url), state)
            messages = slack.messages
    offsets_messages = [m for m in messages if "offsets:" in json.dumps(m.get("blocks", []))]
    assert offsets_messages, [m.get("text") for m in messages]
    posted = " ".join(json.dumps(m.get("blocks", [])) for m in offsets_messages)
    assert all(g in posted for g in {f["group_id"] for f in plan["forecast"]})
    contexts = [
        e["text"]
        for m in offsets_messages
        for b in m["blocks"]
        if b["type"] == "context"
        for e in b["elements"]
        if "settings:" in e["text"]
    ]
    assert contexts and all(f"retention_minutes {RETENTION} ({source})" in c for c in contexts)


def _html(text: str) -> str:
    import html

    return html.escape(text, quote=True)
