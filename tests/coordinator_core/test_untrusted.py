"""Every file offsetops reads is checked before it is read: FIFOs, devices, directories, symlinks and
oversized files named like the inputs it expects are one clear error naming the file, never a hang
or an unbounded read; a directory of inputs reports the bad entry and reads the rest."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from offsetops.coordinator_core.cleaner.broker_log import read_broker_logs
from offsetops.coordinator_core.cleaner.history import AuditHistory
from offsetops.coordinator_core.clock import CLOCK_FILE, ClockError, read_declared_clock
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.kafka_client import ClientConfigError, KafkaClientConfig
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.logdir import LogDirError, read_broker_id, read_offset_checkpoint
from offsetops.coordinator_core.untrusted import (
    MAX_BYTES,
    UntrustedFileError,
    iter_lines,
    read_regular_file,
)

HANG_S = 20


def within(fn: Callable[[], Any], *fifos: Path) -> Any:
    """``fn()``, failing the test if it has not returned in HANG_S (a read blocked on a FIFO); the FIFOs
    are then opened for writing, which releases the blocked reader."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:  # handed to the test below
            result["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_S)
    if worker.is_alive():
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"still blocked after {HANG_S} s (a FIFO was opened for reading)")
    if "error" in result:
        raise result["error"]
    return result.get("value")


@pytest.fixture
def specials(tmp_path: Path) -> dict[str, Path]:
    """One of each thing that is not a regular file, under an input's name."""
    d = tmp_path / "specials"
    d.mkdir()
    os.mkfifo(d / "fifo")
    (d / "dir").mkdir()
    (d / "target").write_text("a=1\n")
    (d / "link").symlink_to(d / "target")
    (d / "zero").symlink_to("/dev/zero")
    return {name: d / name for name in ("fifo", "dir", "link", "zero")}


@pytest.mark.parametrize(
    "name, reason",
    [
        ("fifo", "is a FIFO, not a regular file"),
        ("dir", "is a directory, not a regular file"),
        ("link", "is a symbolic link (not followed"),
        ("zero", "is a symbolic link (not followed"),
    ],
)
def test_the_reader_refuses_what_is_not_a_regular_file(specials, name: str, reason: str) -> None:
    path = specials[name]
    with pytest.raises(UntrustedFileError, match="^" + re.escape(f"{path}: client config {reason}")):
        within(lambda: read_regular_file(path, kind="client config"), path)
    with pytest.raises(UntrustedFileError, match=f"^{Path('/dev/zero')}: clock is a character device"):
        read_regular_file("/dev/zero", kind="clock")


def test_the_size_limit_is_per_kind_and_checked_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "client.properties"
    with open(big, "wb") as fh:
        fh.truncate(MAX_BYTES["client config"] + 1)  # sparse: nothing is written
    with pytest.raises(UntrustedFileError, match="above the limit of 1048576 bytes for a client config"):
        read_regular_file(big, kind="client config")
    assert len(read_regular_file(big, kind="checkpoint")) == MAX_BYTES["client config"] + 1
    with pytest.raises(UntrustedFileError, match="above the limit of 10 bytes"):
        read_regular_file(big, kind="checkpoint", max_bytes=10)
    with pytest.raises(ValueError, match="unknown file kind 'poem'"):
        read_regular_file(big, kind="poem")


def test_line_reading_keeps_at_most_a_line_limit(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"a\n" + b"x" * 100_000 + b"\nb\n")
    lines = list(iter_lines(log, kind="broker log", max_line=1000))
    assert [len(x) for x in lines] == [2, 1000, 2] and lines[2] == "b\n"
    with pytest.raises(UntrustedFileError, match="above the limit of 50 bytes"):
        list(iter_lines(log, kind="broker log", max_bytes=50))


def test_a_client_config_that_is_a_fifo_or_a_link_is_a_config_error(specials) -> None:
    for name in ("fifo", "zero", "dir"):
        with pytest.raises(
            ClientConfigError, match=re.escape(f"cannot read Kafka client properties: {specials[name]}")
        ):
            within(lambda n=name: KafkaClientConfig.from_file(specials[n]), specials[name])


def test_the_clock_file_is_checked(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    os.mkfifo(logdir / CLOCK_FILE)
    with pytest.raises(ClockError, match="is a FIFO, not a regular file"):
        within(lambda: read_declared_clock(logdir), logdir / CLOCK_FILE)
    (logdir / CLOCK_FILE).unlink()
    (logdir / CLOCK_FILE).symlink_to("/dev/zero")
    with pytest.raises(ClockError, match="is a symbolic link"):
        within(lambda: read_declared_clock(logdir))


def test_checkpoints_and_meta_properties_are_checked(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    os.mkfifo(logdir / "replication-offset-checkpoint")
    with pytest.raises(LogDirError, match="replication-offset-checkpoint: checkpoint is a FIFO"):
        within(lambda: read_offset_checkpoint(logdir / "replication-offset-checkpoint"))
    (logdir / "meta.properties").symlink_to("/dev/zero")
    with pytest.raises(LogDirError, match=r"meta\.properties: properties is a symbolic link"):
        within(lambda: read_broker_id(logdir))


def test_broker_logs_and_the_audit_history_are_checked(tmp_path: Path, specials) -> None:
    with pytest.raises(UntrustedFileError, match="broker log is a FIFO"):
        within(lambda: read_broker_logs([specials["fifo"]]), specials["fifo"])
    state = tmp_path / "state"
    state.mkdir()
    os.mkfifo(state / "audits.jsonl")
    with pytest.raises(UntrustedFileError, match="history is a FIFO"):
        within(lambda: AuditHistory.load(state), state / "audits.jsonl")


def test_a_fifo_or_a_device_named_like_a_segment_is_an_io_error_not_a_hang(tmp_path: Path) -> None:
    """The log dir listing already refuses them; the segment readers check again at the open (the
    name could be swapped between listing and reading)."""
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    device = tmp_path / "00000000000000000100.log"
    device.symlink_to("/dev/zero")  # segments follow links, as LogLoader does; a device is still refused
    for path, what in ((fifo, "a FIFO"), (device, "a character device")):
        errors: list[DecodeError] = []
        assert within(lambda p=path, e=errors: list(iter_segment_batches(p, errors=e)), fifo) == []
        assert [e.kind for e in errors] == ["io"] and f"segment is {what}, not a regular file" in errors[
            0
        ].reason
        fold = PartitionFold(partition=0)
        within(lambda p=path, f=fold: f.add_segment(p), fifo)
        assert [e.kind for e in fold.stats.errors] == ["io"] and what in fold.stats.errors[0].reason
