"""Screenshots of the Dagster UI over an ``offsetops demo`` output dir, for the docs (docs/images/).

    .venv/bin/offsetops demo --out out/demo
    .venv/bin/python scripts/ui_screenshots.py out/demo docs/images

Starts ``dagster-webserver`` on a free loopback port over the demo's instance (the same environment
``offsetops demo`` prints), drives headless Chromium (Debian's ``chromium``) through the catalog, the
runs list, each asset page and each check, and saves one PNG per view. Prints what it saved.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO.parent))  # the package is offsetops (this checkout), tests.support beside it
sys.path.insert(0, str(REPO))

from tests.support.cdp import BrowserPage  # noqa: E402

#: (file, path in the UI, texts to wait for, tab to click or None)
VIEWS = (
    ("dagster-catalog.png", "/assets", ("offsets_topic_summary", "cleaner_audit"), None),
    ("dagster-runs.png", "/runs", ("offsetops_main_job",), None),
    ("dagster-summary.png", "/assets/offsets_topic_summary", ("topic_verdict",), None),
    (
        "dagster-summary-checks.png",
        "/assets/offsets_topic_summary?view=checks",
        ("topic_cleaner_verdict",),
        None,
    ),
    ("dagster-cleaner-audit.png", "/assets/cleaner_audit", ("scope",), None),
    ("dagster-expiration-plan.png", "/assets/expiration_plan", ("scope",), None),
    (
        "dagster-expiration-checks.png",
        "/assets/expiration_plan?view=checks",
        ("no_offsets_expiring_soon",),
        None,
    ),
    ("dagster-coordinator-cache.png", "/assets/coordinator_cache", ("scope",), None),
    (
        "dagster-validation-checks.png",
        "/assets/cache_validation?view=checks",
        ("gx_error_expectations",),
        None,
    ),
)
#: checks opened one by one: (file, asset, check name, text to wait for)
CHECKS = (
    ("dagster-check-topic-cleaner.png", "offsets_topic_summary", "topic_cleaner_verdict", "CRITICAL"),
    ("dagster-check-topic-expiration.png", "offsets_topic_summary", "topic_offsets_expiration", "Expiration"),
    ("dagster-check-partition-verdict.png", "cleaner_audit", "partition_verdict", "partition"),
    ("dagster-check-cleaner-verdict.png", "cleaner_audit", "cleaner_verdict", "cleaner verdict"),
    ("dagster-check-forecast.png", "expiration_plan", "no_offsets_expiring_soon", "partition"),
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _webserver(demo: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {
        **os.environ,
        "DAGSTER_HOME": str(demo / "dagster_home"),
        "OFFSETOPS_LOG_DIR": str(demo / "logdir"),
        "OFFSETOPS_OUTPUT_DIR": str(demo),
        "OFFSETOPS_NUM_PARTITIONS": os.environ.get("OFFSETOPS_NUM_PARTITIONS", "50"),
        "OFFSETOPS_RETENTION_MINUTES": os.environ.get("OFFSETOPS_RETENTION_MINUTES", "120"),
    }
    port = _free_port()
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-webserver"), "-w", "workspace.yaml", "-h", "127.0.0.1",
         "-p", str(port)],
        cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"dagster-webserver exited {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"{base}/server_info", timeout=2) as resp:
                if resp.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGTERM)
    raise SystemExit("dagster-webserver did not answer within 180 s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("demo", type=Path, help="an `offsetops demo --out` directory")
    ap.add_argument("images", type=Path, help="where to save the PNGs (e.g. docs/images)")
    args = ap.parse_args(argv)
    args.images.mkdir(parents=True, exist_ok=True)
    proc, base = _webserver(args.demo.resolve(), args.images / ".webserver.log")
    try:
        with BrowserPage(args.images / ".chromium-profile") as page:
            page.goto(base + "/assets")
            page.wait_for_text("cleaner_audit", timeout=90)
            time.sleep(2)
            if "Join the Dagster community" in page.text():
                page.click_text("Skip")  # the first-visit dialog of a new instance
            for name, path, needles, tab in VIEWS:
                page.goto(base + path)
                page.wait_for_text(*needles, timeout=90)
                if tab:
                    page.click_text(tab)
                time.sleep(8)  # let the page settle (icons, lazy tables, status columns)
                print(page.screenshot(args.images / name))
            for name, asset, check, needle in CHECKS:
                page.goto(f"{base}/assets/{asset}?view=checks")
                page.wait_for_text(check, timeout=90)
                page.click_text(check)
                page.wait_for_text(needle, timeout=90)
                time.sleep(2)
                print(page.screenshot(args.images / name))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
