"""A real Slack Web API stand-in on loopback, for tests of the Slack alerting library.

It is a stdlib ``ThreadingHTTPServer`` on ``127.0.0.1`` (port 0) that speaks enough of the Web API for
``slack_sdk.WebClient(base_url=server.base_url)``: ``chat.postMessage`` and ``auth.test``. Every request
is recorded (path, headers, parsed body) so tests assert on what actually went over the wire, and the
server can be told to rate-limit (HTTP 429 + ``Retry-After``), fail with a 5xx, answer with a Slack
error, never answer, or trickle its answer a byte at a time, for the next N calls. The last two behave
like a broken proxy in front of Slack: the request is not passed on, so nothing is posted.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

# Form fields slack-sdk sends as JSON strings; decoded so tests can inspect them as data.
_JSON_FORM_FIELDS = frozenset({"blocks", "attachments", "metadata", "user_auth_blocks"})


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the server received, whatever it answered."""

    method: str
    path: str
    api_method: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw_body: bytes
    status: int
    token: str | None

    @property
    def blocks(self) -> list[dict[str, Any]]:
        """The Block Kit blocks of a ``chat.postMessage`` (empty when absent)."""
        blocks = self.body.get("blocks") or []
        return blocks if isinstance(blocks, list) else []


@dataclass
class _Behaviour:
    valid_tokens: set[str]
    channels: set[str] | None = None
    rate_limit_remaining: int = 0
    retry_after: int = 0
    server_errors_remaining: int = 0
    server_error_status: int = 500
    api_errors: list[str] = field(default_factory=list)
    hang_remaining: int = 0
    trickle_remaining: int = 0
    trickle_interval_s: float = 0.1


