"""The exporter's endpoint under hostile clients: idle connections, a crowd, slow readers; label escaping.

The real ``offsetops exporter`` runs in a subprocess on a loopback port; the test holds hundreds of
connections against it and shows that a real scrape still answers, quickly and completely, and that the
exporter's memory stays bounded.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from offsetops.coordinator_core.escape import visible
from offsetops.coordinator_core.metrics_snapshot import Snapshot
from offsetops.coordinator_core.records.builder import build_record_batch
from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from prometheus_client.parser import text_string_to_metric_families

from offsetops.cli import main
from offsetops.commands.exporter import OffsetsCollector
from tests.support.exporter_process import start_exporter

REPO = Path(__file__).resolve().parents[2]
IDLE = 300
SCRAPE_TIMEOUT_S = 10.0  # Prometheus's default scrape_timeout
GROUPS = 1500  # x 8 partitions: a snapshot whose exposition is a few MB, as a real cluster's
NASTY_GROUP = 'grp\\"x\ny\x1b[31m'


def _log_dir(root: Path) -> Path:
    pdir = root / "__consumer_offsets-0"
    pdir.mkdir(parents=True)
    now = int(time.time() * 1000)
    batches = [
        build_record_batch(
            [
                (
                    encode_key(OffsetCommitKey(group=group, topic="orders", partition=p)),
                    encode_value(OffsetCommitValue(3, 10 + p, 0, "", now)),
                    now,
                )
            ],
            base_offset=i,
        )
        for i, (group, p) in enumerate(
            [(f"g{n // 8}", n % 8) for n in range(GROUPS * 8)] + [(NASTY_GROUP, 0)]
        )
    ]
    (pdir / "00000000000000000000.log").write_bytes(b"".join(batches))
    return root


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    """The exporter's resident set (``VmHWM``: its peak so far), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field}")


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    logdir = _log_dir(tmp_path / "logdir")
    proc, url = start_exporter(str(logdir), "--num-partitions", "1", "--interval", "3600")
    try:
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _scrape(url: str) -> tuple[float, str]:
    started = time.monotonic()
    body = urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S).read().decode()
    return time.monotonic() - started, body


def _connect(port: int, payload: bytes = b"") -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if payload:
        s.sendall(payload)
    return s


def test_a_scrape_answers_while_hundreds_of_connections_sit_idle(exporter) -> None:
    url, proc = exporter
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    _elapsed, first = _scrape(url)
    rss_before = _rss_kb(proc.pid)
    idle = []
    try:
        for i in range(IDLE):
            # Half send nothing, half a request that never ends: neither may hold the server.
            idle.append(_connect(port, b"" if i % 2 else b"GET /metrics HTTP/1.1\r\nHost: x\r\n"))
        elapsed, body = _scrape(url)
        print(f"scrape with {IDLE} idle connections: {elapsed:.3f} s, {len(body):,} bytes")
        assert elapsed < SCRAPE_TIMEOUT_S / 2
        assert "offsetops_exporter_up 1.0" in body
        rss_during = _rss_kb(proc.pid)
    finally:
        for s in idle:
            s.close()
    elapsed, body = _scrape(url)  # closing them all does not cost a scrape each
    assert elapsed < SCRAPE_TIMEOUT_S / 2 and len(body) == len(first)
    time.sleep(2)
    peak = _rss_kb(proc.pid, "VmHWM")
    print(f"exporter RSS {rss_before} KiB before, {rss_during} with {IDLE} idle connections, peak {peak}")
    assert rss_during - rss_before < 30 * 1024, (rss_before, rss_during)
    assert peak - rss_before < 60 * 1024, (rss_before, peak)


def test_idle_connections_are_closed_after_the_read_timeout(exporter) -> None:
    url, _proc = exporter
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    s = _connect(port)
    s.settimeout(30)
    started = time.monotonic()
    assert s.recv(1) == b""  # the server hung up on a client that never sent a request
    assert time.monotonic() - started < 20
    s.close()


def test_a_crowd_of_readers_that_never_read_does_not_block_a_scrape(exporter) -> None:
    url, proc = exporter
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    rss_before = _rss_kb(proc.pid)
    crowd = []
    try:
        for _ in range(200):
            s = _connect(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            crowd.append(s)
        elapsed, body = _scrape(url)
        assert elapsed < SCRAPE_TIMEOUT_S / 2 and "offsetops_exporter_up" in body
        assert _rss_kb(proc.pid) - rss_before < 60 * 1024
    finally:
        for s in crowd:
            s.close()


def test_unknown_paths_and_methods_get_a_status_not_a_hang(exporter) -> None:
    url, _proc = exporter
    base = url.removesuffix("/metrics")
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(f"{base}/nope", timeout=5)
    assert exc.value.code == 404
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    s = _connect(port, b"X" * 20000)  # no end of headers within the request limit
    s.settimeout(10)
    assert s.recv(64).startswith(b"HTTP/1.1 4")
    s.close()


def test_label_values_from_the_data_are_escaped(tmp_path: Path, capsys) -> None:
    logdir = _log_dir(tmp_path / "logdir")
    assert main(["exporter", str(logdir), "--once", "--num-partitions", "1"]) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text  # control characters are shown escaped (coordinator_core/escape.py)
    assert not any(line.startswith("y") for line in text.splitlines())  # no line forged by the newline
    groups = {
        s.labels["group_id"]
        for f in text_string_to_metric_families(text)
        if f.name == "offsetops_consumer_group_info"
        for s in f.samples
    }
    assert visible(NASTY_GROUP) in groups  # the label is the group id as every surface prints it


def test_log_lines_show_control_characters_escaped(caplog) -> None:
    def refresh() -> Snapshot:
        raise ValueError("cannot read /data/\x1b[2Jgroup\nexporter_up 1")

    collector = OffsetsCollector(refresh)
    with caplog.at_level(logging.ERROR, logger="offsetops.commands.exporter"):
        collector.refresh()
    (message,) = [r.getMessage() for r in caplog.records]
    assert "\x1b" not in message and "\n" not in message
    assert "\\x1b[2Jgroup\\nexporter_up" in message
    assert b"offsetops_exporter_up 0.0" in collector.exposition()  # a failed refresh is served too
