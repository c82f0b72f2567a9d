"""Open a page in headless Chromium over the DevTools protocol and record every request it makes.

Chromium itself phones home (component updater, network time, accounts) whatever the flags; those
requests are the browser's, not the page's. The DevTools ``Network`` domain attributes each request
to the page's session, so a test can assert exactly what the page asked for. Networking is also cut
at the browser level (a refusing proxy on loopback and a host resolver that resolves nothing), so
nothing could leave the machine even if a page tried.
"""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

TIMEOUT_S = 60.0


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


class _Session:
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
            self.events.append(reply)
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


def visit(
    chromium_args: list[str],
    page: Path,
    profile: Path,
    *,
    width: int = 1280,
    height: int = 1600,
    screenshot: bool = False,
) -> Visit:
    """Load ``page`` (a local file) and return its DOM, requests and optionally a full-page PNG."""
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
            s = _Session(ws)
            target = s.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            sid = s.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            s.call("Network.enable", session=sid)
            s.call("Page.enable", session=sid)
            s.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                session=sid,
            )
            s.call("Page.navigate", {"url": page.resolve().as_uri()}, session=sid)
            s.wait_for("Page.loadEventFired", sid)
            dom = s.call(
                "Runtime.evaluate",
                {"expression": "document.documentElement.outerHTML", "returnByValue": True},
                session=sid,
            )["result"]["value"]
            shot = None
            if screenshot:
                data = s.call("Page.captureScreenshot", {"format": "png"}, session=sid)["data"]
                shot = base64.b64decode(data)
            requests = [
                e["params"]["request"]["url"]
                for e in s.events
                if e.get("method") == "Network.requestWillBeSent" and e.get("sessionId") == sid
            ]
            return Visit(dom, requests, shot)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
