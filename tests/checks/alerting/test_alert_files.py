"""The alert state and the Slack outbox follow the file policy: 0640, and never written through a link
planted at their path (the state is replaced over the link; the outbox append refuses it)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from offsetops.checks.alerting.outbox import Outbox
from offsetops.checks.alerting.state import AlertState, AlertStateStore
from offsetops.coordinator_core.atomic import UnsafeWriteError


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_text("precious\n")
    return path


def test_the_outbox_refuses_a_planted_link_and_writes_0640(tmp_path: Path, victim: Path) -> None:
    planted = tmp_path / "planted" / "outbox.jsonl"
    planted.parent.mkdir()
    planted.symlink_to(victim)
    with pytest.raises(UnsafeWriteError, match="is a symbolic link"):
        Outbox(planted).append({"id": "a", "text": "x"})
    assert victim.read_text() == "precious\n"
    box = Outbox(tmp_path / "ok" / "outbox.jsonl")
    box.append({"id": "a", "text": "x"})
    assert [e["id"] for e in box.pending()] == ["a"]
    assert stat.S_IMODE(box.path.stat().st_mode) == 0o640


def test_the_alert_state_replaces_a_planted_link(tmp_path: Path, victim: Path) -> None:
    path = tmp_path / "alerts.json"
    path.symlink_to(victim)
    AlertStateStore(path).save(AlertState())
    assert not path.is_symlink() and victim.read_text() == "precious\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
