"""The one atomic write and the one file lock."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from offsetops.coordinator_core.atomic import file_lock, write_json_atomic, write_text_atomic


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
