"""``expire --execute`` guards: an implausible clock is refused, and one run per plan and target.

The concurrency test runs real ``offsetops`` processes against the segment executor: two ``--execute``
runs of the same plan started together, several times over.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from offsetops.coordinator_core.clock_guard import DATA_GAP_TOLERANCE_MS, clock_findings
from offsetops.coordinator_core.tombstones.journal import Journal
from offsetops.coordinator_core.tombstones.runner import TargetBusy, target_lock

from offsetops.cli import main
from tests.coordinator_core.expiration.test_cli_segment import REPO, _new_segment_records, _segment_argv
from tests.coordinator_core.expiration.test_rules import NOW, RET, P, build_scenario

YEAR_2508 = 17_000_000_000_000  # NOW with one digit too many


def _argv_at(src: Path, out: Path, journal: Path, now: int) -> list[str]:
    argv = _segment_argv(src, out, journal)
    argv[argv.index("--now") + 1] = str(now)
    return argv


def test_a_clock_in_the_future_is_refused_unless_overridden(tmp_path: Path, capsys) -> None:
    src = build_scenario(tmp_path / "src")
    argv = _argv_at(src, tmp_path / "copy", tmp_path / "journal", YEAR_2508)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "WARNING" in err and "ahead of this host's clock" in err and "every offset would expire" in err
    assert "--override-clock-guard" in err.splitlines()[-1]
    assert not (tmp_path / "copy").exists() and not (tmp_path / "journal").exists()  # nothing written
    assert main([*argv, "--override-clock-guard"]) == 0
    assert json.loads(capsys.readouterr().out)["execution"]["complete"]


def test_planning_with_such_a_clock_warns_loudly(tmp_path: Path, capsys) -> None:
    src = build_scenario(tmp_path / "src")
    code = main(["expire", str(src), "--now", str(YEAR_2508), "--retention-ms", str(RET), "--json"])
    assert code == 0  # a dry run only warns
    captured = capsys.readouterr()
    kinds = [f["kind"] for f in json.loads(captured.out)["clock_findings"]]
    assert kinds == ["clock_in_future", "clock_past_all_data"]
    assert captured.err.count("WARNING") == 2


def test_the_scenario_clock_is_plausible(tmp_path: Path, capsys) -> None:
    src = build_scenario(tmp_path / "src")
    assert main(["expire", str(src), "--now", str(NOW), "--retention-ms", str(RET), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["clock_findings"] == []


@pytest.mark.parametrize(
    ("now", "newest", "kinds"),
    [
        (NOW, NOW - 1000, []),
        (NOW + 10 * 60_000, NOW, ["clock_in_future"]),
        (NOW, NOW - RET, []),  # everything expires, but an idle source is plausible
        (NOW, NOW - RET - DATA_GAP_TOLERANCE_MS - 1, ["clock_past_all_data"]),
        (NOW, NOW + 3_600_000, ["clock_before_data"]),
        (NOW, None, []),
    ],
)
def test_clock_findings(now: int, newest: int | None, kinds: list[str]) -> None:
    found = clock_findings(now, wall_ms=NOW, newest_ms=newest, retention_ms=RET)
    assert [f.kind for f in found] == kinds


def test_the_target_lock_admits_one_holder(tmp_path: Path) -> None:
    target = {"output_dir": "/x"}
    with target_lock(tmp_path, "segment", target):
        with (
            pytest.raises(TargetBusy, match="rerun once it has finished"),
            target_lock(tmp_path, "segment", target),
        ):
            pass
        with target_lock(tmp_path, "segment", {"output_dir": "/y"}):  # another target: its own lock
            pass
    with target_lock(tmp_path, "segment", target):  # released
        pass


def _spawn(argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "offsetops.cli", *argv],
        cwd=REPO,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("trial", range(4))
def test_two_concurrent_executions_of_one_plan_apply_once(tmp_path: Path, trial: int) -> None:
    src = build_scenario(tmp_path / "src")
    out, journal_dir = tmp_path / "copy", tmp_path / "journal"
    argv = _segment_argv(src, out, journal_dir)
    procs = [_spawn(argv), _spawn(argv)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    for code, _out, err in results:
        assert "Traceback" not in err
        # Either it ran the plan (or found it done), or it was refused at once because the other held it.
        assert code == 0 or (code == 2 and "another offsetops run is applying" in err), err
    (journal,) = [Journal.open(journal_dir, p.name[5:-5]) for p in journal_dir.glob("plan-*.json")]
    applying = [e for e in journal.events("run") if e["todo"]]
    assert len(applying) == 1  # one run applied; the other was refused or found nothing left
    for item in journal.items:
        assert journal.history(item["item_id"]).count("applied") == 1
    rerun = _spawn(argv)
    code, stdout, err = rerun.wait(timeout=120), *rerun.communicate()
    assert code == 0, err
    assert "already applied" in err
    ex = json.loads(stdout)["execution"]
    assert ex["complete"] and ex["skipped_already_applied"] == len(journal.items)
    keys = [r[1].hex() for r in _new_segment_records(out / f"__consumer_offsets-{P}", _first_new(out, src))]
    assert sorted(keys) == sorted(i["key_hex"] for i in journal.items)  # each exactly once


def _first_new(out: Path, src: Path) -> int:
    """The base offset of the segment the executor added to the copy."""
    seg = out / f"__consumer_offsets-{P}"
    old = {p.name for p in (src / f"__consumer_offsets-{P}").glob("*.log")}
    (new,) = [p for p in seg.glob("*.log") if p.name not in old]
    return int(new.stem)


@pytest.mark.parametrize(
    ("executor", "drop", "says"),
    [
        ("admin", (), "--executor admin needs --bootstrap HOST:PORT (or --client-config FILE"),
        ("produce", (), "--executor produce needs --target-topic TOPIC"),
        ("segment", ("--output-dir",), "--executor segment needs the log dir PATH and --output-dir DIR"),
    ],
)
def test_an_executor_without_its_destination_is_named_and_nothing_is_journaled(
    tmp_path: Path, capsys, monkeypatch, executor: str, drop: tuple[str, ...], says: str
) -> None:
    for name in ("OFFSETOPS_BOOTSTRAP_SERVERS", "OFFSETOPS_CLIENT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    src = build_scenario(tmp_path / "src")
    argv = _segment_argv(src, tmp_path / "out", tmp_path / "journal")
    argv[argv.index("--executor") + 1] = executor
    for flag in drop:
        del argv[argv.index(flag) : argv.index(flag) + 2]
    assert main(argv) == 2
    assert says in capsys.readouterr().err
    assert not list((tmp_path / "journal").glob("plan-*.json"))
    assert not (tmp_path / "out").exists()
