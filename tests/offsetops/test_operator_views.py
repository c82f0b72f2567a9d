"""The operator views on the command line: groups, describe, history, failover, reload --until, exporter."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from offsetops.coordinator_core.records.builder import build_record_batch
from prometheus_client.parser import text_string_to_metric_families

from offsetops.cli import main
from tests.support.forensics_log import GROUP, T0, _commit, write_forensics_log
from tests.support.shared import REAL_KAFKA_DIR, real_kafka_logdirs
from tests.support.simdirs import sim_with_data as sim_with_data
from tests.support.simdirs import truth_data, truth_offsets

REPO = Path(__file__).resolve().parents[2]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_describe_csv_matches_truth(sim_with_data, capsys):
    logdir, truth = sim_with_data
    code, out, _ = run(
        capsys, "describe", str(logdir), "--format", "csv", "--num-partitions", str(truth["num_partitions"])
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    commits = truth_offsets(truth)
    data = truth_data(truth)
    got = {(r["group_id"], r["topic"], int(r["partition"])): r for r in rows if r["committed_offset"]}
    assert set(got) == set(commits)
    for key, r in got.items():
        end = data[key[1:]]["log_end_offset"]
        assert int(r["committed_offset"]) == commits[key]["offset"]
        assert r["lag"] == ("" if end is None else str(end - commits[key]["offset"]))
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["commit_time"])
        assert r["commit_age"].endswith(" ago")


def test_describe_text_names_out_of_range_first(sim_with_data, capsys):
    logdir, truth = sim_with_data
    code, out, _ = run(
        capsys,
        "describe",
        str(logdir),
        "--num-partitions",
        str(truth["num_partitions"]),
        "--now",
        "2023-11-15T12:00:00Z",
    )
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("GROUP ")
    assert "OUT OF RANGE" in out.splitlines()[1]  # the first group shown is one with a problem
    assert re.search(r"committed \d+ is (below the log start|above the log end)", out)
    assert "TOPIC  " in out and "LAG" in out and " ago)" in out


def test_groups_json_and_filters(sim_with_data, capsys):
    logdir, truth = sim_with_data
    n = str(truth["num_partitions"])
    code, out, _ = run(capsys, "groups", str(logdir), "--num-partitions", n, "--json")
    doc = json.loads(out)
    truth_groups = {g["group_id"] for p in truth["partitions"] for g in p["groups"]}
    assert {g["group_id"] for g in doc["groups"]} == truth_groups
    oor = [g["out_of_range"] for g in doc["groups"]]
    assert oor == sorted(oor, reverse=True)  # worst first
    code, out, _ = run(
        capsys,
        "groups",
        str(logdir),
        "--num-partitions",
        n,
        "--json",
        "--state",
        "Stable",
        "--group-regex",
        ".*-(app|etl)-.*",
    )
    assert code == 0
    sel = json.loads(out)["groups"]
    assert sel and all(g["state"] == "Stable" and re.fullmatch(".*-(app|etl)-.*", g["group_id"]) for g in sel)
    _code, out, _ = run(capsys, "groups", str(logdir), "--num-partitions", n, "--format", "csv")
    assert out.splitlines()[0].startswith("group_id,group_type,state")


def test_groups_and_describe_agree_with_expire_on_expiry(sim_with_data, capsys, monkeypatch):
    """The run model gives groups, describe and expire one retention and one clock (the log dir's
    declared one, for describe's PATH too), so they name the same groups at risk with the same facts."""
    logdir, truth = sim_with_data
    monkeypatch.setenv("OFFSETOPS_RETENTION_MINUTES", "60")
    n = str(truth["num_partitions"])
    plan = json.loads(run(capsys, "expire", str(logdir), "--num-partitions", n, "--json")[1])
    at_risk = {f["group_id"] for f in plan["forecast"]} | {t["group_id"] for t in plan["tombstones"]}
    assert at_risk, "the scenario must hold groups that lose offsets at this retention"
    for view in ("groups", "describe"):
        doc = json.loads(run(capsys, view, str(logdir), "--num-partitions", n, "--json")[1])
        assert doc["now"]["ms"] == plan["now_ms"], view
        assert doc["settings"]["retention_minutes"]["source"] == "env OFFSETOPS_RETENTION_MINUTES"
        risky = [g["group_id"] for g in doc["groups"] if g["expiry"]]
        assert set(risky) == at_risk, view
        assert risky == [g["group_id"] for g in doc["groups"]][: len(risky)], f"{view}: at risk first"


def test_the_groups_headline_counts_the_groups_it_lists(sim_with_data, capsys, monkeypatch):
    """With --group, the headline's lost and at-risk counts are those of the listed groups only."""
    logdir, truth = sim_with_data
    monkeypatch.setenv("OFFSETOPS_RETENTION_MINUTES", "60")
    n = str(truth["num_partitions"])
    doc = json.loads(run(capsys, "groups", str(logdir), "--num-partitions", n, "--json")[1])
    risky = [g["group_id"] for g in doc["groups"] if g["expiry"]]
    safe = [g["group_id"] for g in doc["groups"] if not g["expiry"]]
    assert risky and safe, "the scenario must hold groups at risk and groups that are not"
    _, out, _ = run(capsys, "groups", str(logdir), "--num-partitions", n, "--group", safe[0])
    assert out.splitlines()[0].startswith("1 groups; 0 lost committed offsets, 0 lose some within")
    _, out, _ = run(capsys, "groups", str(logdir), "--num-partitions", n, "--group", risky[0])
    lost, soon = (int(x) for x in re.findall(r"(\d+) (?:lost|lose)", out.splitlines()[0]))
    assert lost + soon == 1


def test_describe_unknown_group_and_bad_regex(tmp_path, capsys):
    root = write_forensics_log(tmp_path)
    code, _, err = run(capsys, "describe", str(root), "no-such-group")
    assert code == 1 and "'no-such-group' not found" in err
    with pytest.raises(SystemExit):
        main(["groups", str(root), "--group-regex", "(unclosed"])
    assert "not a regular expression" in capsys.readouterr().err
    code, _, err = run(capsys, "describe", "--group", GROUP)
    assert code == 2 and "give a log dir" in err


def test_hostile_group_id_is_escaped_in_text_and_disarmed_in_csv(tmp_path, capsys):
    evil = "=HYPERLINK(1)\x1b[31m\nFAKE"
    pdir = tmp_path / "__consumer_offsets-0"
    pdir.mkdir()
    batch = build_record_batch([_commit(evil, "t", 0, 5, T0)], base_offset=0)
    (pdir / "00000000000000000000.log").write_bytes(batch)
    code, out, _ = run(capsys, "groups", str(tmp_path), "--num-partitions", "1")
    assert code == 0 and "\x1b" not in out and "\nFAKE" not in out and "\\x1b[31m\\nFAKE" in out
    code, out, _ = run(capsys, "describe", str(tmp_path), "--num-partitions", "1", "--format", "csv")
    row = list(csv.reader(io.StringIO(out)))[1]
    assert row[0].startswith("'=HYPERLINK")


def test_history_cli(tmp_path, capsys):
    root = write_forensics_log(tmp_path)
    code, out, _ = run(capsys, "history", str(root), "--group", GROUP, "--now", "2023-11-15T00:00:00Z")
    assert code == 0
    lines = out.splitlines()
    assert "1 rewinds, 1 past the log end, 1 for partitions no member owned, 1 aborted" in lines[0]
    assert lines[1].startswith("  REWIND: t-0 150 -> 20 at 2023-11-14T22:18:20.000Z")
    assert "no member (group empty)" in lines[1]
    assert lines[2].startswith("  PAST LOG END: t-0 30 -> 5000")
    code, out, _ = run(
        capsys,
        "history",
        str(root),
        "--group",
        GROUP,
        "--json",
        "--since",
        "2023-11-14T22:17:00Z",
        "--until",
        "2023-11-14T22:22:30Z",
    )
    doc = json.loads(out)
    assert [c["offset"] for c in doc["commits"]] == [20, 500, 30, 5000]
    assert doc["summary"] == {"commits": 4, "rewinds": 1, "past_log_end": 1, "not_assigned": 0, "aborted": 1}
    assert doc["commits"][0]["time"]["iso"] == "2023-11-14T22:18:20.000Z"
    code, out, _ = run(capsys, "history", str(root), "--group", GROUP, "--flagged", "--format", "csv")
    flags = [r["flags"] for r in csv.DictReader(io.StringIO(out))]
    assert flags == ["not_assigned", "rewind", "past_log_end", "tombstone"]


def test_history_max_commits_says_what_it_left_out(tmp_path, capsys):
    root = write_forensics_log(tmp_path)
    code, out, err = run(capsys, "history", str(root), "--group", GROUP, "--max-commits", "2", "--json")
    assert code == 0 and "showing the newest 2 of 9 selected commits" in err
    doc = json.loads(out)
    assert [c["offset"] for c in doc["commits"]] == [6000, None]
    assert (doc["total_commits"], doc["dropped_commits"]) == (9, 7)


def test_history_names_the_partition_when_it_is_missing(tmp_path, capsys):
    root = write_forensics_log(tmp_path)
    code, _, err = run(capsys, "history", str(root), "--group", "elsewhere")
    assert code == 2 and "group 'elsewhere' lives in partition" in err


def test_reload_until(tmp_path, capsys):
    root = write_forensics_log(tmp_path)
    code, out, _ = run(capsys, "reload", str(root), "--until", "7", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["as_of"] == {"until_offset": 7, "until_ms": None}
    group = next(g for g in doc["partitions"][0]["groups"] if g["group_id"] == GROUP)
    offs = {(o["topic"], o["partition"]): o["offset"] for o in group["offsets"]}
    assert offs == {("t", 0): 20, ("t", 1): 7}
    _code, out, _ = run(capsys, "reload", str(root), "--until", "2023-11-14T22:15:20Z")
    assert out.startswith("as of 1700000120000 (2023-11-14T22:15:20.000Z, ")
    with pytest.raises(SystemExit):
        main(["reload", str(root), "--until", "last tuesday"])
    assert "--until takes a log offset" in capsys.readouterr().err


def test_failover_cli_and_audit_json(sim_with_data, tmp_path, capsys):
    logdir, _truth = sim_with_data
    sizes = {
        int(p.name.rsplit("-", 1)[1]): sum(f.stat().st_size for f in p.glob("*.log"))
        for p in logdir.glob("__consumer_offsets-*")
    }
    log = tmp_path / "server.log"
    log.write_text(
        "[2024-05-01 10:00:00,000] INFO [GroupMetadataManager brokerId=1] Finished loading offsets and "
        "group metadata from __consumer_offsets-1 in 12000 milliseconds (kafka.coordinator.group."
        "GroupMetadataManager)\n"
    )
    code, out, _ = run(capsys, "failover", str(logdir), "--broker-log", str(log), "--json")
    assert code == 0
    doc = json.loads(out)
    rate = sizes[1] / 12.0  # the only calibration sample: partition 1's current size in 12 s
    assert doc["calibration"]["bytes_per_second"] == pytest.approx(rate, abs=0.1)
    expect_slow = {p for p, size in sizes.items() if size / rate * 1000 > 10_000 or p == 1}
    assert set(doc["slow_partitions"]) == expect_slow
    _code, out, _ = run(capsys, "failover", str(logdir), "--broker-log", str(log))
    worst = max(sizes, key=sizes.get)
    assert out.startswith(f"{len(expect_slow)} partition(s) would take longer than 10.0 s to load")
    assert f"worst __consumer_offsets-{worst}:" in out.splitlines()[0]
    code, out, _ = run(capsys, "audit", str(logdir), "--json", "--no-record")
    fo = json.loads(out)["failover"]
    assert {p["partition"]: p["bytes"] for p in fo["partitions"]} == sizes
    assert fo["calibration"]["source"] == "default"
    # The text audit flags, after the cleaner's verdict, the partitions whose replay at the default
    # 20 MiB/s exceeds the threshold, the worst first.
    threshold = 60
    est = {p: size / (20 * 2**20) * 1000 for p, size in sizes.items()}
    expect = sorted((p for p in est if est[p] > threshold + 1), key=lambda p: -sizes[p])
    assert 0 < len(expect) < len(sizes)  # the threshold splits this log dir
    code, out, _ = run(capsys, "audit", str(logdir), "--no-record", "--failover-threshold-ms", str(threshold))
    assert code == 0
    tail = out[out.index("\nfailover: ") :]
    assert tail.startswith(f"\nfailover: {len(expect)} partition(s) would take longer than 60 ms to load")
    assert [int(p) for p in re.findall(r"\[SLOW\] partition (\d+):", tail)] == expect


def test_describe_real_fixture_text(capsys):
    root = REAL_KAFKA_DIR / "iechenyb__data"
    if not root.is_dir():
        pytest.skip("real Kafka fixtures not found")
    code, out, _ = run(capsys, "describe", str(root), "flink-group", "--now", "2019-07-01T00:00:00Z")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("test-0921"))
    assert row.split()[:6] == ["test-0921", "0", "100", "-", "1521", "1421"]
    assert "replication-offset-checkpoint" not in out  # the note is in JSON; text names the source dir
    assert "log start/end from data-topic partition dirs and checkpoints in" in out


def _scrape(url: str) -> dict[str, list]:
    body = urllib.request.urlopen(url, timeout=10).read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(body)}


