"""Post offsetops alerts to Slack, deduplicated and with recovery messages, never failing the caller.

Sensors run in fresh processes, so what has fired lives in a JSON state file (see
:mod:`assets.alerting.state`). When Slack cannot be used (no token, a bad token, an unknown channel,
the network after retries) the notification is appended as one JSON line to a local outbox file and
one log line says why; no exception reaches the caller, whose run must not fail because of paging.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from assets.alerting.blocks import alert_blocks, alert_text, recovery_blocks, recovery_text
from assets.alerting.model import SEVERITY_RANK, Alert, SendResult, SendStatus
from assets.alerting.state import AlertStateStore, FiringEntry

log = logging.getLogger(__name__)

# What an operator should do about the Slack errors we can name.
_ERROR_HINTS: dict[str, str] = {
    "invalid_auth": "the Slack token is invalid; check the bot token secret",
    "not_authed": "no Slack token reached the API; check the bot token secret",
    "account_inactive": "the Slack app or its user is deactivated; reinstall the app",
    "token_revoked": "the Slack token was revoked; issue a new bot token",
    "channel_not_found": "the channel does not exist or the bot cannot see it; check the channel name",
    "not_in_channel": "the bot is not a member of the channel; invite it",
    "is_archived": "the channel is archived; pick another channel",
    "ratelimited": "Slack kept rate-limiting after the retries",
    "missing_token": "no Slack token is configured",
}

_TOKEN_PATTERN = re.compile(r"xox[a-z]-[A-Za-z0-9-]+")


class SlackNotifier:
    """Send :class:`Alert`\\ s to one Slack channel via ``chat.postMessage``.

    * ``send`` deduplicates by ``alert.key``: a key notified less than ``dedupe_window_s`` ago is not
      posted again, unless its severity went up. A key whose last notification went to the outbox is
      tried against Slack again on the next ``send`` (the page matters more than a duplicate line).
    * ``resolve`` / ``reconcile`` post one ``RESOLVED: ...`` message when a firing key goes away.
    * Rate limits (429 + ``Retry-After``), 500/503 and connection errors are retried by slack-sdk's
      retry handlers, ``max_retries`` times each.

    ``client`` replaces the ``WebClient`` built from ``token``/``base_url`` (its retry handlers are the
    caller's business). ``clock`` returns epoch seconds; tests inject one to move through the window.
    """

    def __init__(
        self,
        token: str | None,
        channel: str,
        *,
        base_url: str | None = None,
        state_path: str | os.PathLike[str],
        outbox_path: str | os.PathLike[str],
        dedupe_window_s: float = 3600,
        max_retries: int = 3,
        client: WebClient | None = None,
        clock: Callable[[], float] = time.time,
        timeout_s: int = 10,
    ) -> None:
        token = (token or "").strip() or None
        if token is None and client is not None:
            token = (client.token or "").strip() or None
        self.__token = token
        self.channel = channel
        self.base_url = base_url
        self.dedupe_window_s = float(dedupe_window_s)
        self.max_retries = max_retries
        self.outbox_path = Path(outbox_path)
        self.state_path = Path(state_path)
        self._store = AlertStateStore(self.state_path)
        self._clock = clock
        self._client: WebClient | None
        if token is None:
            self._client = None
        elif client is not None:
            self._client = client
        else:
            self._client = WebClient(
                token=token,
                timeout=timeout_s,
                retry_handlers=[
                    RateLimitErrorRetryHandler(max_retry_count=max_retries),
                    ConnectionErrorRetryHandler(max_retry_count=max_retries),
                    ServerErrorRetryHandler(max_retry_count=max_retries),
                ],
                **({"base_url": base_url} if base_url else {}),
            )

    def __repr__(self) -> str:
        token = "<set>" if self.__token else "<missing>"
        return (
            f"SlackNotifier(channel={self.channel!r}, base_url={self.base_url!r}, token={token}, "
            f"state_path={str(self.state_path)!r}, outbox_path={str(self.outbox_path)!r})"
        )

    @property
    def has_token(self) -> bool:
        """Whether a Slack token is configured (without saying what it is)."""
        return self.__token is not None

    # -- public API --------------------------------------------------------------------------------

    def send(self, alert: Alert) -> SendResult:
        """Post ``alert`` unless its key was notified inside the window; never raises."""
        try:
            return self._send(alert)
        except Exception as exc:
            return self._last_resort("alert", alert.key, exc, alert)

    def resolve(self, key: str) -> SendResult:
        """Post one ``RESOLVED: <title>`` for a firing ``key`` and forget it; a no-op for unknown keys."""
        try:
            return self._resolve(key)
        except Exception as exc:
            return self._last_resort("recovery", key, exc, None)

    def reconcile(self, active_alerts: Iterable[Alert], *, scope: str | None = None) -> list[SendResult]:
        """Bring Slack in line with what is firing now: send each active alert, resolve the rest.

        Keys in the state file that are not among ``active_alerts`` get one recovery message. When
        several sensors share a state file, each passes ``scope`` (a key prefix such as ``"audit:"``)
        so it only resolves its own keys.
        """
        active = list(active_alerts)
        results = [self.send(alert) for alert in active]
        active_keys = {a.key for a in active}
        for key in self.firing_keys():
            if key not in active_keys and (scope is None or key.startswith(scope)):
                results.append(self.resolve(key))
        return results

    def firing_keys(self) -> list[str]:
        """The keys currently remembered as firing (sent or outboxed, not yet resolved)."""
        try:
            return sorted(self._store.load().firing)
        except Exception as exc:
            log.error("cannot read alert state %s: %s", self.state_path, self._redact(str(exc)))
            return []

    # -- internals ---------------------------------------------------------------------------------

    def _send(self, alert: Alert) -> SendResult:
        now = self._clock()
        with self._store.locked() as state:
            entry = state.firing.get(alert.key)
            if entry is not None and now - entry.last_notified_at < self.dedupe_window_s:
                escalated = SEVERITY_RANK[alert.severity] > SEVERITY_RANK.get(entry.severity, 0)
                if not escalated and (entry.delivered or self._client is None):
                    where = "Slack" if entry.delivered else "the outbox (no Slack token configured)"
                    return SendResult(
                        SendStatus.DEDUPLICATED,
                        alert.key,
                        f"already notified to {where} at {_iso(entry.last_notified_at)}; "
                        f"window is {self.dedupe_window_s:g}s",
                        ts=entry.ts,
                    )

            text, blocks = alert_text(alert), alert_blocks(alert)
            result = self._deliver("alert", alert.key, alert.to_json(), text, blocks, now)
            if result.status is not SendStatus.FAILED:
                state.firing[alert.key] = FiringEntry(
                    severity=alert.severity,
                    title=alert.title,
                    partitions=list(alert.partitions),
                    run_url=alert.run_url,
                    first_notified_at=entry.first_notified_at if entry is not None else now,
                    last_notified_at=now,
                    delivered=result.sent,
                    ts=result.ts,
                    channel=self.channel if result.sent else None,
                )
            return result

    def _resolve(self, key: str) -> SendResult:
        now = self._clock()
        with self._store.locked() as state:
            entry = state.firing.get(key)
            if entry is None:
                return SendResult(
                    SendStatus.SKIPPED,
                    key,
                    "never fired (or already resolved); no recovery sent",
                    kind="recovery",
                )
            text = recovery_text(key, entry.title)
            blocks = recovery_blocks(
                key,
                entry.title,
                entry.severity,
                entry.partitions,
                _duration(now - entry.first_notified_at),
                entry.run_url,
            )
            payload = {
                "key": key,
                "severity": entry.severity,
                "title": entry.title,
                "partitions": entry.partitions,
                "run_url": entry.run_url,
            }
            if entry.delivered:
                result = self._deliver("recovery", key, payload, text, blocks, now)
            else:
                # Slack never saw it fire, so a RESOLVED there would puzzle people; it joins the outbox.
                result = self._to_outbox(
                    "recovery",
                    key,
                    payload,
                    text,
                    blocks,
                    now,
                    "the alert itself went to the outbox",
                    log_level=logging.INFO,
                )
            if result.status is not SendStatus.FAILED:
                del state.firing[key]
            return result

    def _deliver(
        self,
        kind: Literal["alert", "recovery"],
        key: str,
        payload: dict[str, Any],
        text: str,
        blocks: list[dict[str, Any]],
        now: float,
    ) -> SendResult:
        if self._client is None:
            # No token is a deployment choice (local runs, the demo), not a failure: a warning, not an error.
            return self._to_outbox(
                kind, key, payload, text, blocks, now, "missing_token", log_level=logging.WARNING
            )
        try:
            response = self._client.chat_postMessage(channel=self.channel, text=text, blocks=blocks)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or f"HTTP {exc.response.status_code}")
            return self._to_outbox(kind, key, payload, text, blocks, now, error)
        except Exception as exc:  # network failure after retries, timeouts, bad base_url
            error = f"{type(exc).__name__}: {exc}"
            return self._to_outbox(kind, key, payload, text, blocks, now, error)
        ts = response.get("ts")
        log.info("slack %s %r posted to %s (ts=%s)", kind, key, self.channel, ts)
        return SendResult(SendStatus.SENT, key, f"posted to {self.channel}", kind=kind, ts=ts)

    def _to_outbox(
        self,
        kind: Literal["alert", "recovery"],
        key: str,
        payload: dict[str, Any],
        text: str,
        blocks: list[dict[str, Any]] | None,
        now: float,
        error: str,
        *,
        log_level: int = logging.ERROR,
    ) -> SendResult:
        error = self._redact(error)
        why = _ERROR_HINTS.get(error, error)
        line = {
            "kind": kind,
            "key": key,
            "queued_at": _iso(now),
            "channel": self.channel,
            "error": error,
            kind: payload,
            "text": text,
            "blocks": blocks,
        }
        try:
            self._append_outbox(line)
        except Exception as exc:
            log.error(
                "slack %s %r NOT delivered (%s) and the outbox %s is unwritable (%s): %s",
                kind,
                key,
                why,
                self.outbox_path,
                self._redact(str(exc)),
                json.dumps(line, default=str),
            )
            return SendResult(SendStatus.FAILED, key, f"{why}; outbox unwritable", kind=kind, error=error)
        log.log(
            log_level,
            "slack %s %r not posted to %s: %s; appended to outbox %s",
            kind,
            key,
            self.channel,
            why,
            self.outbox_path,
        )
        return SendResult(
            SendStatus.OUTBOXED, key, f"{why}; appended to {self.outbox_path}", kind=kind, error=error
        )

    def _append_outbox(self, line: dict[str, Any]) -> None:
        self.outbox_path.parent.mkdir(parents=True, exist_ok=True)
        data = (json.dumps(line, sort_keys=True, default=str) + "\n").encode("utf-8")
        # One write on an O_APPEND descriptor, so concurrent writers never interleave inside a line.
        fd = os.open(self.outbox_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def _last_resort(
        self, kind: Literal["alert", "recovery"], key: str, exc: Exception, alert: Alert | None
    ) -> SendResult:
        """An unexpected failure (state file, bug): outbox the alert all the same, and never raise."""
        error = f"{type(exc).__name__}: {self._redact(str(exc))}"
        if alert is not None:
            try:
                return self._to_outbox(
                    kind, key, alert.to_json(), alert_text(alert), alert_blocks(alert), self._clock(), error
                )
            except Exception:
                pass
        log.error("slack %s %r failed: %s", kind, key, error)
        return SendResult(SendStatus.FAILED, key, error, kind=kind, error=error)

    def _redact(self, text: str) -> str:
        if self.__token:
            text = text.replace(self.__token, "[REDACTED]")
        return _TOKEN_PATTERN.sub("[REDACTED]", text)


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")


def _duration(seconds: float) -> str | None:
    if seconds < 0:
        return None
    minutes, _ = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{minutes}m"]
    return " ".join(p for p in parts if p) if seconds >= 60 else "under a minute"