class SlackTestServer:
    """A loopback HTTP server that behaves like the parts of the Slack Web API we use.

    ``valid_tokens`` are accepted; any other token (or none) gets ``{"ok": false, "error":
    "invalid_auth"}`` / ``not_authed``. When ``channels`` is given, posting elsewhere gets
    ``channel_not_found``.
    """

    def __init__(self, valid_tokens: set[str] | None = None, channels: set[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._behaviour = _Behaviour(valid_tokens=set(valid_tokens or {"xoxb-test-token"}), channels=channels)
        self._requests: list[RecordedRequest] = []
        self._messages: list[dict[str, Any]] = []
        self._ts_counter = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()  # releases handlers that hang or trickle

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What to pass as ``WebClient(base_url=...)``."""
        return f"http://127.0.0.1:{self.port}/api/"

    def start(self) -> SlackTestServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="slack-test-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> SlackTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- behaviour knobs ---------------------------------------------------------------------------

    def add_token(self, token: str) -> None:
        with self._lock:
            self._behaviour.valid_tokens.add(token)

    def rate_limit_next(self, n: int, retry_after: int = 0) -> None:
        """Answer the next ``n`` API calls with HTTP 429 and ``Retry-After: retry_after``."""
        with self._lock:
            self._behaviour.rate_limit_remaining = n
            self._behaviour.retry_after = retry_after

    def fail_next(self, n: int, status: int = 500) -> None:
        """Answer the next ``n`` API calls with an HTTP 5xx."""
        with self._lock:
            self._behaviour.server_errors_remaining = n
            self._behaviour.server_error_status = status

    def hang_next(self, n: int) -> None:
        """Accept the next ``n`` connections and never answer (nor read the request)."""
        with self._lock:
            self._behaviour.hang_remaining = n

    def trickle_next(self, n: int, interval_s: float = 0.1) -> None:
        """Answer the next ``n`` calls with a 200 whose body arrives one byte per ``interval_s``."""
        with self._lock:
            self._behaviour.trickle_remaining = n
            self._behaviour.trickle_interval_s = interval_s

    @property
    def connections_held(self) -> int:
        """Requests that got the hang or trickle treatment (recorded with status 0)."""
        return sum(1 for r in self.requests if r.status == 0)

    def error_next(self, *errors: str) -> None:
        """Answer the next API calls with HTTP 200 ``{"ok": false, "error": <error>}``, one per call."""
        with self._lock:
            self._behaviour.api_errors.extend(errors)

    # -- what was received -------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, api_method: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.api_method == api_method]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``chat.postMessage`` bodies the server accepted (``ok: true``), with their ``ts``."""
        with self._lock:
            return list(self._messages)

    # -- request handling --------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                server._handle(self)

            def do_GET(self) -> None:
                server._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: tests assert on recorded requests, not on stderr."""

        return Handler

    def _misbehave(self, h: BaseHTTPRequestHandler) -> bool:
        with self._lock:
            b = self._behaviour
            hang = b.hang_remaining > 0
            trickle = not hang and b.trickle_remaining > 0
            if hang:
                b.hang_remaining -= 1
            elif trickle:
                b.trickle_remaining -= 1
            interval = b.trickle_interval_s
        if not (hang or trickle):
            return False
        split = urlsplit(h.path)
        with self._lock:
            self._requests.append(
                RecordedRequest(h.command, split.path, split.path.rsplit("/", 1)[-1], {}, {}, b"", 0, None)
            )
        if hang:
            self._stopping.wait(60)
            h.close_connection = True
            return True
        length = int(h.headers.get("Content-Length") or 0)
        if length:
            h.rfile.read(length)
        h.send_response(200)
        h.send_header("Content-Type", "application/json; charset=utf-8")
        h.send_header("Content-Length", "100000")
        h.end_headers()
        h.wfile.flush()
        deadline = time.monotonic() + 60
        try:
            while not self._stopping.is_set() and time.monotonic() < deadline:
                h.wfile.write(b" ")
                h.wfile.flush()
                self._stopping.wait(interval)
        except OSError:
            pass  # the client gave up: what a deadline is for
        h.close_connection = True
        return True

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        if self._misbehave(h):
            return
        split = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        headers = {k: v for k, v in h.headers.items()}
        body = _parse_body(h.headers.get("Content-Type", ""), raw)  # header names are case-insensitive
        body.update({k: v for k, v in parse_qsl(split.query) if k not in body})
        api_method = split.path.rsplit("/", 1)[-1]
        token = _bearer(h.headers.get("Authorization")) or body.get("token")

        status, payload, extra_headers = self._respond(api_method, token, body)
        with self._lock:
            self._requests.append(
                RecordedRequest(
                    method=h.command,
                    path=split.path,
                    api_method=api_method,
                    headers=headers,
                    body=body,
                    raw_body=raw,
                    status=status,
                    token=token,
                )
            )
        data = json.dumps(payload).encode("utf-8")
        h.send_response(status)
        h.send_header("Content-Type", "application/json; charset=utf-8")
        h.send_header("Content-Length", str(len(data)))
        for k, v in extra_headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def _respond(
        self, api_method: str, token: str | None, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            b = self._behaviour
            if b.rate_limit_remaining > 0:
                b.rate_limit_remaining -= 1
                return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(b.retry_after)}
            if b.server_errors_remaining > 0:
                b.server_errors_remaining -= 1
                return b.server_error_status, {"ok": False, "error": "fatal_error"}, {}
            if not token:
                return 200, {"ok": False, "error": "not_authed"}, {}
            if token not in b.valid_tokens:
                return 200, {"ok": False, "error": "invalid_auth"}, {}
            if b.api_errors:
                return 200, {"ok": False, "error": b.api_errors.pop(0)}, {}

            if api_method == "auth.test":
                return (
                    200,
                    {
                        "ok": True,
                        "url": "https://offsetops.slack.test/",
                        "team": "offsetops",
                        "user": "offsetops-bot",
                        "team_id": "T0001",
                        "user_id": "U0001",
                        "bot_id": "B0001",
                    },
                    {},
                )
            if api_method == "chat.postMessage":
                channel = body.get("channel")
                if not channel:
                    return 200, {"ok": False, "error": "channel_not_found"}, {}
                if b.channels is not None and channel not in b.channels:
                    return 200, {"ok": False, "error": "channel_not_found"}, {}
                if not body.get("text") and not body.get("blocks"):
                    return 200, {"ok": False, "error": "no_text"}, {}
                self._ts_counter += 1
                ts = f"1700000000.{self._ts_counter:06d}"
                self._messages.append({**body, "ts": ts})
                return (
                    200,
                    {
                        "ok": True,
                        "channel": channel,
                        "ts": ts,
                        "message": {"text": body.get("text"), "ts": ts},
                    },
                    {},
                )
            return 200, {"ok": False, "error": "unknown_method"}, {}


def _bearer(value: str | None) -> str | None:
    if value and value.lower().startswith("bearer "):
        return value[7:].strip() or None
    return None


def _parse_body(content_type: str, raw: bytes) -> dict[str, Any]:
    """Parse a form, JSON or multipart body into a dict; JSON-string form fields become data."""
    ctype = content_type.split(";", 1)[0].strip().lower()
    if not raw:
        return {}
    if ctype == "application/json":
        parsed = json.loads(raw.decode("utf-8"))
        return parsed if isinstance(parsed, dict) else {"_json": parsed}
    if ctype == "application/x-www-form-urlencoded":
        fields: dict[str, Any] = dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
    elif ctype == "multipart/form-data":
        fields = dict(_multipart_fields(content_type, raw))
    else:
        return {"_raw": raw.decode("utf-8", "replace")}
    for name in _JSON_FORM_FIELDS & fields.keys():
        value = fields[name]
        if isinstance(value, str) and value[:1] in "[{":
            fields[name] = json.loads(value)
    return fields


def _multipart_fields(content_type: str, raw: bytes) -> Iterator[tuple[str, str]]:
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode("latin-1") + raw
    )
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            payload = part.get_payload(decode=True) or b""
            yield str(name), payload.decode("utf-8", "replace")


@pytest.fixture(name="slack_server")
def slack_server_fixture() -> Iterator[SlackTestServer]:
    """A fresh Slack stand-in per test; accepts the token ``xoxb-test-token``."""
    with SlackTestServer(valid_tokens={"xoxb-test-token"}) as server:
        yield server
