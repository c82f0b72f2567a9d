"""A headless Chromium page driven over the DevTools protocol: navigate, click a tab, read, screenshot.

Some Dagster UI views (a check's per-partition results) sit behind a tab that no URL selects, so the UI
tests click it as an operator would. Only Debian's ``chromium`` and the ``websockets`` package (a
Dagster dependency) are needed.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserPage:
    """One page of a private headless Chromium; use as a context manager so the browser always exits."""

    def __init__(self, profile: Path, width: int = 1600, height: int = 1100) -> None:
        binary = chromium()
        assert binary is not None, "chromium is not installed"
        profile.mkdir(parents=True, exist_ok=True)
        self._proc = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._ws: ClientConnection | None = None
        self._next_id = 0
        try:
            self._ws = connect(self._page_socket(profile / "DevToolsActivePort"), max_size=64 * 2**20)
        except BaseException:
            self.close()
            raise

    def _page_socket(self, port_file: Path) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"chromium exited {self._proc.returncode}")
            lines = port_file.read_text().split() if port_file.exists() else []
            if len(lines) >= 2:
                with urllib.request.urlopen(f"http://127.0.0.1:{lines[0]}/json/list", timeout=5) as resp:
                    targets = json.load(resp)
                return next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"]
            time.sleep(0.1)
        raise RuntimeError("chromium did not open its DevTools port within 30 s")

    def __enter__(self) -> BrowserPage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        assert self._ws is not None
        self._next_id += 1
        self._ws.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self._ws.recv(timeout=60))
            if msg.get("id") == self._next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def text(self) -> str:
        return str(self.evaluate("document.body ? document.body.innerText : ''") or "")

    def wait_for_text(self, *needles: str, timeout: float = 60) -> str:
        """The page's text once every needle is in it; fails with the text seen last."""
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            seen = self.text()
            if all(n in seen for n in needles):
                return seen
            time.sleep(0.5)
        raise AssertionError(f"{needles} not on the page after {timeout} s; it shows: {seen[:3000]}")

    def click_text(self, label: str) -> bool:
        """Click the last element whose own text is exactly ``label`` (tabs, buttons, list rows)."""
        return bool(
            self.evaluate(
                "(() => { const hits = [...document.querySelectorAll('*')].filter(e => "
                f"e.childElementCount === 0 && e.textContent.trim() === {json.dumps(label)});"
                " if (!hits.length) return false; hits[hits.length - 1].click(); return true; })()"
            )
        )

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path
