"""SessionStart: a session built on a thread of its own, its result or error handed to whoever waits."""

from __future__ import annotations

import threading

import pytest
from offsetops.pipelines.session import SessionStart


def _alive() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == SessionStart.THREAD_NAME]


def test_wait_gives_what_the_build_gave() -> None:
    session = object()
    start = SessionStart(lambda: session)  # type: ignore[arg-type,return-value]
    assert start.wait() is session
    assert start.join() is None
    assert _alive() == []


def test_a_failed_build_is_raised_by_wait_not_by_join() -> None:
    release = threading.Event()

    def build() -> object:
        release.wait(10)
        raise RuntimeError("Java gateway process exited before sending its port number")

    start = SessionStart(build)  # type: ignore[arg-type]
    assert _alive() == [SessionStart.THREAD_NAME]  # building while the caller goes on
    release.set()
    with pytest.raises(RuntimeError, match="Java gateway"):
        start.wait()
    assert start.join() is None  # already raised to the one who needed it
    assert _alive() == []


def test_join_reports_a_failure_nobody_waited_for() -> None:
    def build() -> object:
        raise OSError("no java on PATH")

    start = SessionStart(build)  # type: ignore[arg-type]
    error = start.join()
    assert isinstance(error, OSError) and "no java" in str(error)
    assert _alive() == []