@pytest.mark.slow
def test_exporter_serves_truth(sim_with_data):
    """Start the real exporter on a free loopback port, scrape it, parse with prometheus_client."""
    logdir, truth = sim_with_data
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "offsetops.cli",
            "exporter",
            str(logdir),
            "--listen",
            "127.0.0.1:0",
            "--num-partitions",
            str(truth["num_partitions"]),
            "--interval",
            "3600",
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        line = ""
        deadline = time.monotonic() + 120
        while "serving http://" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
        m = re.search(r"serving (http://127\.0\.0\.1:\d+/metrics)", line)
        assert m, f"exporter did not start: {line!r}"
        fams = _scrape(m.group(1))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert fams["offsetops_exporter_up"][0].value == 1
    commits = truth_offsets(truth)
    data = truth_data(truth)
    lag = {
        (s.labels["group_id"], s.labels["topic_name"], int(s.labels["partition_id"])): s.value
        for s in fams["offsetops_consumer_group_topic_partition_lag"]
    }
    expected = {
        k: data[k[1:]]["log_end_offset"] - o["offset"]
        for k, o in commits.items()
        if data[k[1:]]["log_end_offset"] is not None
    }
    assert lag == expected
    oor = {}
    for (g, t, p), o in commits.items():
        d = data[(t, p)]
        bad = (d["log_end_offset"] is not None and o["offset"] > d["log_end_offset"]) or (
            d["log_start_offset"] is not None and o["offset"] < d["log_start_offset"]
        )
        oor[g] = oor.get(g, 0) + bad
    got = {s.labels["group_id"]: s.value for s in fams["offsetops_consumer_group_offsets_out_of_range"]}
    assert got == oor and sum(got.values()) > 0
    sizes = {
        str(int(p.name.rsplit("-", 1)[1])): sum(f.stat().st_size for f in p.glob("*.log"))
        for p in logdir.glob("__consumer_offsets-*")
    }
    assert {s.labels["partition"]: s.value for s in fams["offsetops_cleaner_partition_size_bytes"]} == sizes
    assert len(fams["offsetops_coordinator_load_estimated_seconds"]) == truth["num_partitions"]
    # Every metric the alert rules and the dashboard use is one the exporter serves.
    served = set(fams) | {n + "_total" for n in fams}
    rules = yaml.safe_load((REPO / "deploy/prometheus/offsetops-alerts.yml").read_text())
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    dash = json.loads((REPO / "deploy/grafana/offsetops-dashboard.json").read_text())
    exprs += [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = {n for e in exprs for n in re.findall(r"offsetops_[a-z_]+", e)}
    assert used and used <= served, used - served


def test_existing_commands_take_human_times(tmp_path, capsys):
    root = write_forensics_log(tmp_path)
    code, out, _ = run(capsys, "audit", str(root), "--json", "--no-record", "--now", "2023-11-22T00:00:00Z")
    assert code == 0 and json.loads(out)["audited_at_ms"] == 1_700_611_200_000
    code, out, _ = run(capsys, "expire", str(root), "--json", "--now=-1d")
    assert code == 0
    assert abs(json.loads(out)["now_ms"] - (time.time() * 1000 - 86_400_000)) < 600_000


@pytest.mark.parametrize("logdir", real_kafka_logdirs(), ids=lambda p: p.name)
def test_real_fixtures_groups_and_describe_cover_every_offset(logdir, capsys):
    code, out, _ = run(capsys, "reload", str(logdir), "--json")
    assert code == 0
    offsets = {
        (g["group_id"], o["topic"], o["partition"]): o["offset"]
        for p in json.loads(out)["partitions"]
        for g in p["groups"]
        for o in g["offsets"]
    }
    code, out, _ = run(capsys, "describe", str(logdir), "--format", "csv")
    assert code == 0
    rows = {
        (r["group_id"], r["topic"], int(r["partition"])): int(r["committed_offset"])
        for r in csv.DictReader(io.StringIO(out))
        if r["committed_offset"]
    }
    assert rows == offsets
    code, out, _ = run(capsys, "groups", str(logdir), "--json")
    assert code == 0
    assert {g["group_id"] for g in json.loads(out)["groups"]} >= {g for g, _t, _p in offsets}


def test_alert_rules_speak_the_findings_severities() -> None:
    """The expiration and cleaner rules carry the level the findings model maps their finding to, as
    Slack does: lost offsets and a CRITICAL cleaner page critical, offsets at risk warn."""
    from offsetops.coordinator_core.findings import CRITICAL, DEGRADED, slack_level

    rules = yaml.safe_load((REPO / "deploy/prometheus/offsetops-alerts.yml").read_text())
    level = {r["alert"]: r["labels"]["severity"] for g in rules["groups"] for r in g["rules"]}
    assert level["OffsetsExpired"] == level["OffsetsCleanerCritical"] == slack_level(CRITICAL)
    assert level["OffsetsExpiringSoon"] == slack_level(DEGRADED)


def test_expire_json_carries_the_group_summary_the_text_leads_with(tmp_path, capsys) -> None:
    """`expire --json` lists every group the plan touches, worst first, as the text's summary does."""
    root = write_forensics_log(tmp_path)
    code, out, _ = run(capsys, "expire", str(root), "--json", "--now=2023-12-30T00:00:00Z")
    assert code == 0
    doc = json.loads(out)
    code, text, _ = run(capsys, "expire", str(root), "--now=2023-12-30T00:00:00Z")
    summary = re.findall(r"^  \[\d+\] '([^']+)' (DEGRADED|CRITICAL) ", text, re.M)
    assert doc["groups"] and [(g["group_id"], g["severity"]) for g in doc["groups"]] == summary
