"""Headless Chromium driven over the DevTools protocol: one browser launcher and one CDP connection.

The UI tests drive a page (navigate, click a tab no URL selects, read, screenshot) with
:class:`BrowserPage`; the offline-report tests record every request a page makes with :func:`visit`.
Only Debian's ``chromium`` and the ``websockets`` package (a Dagster dependency) are needed.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

TIMEOUT_S = 60.0


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Cdp:
    """One DevTools connection to the browser; page commands go to a flattened target session."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        msg_id = next(self.ids)
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            reply = json.loads(self.ws.recv(timeout=TIMEOUT_S))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)  # an event that arrived first: kept for wait_for and recordings
        raise TimeoutError(method)

    def wait_for(self, method: str, session: str) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        if any(e.get("method") == method and e.get("sessionId") == session for e in self.events):
            return
        while time.monotonic() < deadline:
            event = json.loads(self.ws.recv(timeout=TIMEOUT_S))
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return
        raise TimeoutError(method)

    def open_page(self, width: int, height: int) -> str:
        """A new blank page at ``width`` x ``height``, attached; returns its session id."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Network.enable", session=sid)
        self.call("Page.enable", session=sid)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=sid,
        )
        return sid


@contextlib.contextmanager
def browser(chromium_args: list[str], profile: Path) -> Iterator[Cdp]:
    """Start Chromium with ``chromium_args`` and a private profile, connect, and always stop it."""
    profile.mkdir(parents=True, exist_ok=True)
    port_file = profile / "DevToolsActivePort"
    port_file.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [*chromium_args, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not start its DevTools endpoint (exit {proc.poll()})")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        with connect(f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=TIMEOUT_S) as ws:
            yield Cdp(ws)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _screenshot(cdp: Cdp, session: str) -> bytes:
    return base64.b64decode(cdp.call("Page.captureScreenshot", {"format": "png"}, session=session)["data"])


# -- recording what a page asks for ------------------------------------------------------------------


@dataclass
class Visit:
    """What the page did: its DOM after load, every URL it requested, an optional screenshot."""

    dom: str
    requests: list[str] = field(default_factory=list)
    screenshot: bytes | None = None

    @property
    def remote_requests(self) -> list[str]:
        """Requests for anything but the local file system and inline data."""
        return [u for u in self.requests if not u.startswith(("file:", "data:", "about:"))]


def visit(
    chromium_args: list[str],
    page: Path,
    profile: Path,
    *,
    width: int = 1280,
    height: int = 1600,
    screenshot: bool = False,
) -> Visit:
    """Load ``page`` (a local file) and return its DOM, requests and optionally a full-page PNG.

    Chromium itself phones home whatever the flags; the DevTools ``Network`` domain attributes each
    request to the page's session, so only what the page asked for is recorded.
    """
    with browser(chromium_args, profile) as cdp:
        sid = cdp.open_page(width, height)
        cdp.call("Page.navigate", {"url": page.resolve().as_uri()}, session=sid)
        cdp.wait_for("Page.loadEventFired", sid)
        dom = cdp.call(
            "Runtime.evaluate",
            {"expression": "document.documentElement.outerHTML", "returnByValue": True},
            session=sid,
        )["result"]["value"]
        shot = _screenshot(cdp, sid) if screenshot else None
        requests = [
            e["params"]["request"]["url"]
            for e in cdp.events
            if e.get("method") == "Network.requestWillBeSent" and e.get("sessionId") == sid
        ]
        return Visit(dom, requests, shot)


# -- driving a page ------------------------------------------------------------------------------------


class BrowserPage:
    """One page of a private headless Chromium; use as a context manager so the browser always exits."""

    def __init__(self, profile: Path, width: int = 1600, height: int = 1100) -> None:
        binary = chromium()
        assert binary is not None, "chromium is not installed"
        args = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--remote-debugging-address=127.0.0.1",
            f"--window-size={width},{height}",
        ]
        self._stack = contextlib.ExitStack()
        try:
            self._cdp = self._stack.enter_context(browser(args, profile))
            self._session = self._cdp.open_page(width, height)
        except BaseException:
            self._stack.close()
            raise

    def __enter__(self) -> BrowserPage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        result = self._cdp.call(method, params, session=self._session)
        self._cdp.events.clear()  # a page driven for minutes: events are not recorded here
        return result

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
        path.write_bytes(_screenshot(self._cdp, self._session))
        return path
