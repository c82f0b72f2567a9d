"""The one atomic write and the one file lock."""

from __future__ import annotations

import json
import math
import os
import stat
import threading
from pathlib import Path

import pytest
from offsetops.coordinator_core.atomic import (
    SHARED_FILE_MODE,
    UnsafeWriteError,
    file_lock,
    open_append,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)
from offsetops.coordinator_core.cleaner.history import AuditHistory
from offsetops.coordinator_core.clock import CLOCK_FILE, write_clock_declaration
from offsetops.coordinator_core.tombstones.journal import JOURNAL_FORMAT, Journal, prepare_document


def test_a_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "new" / "report.json"
    write_text_atomic(target, "old")
    write_json_atomic(target, {"partition": 7})
    assert json.loads(target.read_text(encoding="utf-8")) == {"partition": 7}
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]


def test_a_held_lock_is_refused_without_waiting_and_free_after(tmp_path: Path) -> None:
    lock = tmp_path / "state" / "alerts.json.lock"
    answers: list[bool] = []

    def try_lock() -> None:
        with file_lock(lock, wait=False) as got:
            answers.append(got)

    with file_lock(lock) as held:
        assert held
        # flock belongs to the open file: a second opener is refused, as another process would be.
        probe = threading.Thread(target=try_lock, daemon=True)
        probe.start()
        probe.join(timeout=10)  # a lock that waited here would hang; the thread says so instead
        assert answers == [False]
    with file_lock(lock, wait=False) as again:
        assert again is True


# -- the file-mode policy and planted links -------------------------------------------------------


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file an attacker wants overwritten, through a link planted at one of our paths."""
    path = tmp_path / "victim"
    path.write_text("precious\n")
    return path


def test_every_write_is_0640_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        written = [
            write_text_atomic(tmp_path / "a.txt", "x"),
            write_json_atomic(tmp_path / "b.json", {"n": 1}),
            write_bytes_atomic(tmp_path / "c.bin", b"x"),
            write_clock_declaration(tmp_path, 1_700_000_000_000, declared_by="test"),
        ]
        with open_append(tmp_path / "d.jsonl") as fh:
            fh.write(b"{}\n")
        written.append(tmp_path / "d.jsonl")
    finally:
        os.umask(old)
    assert {p.name: mode_of(p) for p in written} == {p.name: SHARED_FILE_MODE for p in written}
    assert SHARED_FILE_MODE == 0o640


def test_a_replacement_replaces_a_planted_link_and_never_writes_through_it(tmp_path: Path, victim) -> None:
    for name, write in [
        ("report.json", lambda p: write_json_atomic(p, {"n": 1})),
        (CLOCK_FILE, lambda p: write_clock_declaration(p.parent, 1, declared_by="t")),
    ]:
        path = tmp_path / name
        path.symlink_to(victim)
        write(path)
        assert not path.is_symlink() and victim.read_text() == "precious\n"


def test_json_is_standard_json(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        write_json_atomic(tmp_path / "r.json", {"ratio": math.nan})
    write_json_atomic(tmp_path / "r.json", {"ratio": [math.inf, 0.5]}, nan_as_null=True)
    assert json.loads((tmp_path / "r.json").read_text()) == {"ratio": [None, 0.5]}


def test_an_append_refuses_a_planted_link_a_fifo_and_a_directory(tmp_path: Path, victim) -> None:
    (tmp_path / "link").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    for name, reason in [("link", "is a symbolic link"), ("fifo", "is a FIFO"), ("dir", "Is a directory")]:
        with pytest.raises(OSError, match=reason), open_append(tmp_path / name) as fh:
            fh.write(b"x")
    with pytest.raises(UnsafeWriteError, match="is a symbolic link"), file_lock(tmp_path / "link"):
        pass
    assert victim.read_text() == "precious\n"


def test_the_audit_history_and_the_journal_refuse_a_planted_link(tmp_path: Path, victim) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "audits.jsonl").symlink_to(victim)
    with pytest.raises(UnsafeWriteError, match=r"audits\.jsonl: is a symbolic link"):
        AuditHistory(state).append({"audited_at_ms": 1, "partitions": {}})
    plan = {"format": JOURNAL_FORMAT, "items": [{"item_id": 0, "group_id": "g"}]}
    journals = tmp_path / "journals"
    journals.mkdir()
    plan_id = prepare_document(plan)["plan_id"]
    (journals / f"plan-{plan_id}.status.jsonl").symlink_to(victim)
    with pytest.raises(UnsafeWriteError, match=r"status\.jsonl: is a symbolic link"):
        Journal.create(journals, plan)
    assert victim.read_text() == "precious\n"
