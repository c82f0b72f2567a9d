"""The Dagster UI serves the code location: the webserver on loopback, pages rendered by headless Chromium.

Saves ``tests/artifacts/dagster-ui.png`` (the global asset lineage) and
``tests/artifacts/dagster-ui-catalog.png`` (the asset catalog) for people to look at.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
ASSETS = (
    "raw_segments",
    "coordinator_cache",
    "expiration_plan",
    "tombstone_execution",
    "cleaner_audit",
    "cache_validation",
)
GROUPS = ("reload", "expiration", "cleaner_audit", "validation")


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def webserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``dagster-webserver -w workspace.yaml`` on a free loopback port with a throwaway DAGSTER_HOME."""
    home = tmp_path_factory.mktemp("dagster_home")
    # No onboarding dialog over the screenshot, no telemetry from a test.
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\nnux:\n  enabled: false\n")
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home), "OFFSETOPS_OUTPUT_DIR": str(home / "out")}
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


def _render(url: str, profile: Path, screenshot: Path | None = None) -> str:
    """The DOM of ``url`` after its scripts ran (and a screenshot when asked)."""
    chromium = _chromium()
    assert chromium is not None
    base = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=25000",
        "--window-size=1600,1000",
    ]
    if screenshot is not None:
        subprocess.run(
            [*base, f"--screenshot={screenshot}", url], capture_output=True, timeout=120, check=True
        )
    proc = subprocess.run([*base, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True)
    return proc.stdout


@pytest.mark.skipif(
    _chromium() is None, reason="Debian's chromium is not installed (apt-get install chromium)"
)
def test_ui_shows_the_asset_graph(webserver: str, tmp_path: Path) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    lineage_png = ARTIFACTS / "dagster-ui.png"
    lineage = _render(f"{webserver}/asset-groups", tmp_path / "profile", lineage_png)
    assert lineage_png.stat().st_size > 10_000
    for group in GROUPS:
        assert group in lineage, f"asset group {group} not on the lineage page"

    catalog_png = ARTIFACTS / "dagster-ui-catalog.png"
    catalog = _render(f"{webserver}/assets", tmp_path / "profile", catalog_png)
    missing = [a for a in ASSETS if a not in catalog]
    assert not missing, f"assets missing from the catalog page: {missing}"


@pytest.mark.skipif(
    _chromium() is None, reason="Debian's chromium is not installed (apt-get install chromium)"
)
def test_ui_lists_schedules_and_sensors(webserver: str, tmp_path: Path) -> None:
    page = _render(f"{webserver}/automation", tmp_path / "profile")
    for name in (
        "hourly_cleaner_audit",
        "daily_expiration_forecast",
        "daily_reload_and_validation",
        "slack_on_run_failure",
        "offsetops_alerts",
    ):
        assert name in page, f"{name} not on the automation page"
