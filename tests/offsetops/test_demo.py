"""`offsetops demo`, the main job behind the README's first command, end to end in a subprocess."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_demo_runs_the_main_job_and_writes_the_reports(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("Java is needed for a local SparkSession")
    out = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "OFFSETOPS_"))}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "offsetops.cli",
            "demo",
            "--out",
            str(out),
            "--groups",
            "12",
            "--days",
            "0.1",
            "--spark-master",
            "local[2]",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "main job SUCCEEDED" in proc.stdout

    # Worst first: the topic's verdict leads the summary and is the operator report's; failed checks
    # come before passed ones, ERROR before WARN.
    lines = proc.stdout.split("main job SUCCEEDED", 1)[1].splitlines()[1:]
    head = re.match(r"  topic verdict\s+(HEALTHY|DEGRADED|CRITICAL)", lines[0])
    assert head, lines[:3]
    report = re.search(r"^operator report: (\w+)", proc.stdout, flags=re.M)
    assert report and report.group(1) == head.group(1)
    # the report offsets_topic_summary wrote in the run is the one printed, not drawn again
    assert "operator report written again" not in proc.stdout
    levels = [
        0 if "FAILED (ERROR)" in ln else 1 if "FAILED (WARN)" in ln else 2
        for ln in lines
        if ln.startswith("  check ")
    ]
    assert levels and levels == sorted(levels)

    # Every report path the demo prints exists.
    printed = dict(re.findall(r"^  (\w[\w ()]+?)\s{2,}(/\S+)$", proc.stdout, flags=re.M))
    for label in ("Data Docs (GX)", "validation summary", "cleaner audit", "expiration plan"):
        assert Path(printed[label]).exists(), label
    assert (out / "reports" / "data_docs" / "index.html").is_file()
    summary = (out / "reports" / "index.html").read_text(encoding="utf-8")
    assert "cache validation" in summary

    # The reload equals the simulator's ground truth.
    truth = json.loads((out / "logdir" / "truth.json").read_text(encoding="utf-8"))
    counts = json.loads((out / "reports" / "reload.json").read_text(encoding="utf-8"))["counts"]
    assert counts["groups"] == sum(len(p["groups"]) for p in truth["partitions"]) > 0
    assert counts["decode_errors"] == 0

    # The run is recorded under the main job in the instance the UI opens afterwards.
    from dagster import DagsterInstance, DagsterRunStatus

    with DagsterInstance.from_config(str(out / "dagster_home")) as instance:
        runs = instance.get_runs()
    assert [(r.job_name, r.status) for r in runs] == [("offsetops_main_job", DagsterRunStatus.SUCCESS)]

    # Without a Slack token the pages land in the outbox instead of failing the run.
    outbox = out / "state" / "alerts" / "outbox.jsonl"
    if outbox.exists():
        assert all(json.loads(line)["channel"] for line in outbox.read_text().splitlines())


def test_demo_resume_points_the_reload_at_the_state_volume(tmp_path: Path, monkeypatch) -> None:
    """`demo --resume` sets the run model's resume state dir (what coordinator_cache resumes from) to
    OUT/state/resume, for the demo's run and for the `dagster dev` it prints; without it, none."""
    import argparse

    from offsetops.assets.resources import OffsetsSourceResource, StateResource

    from offsetops.commands.demo import ui_environment

    args = argparse.Namespace(partitions=50, retention_minutes=120, forecast_hours=24.0, resume=True)
    env = ui_environment(args, tmp_path, tmp_path / "logdir")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    run = OffsetsSourceResource(log_dir=str(tmp_path)).settings()
    assert run["resume_state_dir"] == str(StateResource(output_dir=str(tmp_path)).resume_dir)
    assert run.source("resume_state_dir") == "env OFFSETOPS_RESUME_STATE_DIR"
    args.resume = False
    assert "OFFSETOPS_RESUME_STATE_DIR" not in ui_environment(args, tmp_path, tmp_path / "logdir")


def test_the_verdict_line_counts_each_cleaner_verdict_on_its_own() -> None:
    """One CRITICAL and three DEGRADED partitions are not "CRITICAL on 4 partitions"."""
    from offsetops.commands.demo import _verdict_lines

    topic = {"topic_verdict": "CRITICAL", "cleaner_verdict": "CRITICAL", "critical_partitions": 1,
             "degraded_partitions": 3, "forecast_groups": 6}  # fmt: skip
    [line] = _verdict_lines(topic, {})
    assert line.endswith(": Log Cleaner CRITICAL on 1 partition, DEGRADED on 3 partitions; 6 groups lose "
                         "offsets within the window"), line  # fmt: skip
    topic = {"topic_verdict": "DEGRADED", "cleaner_verdict": "DEGRADED", "degraded_partitions": 7}
    [line] = _verdict_lines(topic, {})
    assert line == "topic verdict        DEGRADED: Log Cleaner DEGRADED on 7 partitions"
