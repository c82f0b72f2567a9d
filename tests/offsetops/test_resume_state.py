"""``--state DIR`` on the command line: the second run reads only what was appended (nothing, here),
prints the same cache, says where it resumed or why not, and never trusts a bad state file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offsetops.cli import main
from tests.coordinator_core.resume.logs import TOPIC, History, segments_of, write_partition
from tests.support.shared import real_kafka_logdirs

_THIS_RUN = ("elapsed_ms", "bytes_read", "resumed", "resume_reason", "resume_detail", "state_error")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _without_this_run(doc: dict) -> dict:
    for part in doc["partitions"]:
        for key in _THIS_RUN:
            part["stats"].pop(key)
    doc.pop("settings")
    return doc


@pytest.mark.parametrize("logdir", real_kafka_logdirs(), ids=lambda p: p.name)
def test_reload_twice_on_a_real_log_dir_reads_nothing_the_second_time(tmp_path, capsys, logdir: Path):
    state = tmp_path / "state"
    code, out, _ = run(capsys, "reload", str(logdir), "--state", str(state), "--json")
    assert code == 0
    first = json.loads(out)
    code, out, _ = run(capsys, "reload", str(logdir), "--state", str(state), "--json")
    assert code == 0
    second = json.loads(out)
    assert first["partitions"], logdir
    assert all(p["stats"]["resume_reason"] == "no_state" for p in first["partitions"])
    for part in second["partitions"]:
        stats = part["stats"]
        assert (stats["resumed"], stats["resume_reason"], stats["bytes_read"]) == (True, None, 0), stats
    assert second["settings"]["resume_state_dir"] == {"value": str(state), "source": "flag --state"}
    assert _without_this_run(first) == _without_this_run(second)


def _log(root: Path, commits: int) -> None:
    history = History().play([("commit", i % 4, i % 3, i) for i in range(commits)])
    write_partition(root, segments_of(history.batches, 1 << 20))


def test_text_says_where_it_resumed_and_a_corrupt_state_is_a_warning(tmp_path, capsys):
    root, state = tmp_path / "logdir", tmp_path / "state"
    _log(root, 3)
    code, out, _ = run(capsys, "reload", str(root), "--state", str(state))
    assert code == 0 and "bytes from the start: no_state" in out
    _log(root, 6)
    code, out, _ = run(capsys, "reload", str(root), "--state", str(state))
    assert code == 0 and "resumed at offset 6 " in out and "read 447 bytes" in out
    state_file = state / f"{TOPIC}-0.state"
    assert oct(state_file.stat().st_mode & 0o777) == "0o640"
    state_file.write_bytes(b"\x1b[2J not a state file" * 8)
    code, out, err = run(capsys, "reload", str(root), "--state", str(state))
    assert code == 0 and "state_foreign" in out
    assert "warning: resume state ignored" in err and "\x1b" not in err and "\x1b" not in out
    assert "resumed at offset" in run(capsys, "reload", str(root), "--state", str(state))[1]


def test_until_never_uses_or_writes_the_state(tmp_path, capsys):
    root, state = tmp_path / "logdir", tmp_path / "state"
    _log(root, 5)
    code, out, _ = run(capsys, "reload", str(root), "--state", str(state), "--until", "2", "--json")
    assert code == 0
    [part] = json.loads(out)["partitions"]
    assert part["stats"]["resume_reason"] == "as_of" and not part["stats"]["resumed"]
    assert not list(state.glob("*.state")) if state.exists() else True


def test_every_loading_command_takes_the_state(tmp_path, capsys, monkeypatch):
    root, state = tmp_path / "logdir", tmp_path / "state"
    _log(root, 5)
    for argv in (
        ["groups", str(root), "--resume-state", str(state)],
        ["describe", str(root), "g0", "--resume-state", str(state)],
        ["expire", str(root), "--state", str(state)],
        ["failover", str(root), "--state", str(state)],
    ):
        code, _, err = run(capsys, *argv)
        assert code in (0, 1), (argv, err)
        assert (state / f"{TOPIC}-0.state").is_file(), argv
        (state / f"{TOPIC}-0.state").unlink()
    monkeypatch.setenv("OFFSETOPS_RESUME_STATE_DIR", str(state))
    code, out, _ = run(capsys, "reload", str(root), "--json")
    doc = json.loads(out)
    assert doc["settings"]["resume_state_dir"]["source"] == "env OFFSETOPS_RESUME_STATE_DIR"
    assert (state / f"{TOPIC}-0.state").is_file()


def test_an_empty_state_dir_is_a_usage_error(tmp_path, capsys):
    code, _, err = run(capsys, "reload", str(tmp_path), "--state", "")
    assert code == 2 and "resume_state_dir from flag --state" in err and err.count("\n") == 1


def test_the_resume_state_never_becomes_the_audit_history_dir(tmp_path, capsys, monkeypatch):
    root, state, history = tmp_path / "logdir", tmp_path / "state", tmp_path / "history"
    _log(root, 5)
    monkeypatch.setenv("OFFSETOPS_RESUME_STATE_DIR", str(state))
    code, _, err = run(capsys, "audit", str(root), "--state-dir", str(history))
    assert code == 0, err
    assert sorted(p.name for p in history.iterdir()) == ["audits.jsonl"]
    assert "audits.jsonl" not in {p.name for p in state.iterdir()}


_READ = ("bytes_read", "resumed", "resume_reason", "resume_detail", "state_error")


def _audit(capsys, root: Path, *extra: str) -> dict:
    code, out, err = run(
        capsys, "audit", str(root), "--json", "--no-record", "--now", "1700000000000", *extra
    )
    assert code == 0, err
    return json.loads(out)


def _judged(doc: dict) -> list[dict]:
    return [{k: v for k, v in p.items() if k not in _READ} for p in doc["partitions"]]


def test_audit_resumes_its_scan_and_reads_only_what_was_appended(tmp_path, capsys):
    root, state = tmp_path / "logdir", tmp_path / "state"
    _log(root, 3)
    first = _audit(capsys, root, "--resume-state", str(state))
    [part] = first["partitions"]
    assert (part["resumed"], part["resume_reason"], part["bytes_read"] > 0) == (False, "no_state", True)
    _log(root, 6)
    second = _audit(capsys, root, "--resume-state", str(state))
    [part] = second["partitions"]
    assert (part["resumed"], part["resume_reason"], part["bytes_read"]) == (True, None, 447), part
    assert second["read"] == {"bytes_read": 447, "partitions": 1, "resumed": 1, "read_fresh": {}}
    assert second["settings"]["resume_state_dir"] == {"value": str(state), "source": "flag --resume-state"}
    assert _judged(second) == _judged(_audit(capsys, root))
    code, out, _ = run(capsys, "audit", str(root), "--no-record", "--resume-state", str(state))
    assert code == 0 and "read 0 bytes of 1 partition (1 resumed)" in out


def test_audit_ignores_a_foreign_scan_state_with_a_warning(tmp_path, capsys):
    root, state = tmp_path / "logdir", tmp_path / "state"
    _log(root, 4)
    _audit(capsys, root, "--resume-state", str(state))
    (state / f"{TOPIC}-0.scan").write_bytes(b"\x1b[2J not a scan state" * 8)
    code, out, err = run(capsys, "audit", str(root), "--json", "--no-record", "--now", "1700000000000",
                         "--resume-state", str(state))  # fmt: skip
    [part] = json.loads(out)["partitions"]
    assert code == 0 and (part["resumed"], part["resume_reason"]) == (False, "state_foreign")
    assert "warning: resume state ignored" in err and "\x1b" not in err
    assert _judged(json.loads(out)) == _judged(_audit(capsys, root))


def test_audit_takes_the_resume_state_for_one_log_dir_only(tmp_path, capsys):
    root = tmp_path / "logdir"
    _log(root, 2)
    code, _, err = run(capsys, "audit", "--log-dir", f"1={root}", "--resume-state", str(tmp_path / "s"))
    assert code == 2 and "--resume-state reads one log dir PATH" in err


def test_the_exporter_keeps_its_state_between_refreshes(tmp_path):
    from offsetops.cli import build_parser
    from offsetops.commands._run import resolve_args
    from offsetops.commands.exporter import build_snapshot

    root, state = tmp_path / "logdir", tmp_path / "state"
    _log(root, 5)
    args = build_parser().parse_args(["exporter", str(root), "--state", str(state)])
    resolve_args(args)
    build_snapshot(args)
    saved = (state / f"{TOPIC}-0.state").read_bytes()
    before = (state / f"{TOPIC}-0.state").stat().st_mtime_ns
    build_snapshot(args)  # resumed, nothing new: the state is not even rewritten
    assert (state / f"{TOPIC}-0.state").stat().st_mtime_ns == before
    _log(root, 8)
    build_snapshot(args)  # resumed after an append: the next state saved
    assert (state / f"{TOPIC}-0.state").read_bytes() != saved


def test_groups_describe_and_expire_say_what_they_read_and_name_the_option_typed(tmp_path, capsys):
    root, state = tmp_path / "logdir", tmp_path / "state"
    _log(root, 3)
    size = sum(f.stat().st_size for f in root.rglob("*.log"))
    code, out, _ = run(capsys, "groups", str(root), "--json")
    doc = json.loads(out)
    assert doc["read"] == {"bytes_read": size, "partitions": 1, "resumed": 0, "read_fresh": None}
    assert doc["settings"]["resume_state_dir"]["value"] is None
    code, out, _ = run(capsys, "groups", str(root))
    assert f"\nread {size} bytes of 1 partition\n" in out and "resume_state_dir none (" in out
    code, out, _ = run(capsys, "describe", str(root), "--resume-state", str(state), "--json")
    doc = json.loads(out)
    assert doc["read"] == {"bytes_read": size, "partitions": 1, "resumed": 0, "read_fresh": {"no_state": 1}}
    # on groups and describe, --state filters group states: the settings name the option typed
    assert doc["settings"]["resume_state_dir"]["source"] == "flag --resume-state"
    _log(root, 6)
    grown = sum(f.stat().st_size for f in root.rglob("*.log"))
    code, out, _ = run(capsys, "expire", str(root), "--state", str(state))
    assert code == 0 and f"\nread {grown - size} bytes of 1 partition (1 resumed)\n" in out
    code, out, _ = run(capsys, "expire", str(root), "--state", str(state), "--json")
    assert json.loads(out)["read"] == {"bytes_read": 0, "partitions": 1, "resumed": 1, "read_fresh": {}}
