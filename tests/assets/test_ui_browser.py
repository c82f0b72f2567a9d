"""The Dagster UI serves the code location and what a run recorded: the webserver on loopback, over the
session's materialized instance, pages rendered by headless Chromium.

Saves, for people to look at (docs/operations.md shows them): ``tests/artifacts/dagster-ui.png`` (the
lineage), ``dagster-ui-catalog.png``, ``dagster-ui-partition-healthy.png`` and
``dagster-ui-partition-critical.png`` (two partitions of cleaner_audit), and
``dagster-ui-check-partitions.png`` (the per-partition results of the partition_verdict check).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.assets.conftest import Materialized
from tests.support.cdp import BrowserPage, chromium

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        chromium() is None, reason="Debian's chromium is not installed (apt-get install chromium)"
    ),
]

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
ASSETS = (
    "raw_segments",
    "coordinator_cache",
    "expiration_plan",
    "tombstone_execution",
    "cleaner_audit",
    "cache_validation",
    "offsets_topic_summary",
    "offsets_metrics",
)
GROUPS = ("reload", "expiration", "cleaner_audit", "validation", "summary", "metrics")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def webserver(materialized: Materialized) -> Iterator[str]:
    """``dagster-webserver -w workspace.yaml`` on a free loopback port, over the materialized instance."""
    home = materialized.dagster_home
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "OFFSETOPS_LOG_DIR": str(materialized.log_dir),
        "OFFSETOPS_OUTPUT_DIR": str(materialized.output_dir),
        "OFFSETOPS_NUM_PARTITIONS": "50",
    }
    port = _free_port()
    log = (home / "webserver.log").open("w")
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "dagster-webserver"),
            "-w",
            "workspace.yaml",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"dagster-webserver exited {proc.returncode}: {(home / 'webserver.log').read_text()}"
                )
            try:
                with urllib.request.urlopen(f"{base}/server_info", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("dagster-webserver did not answer /server_info within 120 s")
            time.sleep(0.5)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


def test_ui_shows_the_asset_graph(webserver: str, tmp_path: Path) -> None:
    with BrowserPage(tmp_path / "profile") as page:
        page.goto(f"{webserver}/asset-groups")
        page.wait_for_text(*GROUPS)
        lineage_png = page.screenshot(ARTIFACTS / "dagster-ui.png")
        assert lineage_png.stat().st_size > 10_000
        page.goto(f"{webserver}/assets")
        page.wait_for_text(*ASSETS)
        page.screenshot(ARTIFACTS / "dagster-ui-catalog.png")


def test_ui_lists_schedules_and_sensors(webserver: str, tmp_path: Path) -> None:
    with BrowserPage(tmp_path / "profile") as page:
        page.goto(f"{webserver}/automation")
        page.wait_for_text(
            "hourly_cleaner_audit",
            "daily_expiration_forecast",
            "daily_reload_and_validation",
            "slack_on_run_failure",
            "offsetops_alerts",
        )


def _verdicts(materialized: Materialized) -> tuple[int, int]:
    """A HEALTHY partition and the CRITICAL one (the cleaner stalled for two days)."""
    import json

    report = json.loads((materialized.output_dir / "reports" / "cleaner_audit.json").read_text())
    healthy = min(d["partition"] for d in report["partitions"] if d["verdict"] == "HEALTHY")
    return healthy, materialized.stalled_partition


def test_a_partition_page_shows_that_partitions_own_verdict(
    webserver: str, materialized: Materialized, tmp_path: Path
) -> None:
    healthy, critical = _verdicts(materialized)
    with BrowserPage(tmp_path / "profile") as page:
        page.goto(f"{webserver}/assets/cleaner_audit?view=partitions&partition={healthy}")
        text = page.wait_for_text("worst_finding", "dirty_ratio", "HEALTHY")
        page.screenshot(ARTIFACTS / "dagster-ui-partition-healthy.png")
        assert "CRITICAL" not in text and "DEGRADED" not in text, (
            "a healthy partition shows another's verdict"
        )

        page.goto(f"{webserver}/assets/cleaner_audit?view=partitions&partition={critical}")
        text = page.wait_for_text("worst_finding", "CRITICAL no_progress", "remedy")
        page.screenshot(ARTIFACTS / "dagster-ui-partition-critical.png")
        assert "HEALTHY" not in text.split("worst_finding", 1)[1]


def _asset_checks(webserver: str, query: str) -> list[dict]:
    """The asset's checks as the UI's own GraphQL API gives them."""
    request = urllib.request.Request(
        f"{webserver}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return json.load(resp)["data"]["assetNodeOrError"]["assetChecksOrError"]["checks"]
    except urllib.error.HTTPError as exc:  # the GraphQL errors are in the body
        pytest.fail(f"GraphQL answered {exc.code}: {exc.read().decode(errors='replace')[:2000]}")


def test_the_critical_partition_fails_its_check_with_error_severity(
    webserver: str, materialized: Materialized, tmp_path: Path
) -> None:
    healthy, critical = _verdicts(materialized)
    failing = sum(
        not e.passed
        for e in materialized.result.get_asset_check_evaluations()
        if e.check_name == "partition_verdict"
    )
    with BrowserPage(tmp_path / "profile") as page:
        page.goto(f"{webserver}/assets/cleaner_audit?view=checks")
        page.wait_for_text("partition_verdict", "cleaner_verdict")
        assert page.click_text("partition_verdict")
        page.wait_for_text("Partitions")
        assert page.click_text("Partitions")
        text = page.wait_for_text(f"Failed ({failing})", f"Passed ({50 - failing})")
        page.screenshot(ARTIFACTS / "dagster-ui-check-partitions.png")
        assert page.click_text(str(critical))
        text = page.wait_for_text("no_progress")
        assert "ERROR" in text or "Failed" in text
        page.screenshot(ARTIFACTS / "dagster-ui-check-partition-critical.png")

    # What the Partitions tab draws, read from the same GraphQL API the page uses.
    query = (
        '{ assetNodeOrError(assetKey: {path: ["cleaner_audit"]}) { ... on AssetNode { assetChecksOrError {'
        " ... on AssetChecks { checks { name partitionStatuses { ... on AssetCheckDefaultPartitionStatuses {"
        " succeededPartitions failedPartitions } } } } } } } }"
    )
    checks = _asset_checks(webserver, query)
    statuses = next(c["partitionStatuses"] for c in checks if c["name"] == "partition_verdict")
    assert str(critical) in statuses["failedPartitions"]
    assert str(healthy) in statuses["succeededPartitions"]


def test_the_validation_checks_show_as_results_of_the_latest_validation(
    webserver: str, materialized: Materialized, tmp_path: Path
) -> None:
    """cache_validation emits its GX checks: the UI shows both, as results of its latest materialization."""
    with BrowserPage(tmp_path / "profile") as page:
        page.goto(f"{webserver}/assets/cache_validation?view=checks")
        page.wait_for_text("gx_error_expectations", "gx_warning_expectations")
        page.screenshot(ARTIFACTS / "dagster-ui-validation-checks.png")
    query = (
        '{ assetNodeOrError(assetKey: {path: ["cache_validation"]}) { ... on AssetNode { assetChecksOrError {'
        " ... on AssetChecks { checks { name executionForLatestMaterialization { status"
        " evaluation { severity } } } } } } } }"
    )
    checks = _asset_checks(webserver, query)
    latest = {c["name"]: c["executionForLatestMaterialization"] for c in checks}
    expected = {
        e.check_name: "SUCCEEDED" if e.passed else "FAILED"
        for e in materialized.result.get_asset_check_evaluations()
        if e.check_name.startswith("gx_")
    }
    assert {name: x["status"] for name, x in latest.items()} == expected
    assert {name: x["evaluation"]["severity"] for name, x in latest.items()} == {
        "gx_error_expectations": "ERROR",
        "gx_warning_expectations": "WARN",
    }
