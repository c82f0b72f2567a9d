"""Cleaner JMX metrics from a real HTTP server on loopback, and broker log parsing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from offsetops.coordinator_core.cleaner.broker_log import parse_broker_log, read_broker_logs
from offsetops.coordinator_core.cleaner.metrics import MetricsError, parse_exposition, scrape_metrics

from offsetops.cli import main
from tests.coordinator_core.cleaner_audit.scenarios import T0, checkpoints, healthy_partition

DATA = Path(__file__).parent / "data"


class _Exporter(BaseHTTPRequestHandler):
    """Serves the captured files the way jmx_exporter's HTTP server does (``/metrics``, text 0.0.4)."""

    routes = {
        "/metrics": DATA / "jmx_exporter_kafka_cleaner.prom",
        "/healthy": DATA / "jmx_exporter_healthy_norules.prom",
    }

    def do_GET(self) -> None:
        if self.path == "/garbage":
            body = b"this is { not an exposition\n"
        elif self.path in self.routes:
            body = self.routes[self.path].read_bytes()
        else:
            self.send_error(404, "Not Found")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def exporter() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_prometheus_parser_accepts_jmx_exporter_trailing_comma() -> None:
    text = (
        'kafka_log_logcleanermanager_uncleanable_partitions_count{logDirectory="/var/lib/kafka/data",} 1.0\n'
    )
    m = parse_exposition(text)
    assert m.values == {"uncleanable_partitions_count": {"/var/lib/kafka/data": 1.0}}


def test_scrape_the_captured_exposition_over_http(exporter: str) -> None:
    m = scrape_metrics(f"{exporter}/metrics")
    assert m.uncleanable_partitions_count == 1.0  # summed over log dirs (1 + 0)
    assert m.uncleanable_bytes == 52_428_800.0
    assert m.max_dirty_percent == 81.0
    assert m.time_since_last_run_ms == 94_000_000.0
    assert m.dead_thread_count == 1.0
    assert m.max_clean_time_secs == 12.0
    # BrokerTopicMetrics, Log size and JVM gauges are not cleaner metrics
    assert set(m.values) == {
        "uncleanable_partitions_count", "uncleanable_bytes", "max_dirty_percent", "time_since_last_run_ms",
        "deadthreadcount", "max_clean_time_secs", "max_buffer_utilization_percent", "cleaner_recopy_percent",
    }  # fmt: skip


def test_rule_less_jmx_exporter_names_are_recognised(exporter: str) -> None:
    m = scrape_metrics(f"{exporter}/healthy")
    assert (m.uncleanable_partitions_count, m.dead_thread_count, m.time_since_last_run_ms) == (
        0.0,
        0.0,
        4012.0,
    )
    assert m.max_dirty_percent == 12.0


def test_scrape_errors_name_the_url(exporter: str) -> None:
    with pytest.raises(MetricsError, match="HTTP 404"):
        scrape_metrics(f"{exporter}/nope")
    with pytest.raises(MetricsError, match="not a Prometheus text exposition"):
        scrape_metrics(f"{exporter}/garbage")


def test_audit_with_metrics_url_turns_critical(
    exporter: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_partition(tmp_path, 0)
    checkpoints(tmp_path, {0: 3})
    assert (
        main(["audit", str(tmp_path), "--now", str(T0), "--metrics-url", f"{exporter}/metrics", "--json"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "CRITICAL" and doc["partitions"][0]["verdict"] == "HEALTHY"
    got = {r["code"]: r for r in doc["reasons"]}
    assert list(got) == ["dead_cleaner_thread", "uncleanable_partitions", "cleaner_not_running"]
    assert got["cleaner_not_running"]["severity"] == "DEGRADED"
    assert "26 h" in got["cleaner_not_running"]["message"]
    assert "50.0 MiB" in got["uncleanable_partitions"]["message"]

    assert (
        main(["audit", str(tmp_path), "--now", str(T0), "--metrics-url", f"{exporter}/healthy", "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["verdict"] == "HEALTHY"


def test_unreachable_metrics_url_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    healthy_partition(tmp_path, 0)
    assert main(["audit", str(tmp_path), "--metrics-url", "http://127.0.0.1:1/metrics"]) == 2
    err = capsys.readouterr().err
    assert "http://127.0.0.1:1/metrics" in err and "Traceback" not in err


def test_broker_log_runs_markers_and_deaths() -> None:
    rep = read_broker_logs([DATA / "log-cleaner.log"])
    (run,) = rep.runs
    assert (run.thread, run.topic_partition, run.dirty_start, run.dirty_end) == (
        0,
        "__consumer_offsets-3",
        0,
        4815,
    )
    assert (run.start_messages, run.end_messages, run.start_mb, run.end_mb) == (4815, 37, 1.2, 0.0)
    assert run.seconds == 0.1
    marks = rep.uncleanable_partitions()
    assert list(marks) == [7] and "batch size 1752460652" in marks[7].message
    dead = rep.dead_threads()
    assert list(dead) == [0] and "IllegalArgumentException" in dead[0].message


def test_a_later_run_clears_a_death_and_a_mark() -> None:
    lines = [
        "[2024-03-01 12:00:03,500] ERROR [kafka-log-cleaner-thread-0]: Error due to (kafka.log.LogCleaner)",
        "java.lang.IllegalStateException: boom",
        "[2024-03-01 12:00:04,000] WARN [kafka-log-cleaner-thread-1]: Unexpected exception thrown when "
        "cleaning log Log(dir=/d/__consumer_offsets-9). Marking its partition (__consumer_offsets-9) as "
        "uncleanable (kafka.log.LogCleaner)",
        "[2024-03-02 09:00:00,000] INFO Cleaner 0: Beginning cleaning of log __consumer_offsets-9. "
        "(kafka.log.LogCleaner)",
        "[2024-03-02 09:00:01,000] INFO [kafka-log-cleaner-thread-0]: ",
        "\tLog cleaner thread 0 cleaned log __consumer_offsets-9 (dirty section = [10, 1234])",
        " (kafka.log.LogCleaner)",
    ]
    rep = parse_broker_log(lines)
    assert rep.dead_threads() == {}
    assert rep.uncleanable_partitions() == {}
    assert rep.lines == len(lines)
