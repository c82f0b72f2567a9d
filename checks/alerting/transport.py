"""A slack-sdk ``WebClient`` whose every request ends by a wall-clock deadline.

slack-sdk's urllib transport bounds each socket operation, not the request: a server that accepts
and never answers costs the full timeout, and one that trickles a byte at a time never times out at
all. This client keeps slack-sdk's request building and error handling (``SlackApiError`` and its
response) and replaces only the wire exchange with ``http.client``, plus a watchdog that shuts the
socket down when the deadline passes, so a blocked read returns at once.

It reports whether the request had been sent when it failed: a failure after sending is ambiguous
(Slack may have posted the message), which the notifier records instead of guessing.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from typing import Any
from urllib.parse import urlsplit
from urllib.request import Request

from slack_sdk import WebClient

#: A response larger than this is not a Slack API answer; reading stops (memory stays bounded).
MAX_RESPONSE_BYTES = 1 << 20


class SlackTransportError(Exception):
    """The exchange failed. ``sent`` tells whether the request had fully left before it did."""

    def __init__(self, message: str, *, sent: bool, deadline: bool) -> None:
        super().__init__(message)
        self.sent = sent
        self.deadline = deadline


def check_slack_base_url(url: str) -> str:
    """``url`` when the bot token may be sent there: https, or http to a loopback host only (a local
    test server, a sidecar proxy). ValueError naming the URL otherwise: over plain http to another
    host the token would cross the network in the clear."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and _is_loopback(parts.hostname):
        return url
    raise ValueError(
        f"Slack base URL {url!r} must be https:// (http:// only to a loopback host): the bot token is "
        "sent with every request"
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class DeadlineWebClient(WebClient):
    """``WebClient`` with ``deadline`` (a ``time.monotonic()`` instant) bounding each whole request.

    Retries are the caller's: build it with ``retry_handlers=[]`` so one call is one attempt.
    """

    def __init__(self, *args: Any, monotonic: Any = time.monotonic, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        check_slack_base_url(self.base_url)
        self.deadline: float | None = None
        self._monotonic = monotonic

    def _perform_urllib_http_request_internal(self, url: str, req: Request) -> dict[str, Any]:
        deadline = self.deadline if self.deadline is not None else self._monotonic() + self.timeout
        return bounded_request(req, deadline=deadline, monotonic=self._monotonic, ssl_context=self.ssl)


def bounded_request(
    req: Request,
    *,
    deadline: float,
    monotonic: Any = time.monotonic,
    ssl_context: ssl.SSLContext | None = None,
) -> dict[str, Any]:
    """POST ``req`` and read the answer, all before ``deadline``; ``{"status", "headers", "body"}``."""
    parts = urlsplit(req.full_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SlackTransportError(f"not an http(s) URL: {req.full_url}", sent=False, deadline=False)
    remaining = deadline - monotonic()
    if remaining <= 0:
        raise SlackTransportError("the Slack time budget was spent before sending", sent=False, deadline=True)
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=remaining, context=ssl_context or ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=remaining)
    expired = threading.Event()

    def abort() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(remaining, abort)
    watchdog.daemon = True
    watchdog.start()
    sent = False
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    try:
        conn.request(req.get_method(), path or "/", body=req.data, headers=dict(req.header_items()))
        sent = True
        resp = conn.getresponse()
        body = resp.read(MAX_RESPONSE_BYTES)
        if expired.is_set():
            raise OSError("deadline passed while reading")
        charset = resp.headers.get_content_charset() or "utf-8"
        return {"status": resp.status, "headers": resp.headers, "body": body.decode(charset, "replace")}
    except (OSError, http.client.HTTPException) as exc:
        late = expired.is_set() or monotonic() >= deadline
        what = "deadline passed" if late else f"{type(exc).__name__}: {exc}"
        stage = "after the request was sent" if sent else "before the request was sent"
        raise SlackTransportError(f"{what} {stage}", sent=sent, deadline=late) from exc
    finally:
        watchdog.cancel()
        conn.close()
