"""Post offsetops messages to Slack, bounded in time, through an outbox, never failing the caller.

Every message is first appended to the outbox (:mod:`offsetops.checks.alerting.outbox`), then delivered in
order; what Slack accepted is removed. One :class:`SlackNotifier` serves one evaluation (a sensor
tick, the demo's alert pass) and spends at most ``budget_s`` seconds on Slack in total, across
retries and messages: a rate limit whose ``Retry-After`` exceeds ``max_retry_after_s``, a server
that never answers or one that trickles bytes stops delivery for this evaluation, and what is left
stays in the outbox, which the next evaluation sends first. Nothing is lost, and a message is only
sent again when Slack's answer to an earlier attempt never arrived (the delivered copy says so).

Without a token (local runs, the demo) the outbox is where the messages stay: one warning each,
kept to the newest message per alert that still holds, at most ``MAX_UNSENT`` of them.

Why one module of about 550 lines: the delivery loop, its time budget and its retry rules are one
state machine over one outbox; the message texts (``blocks``), the outbox file (``outbox``), the
dedupe state (``state``) and the HTTP transport (``transport``) already live apart.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from offsetops.checks.alerting.blocks import (
    alert_blocks,
    alert_text,
    delayed_context,
    duration,
    iso_seconds,
    recovery_blocks,
    recovery_text,
)
from offsetops.checks.alerting.model import SEVERITY_RANK, Alert, SendResult, SendStatus
from offsetops.checks.alerting.outbox import Outbox
from offsetops.checks.alerting.state import AlertStateStore, FiringEntry
from offsetops.checks.alerting.transport import DeadlineWebClient, SlackTransportError
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

log = logging.getLogger(__name__)

#: Messages kept in the outbox while no token is configured (the newest per alert that still holds).
MAX_UNSENT = 200

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

# Slack rejects the layout, not the message: the text alone is sent instead of dropping the page.
_LAYOUT_ERRORS = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long"})

_TOKEN_PATTERN = re.compile(r"xox[a-z]-[A-Za-z0-9-]+")


@dataclass(frozen=True)
class OutgoingMessage:
    """One Slack message to deliver: fallback ``text``, Block Kit ``blocks``, and what it is about."""

    kind: Literal["alert", "recovery"]
    key: str
    text: str
    blocks: list[dict[str, Any]]
    payload: dict[str, Any] = field(default_factory=dict)


class _Stop(Exception):
    """Slack cannot be used for the rest of this evaluation (the reason is in the message)."""

    def __init__(self, error: str, *, uncertain: bool = False) -> None:
        super().__init__(error)
        self.error = error
        self.uncertain = uncertain


class SlackNotifier:
    """Deliver messages to one Slack channel via ``chat.postMessage``, for one evaluation.

    * ``queue`` then ``deliver``: prebuilt messages (the alert lifecycle's), durable before sending.
    * ``send`` / ``resolve`` / ``reconcile`` are for event alerts (a failed run): deduplicated by
      ``alert.key`` for ``dedupe_window_s`` unless the severity went up, one RESOLVED when resolved.
    * ``flush`` delivers what is pending (earlier evaluations' leftovers first).

    Retries: a 429 waits ``Retry-After`` when it is at most ``max_retry_after_s``; 5xx answers and
    refused connections back off; each at most ``max_retries`` times, all inside ``budget_s``, with
    every request also bounded by ``timeout_s``. ``client`` replaces the client built from
    ``token``/``base_url``. ``clock`` is epoch seconds (message times), ``monotonic`` and ``sleep``
    measure and spend the budget; tests inject them.
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
        timeout_s: float = 10,
        budget_s: float = 20,
        max_retry_after_s: float = 5,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        token = (token or "").strip() or None
        if token is None and client is not None:
            token = (client.token or "").strip() or None
        self.__token = token
        self.channel = channel
        self.base_url = base_url
        self.dedupe_window_s = float(dedupe_window_s)
        self.max_retries = max_retries
        self.timeout_s = float(timeout_s)
        self.budget_s = float(budget_s)
        self.max_retry_after_s = float(max_retry_after_s)
        self.outbox_path = Path(outbox_path)
        self.state_path = Path(state_path)
        self._store = AlertStateStore(self.state_path)
        self._outbox = Outbox(self.outbox_path)
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        self._deadline: float | None = None  # set by the first network attempt of this evaluation
        self._stopped: str | None = None  # why Slack is not tried again in this evaluation
        self._client: WebClient | None
        if token is None:
            self._client = None
        elif client is not None:
            self._client = client
        else:
            self._client = DeadlineWebClient(
                token=token,
                timeout=max(1, int(self.timeout_s)),
                retry_handlers=[],  # one call is one attempt; the retries below share the budget
                monotonic=monotonic,
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

    @property
    def store(self) -> AlertStateStore:
        """The alert state file (the lifecycle keeps its conditions there)."""
        return self._store

    # -- public API --------------------------------------------------------------------------------

    def queue(self, messages: Iterable[OutgoingMessage]) -> list[tuple[str | None, OutgoingMessage]]:
        """Append ``messages`` to the outbox (no network); pass the result to :meth:`deliver`.

        Callers that change alert state queue inside their state lock, so a state change is never
        saved without its message being durable.
        """
        now = self._clock()
        queued: list[tuple[str | None, OutgoingMessage]] = []
        for message in messages:
            try:
                queued.append(self._enqueue(message, now))
            except Exception as exc:
                self._unqueued(message, exc)
                queued.append((None, message))
        return queued

    def deliver(self, queued: list[tuple[str | None, OutgoingMessage]]) -> list[SendResult]:
        """Deliver the outbox (older entries first); the outcome of each of ``queued``."""
        delivered = dict(self._flush_entries())
        out = []
        for entry_id, message in queued:
            if entry_id is None:
                out.append(
                    SendResult(
                        SendStatus.FAILED,
                        message.key,
                        "the outbox is unwritable",
                        kind=message.kind,
                        error="outbox",
                    )
                )
            else:
                out.append(delivered.get(entry_id) or self._pending_result(message))
        return out

    def flush(self) -> list[SendResult]:
        """Deliver what is pending in the outbox, oldest first, within this evaluation's budget."""
        return [r for _, r in self._flush_entries()]

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
        """Send each active event alert and resolve the firing keys (within ``scope``) that are not."""
        active = list(active_alerts)
        results = [self.send(alert) for alert in active]
        active_keys = {a.key for a in active}
        for key in self.firing_keys():
            if key not in active_keys and (scope is None or key.startswith(scope)):
                results.append(self.resolve(key))
        return results

    def firing_keys(self) -> list[str]:
        """The event keys currently remembered as firing (not yet resolved)."""
        try:
            return sorted(self._store.load().firing)
        except Exception as exc:
            log.error("cannot read alert state %s: %s", self.state_path, self._redact(str(exc)))
            return []

    def pending(self) -> list[dict[str, Any]]:
        """What waits in the outbox (for a person, or the next evaluation)."""
        return self._outbox.pending()

    # -- event alerts ------------------------------------------------------------------------------

    def _send(self, alert: Alert) -> SendResult:
        self._flush_entries()  # what earlier evaluations left behind goes first
        now = self._clock()
        with self._store.locked() as state:
            entry = state.firing.get(alert.key)
            if entry is not None and now - entry.last_notified_at < self.dedupe_window_s:
                escalated = SEVERITY_RANK[alert.severity] > SEVERITY_RANK.get(entry.severity, 0)
                if not escalated:
                    where = "Slack" if entry.delivered else "the outbox"
                    return SendResult(
                        SendStatus.DEDUPLICATED,
                        alert.key,
                        f"already notified to {where} at {iso_seconds(entry.last_notified_at)}; "
                        f"window is {self.dedupe_window_s:g}s",
                        ts=entry.ts,
                    )
            message = OutgoingMessage(
                "alert", alert.key, alert_text(alert), alert_blocks(alert), {"alert": alert.to_json()}
            )
            entry_id, _ = self._enqueue(message, now)
            state.firing[alert.key] = FiringEntry(
                severity=alert.severity,
                title=alert.title,
                partitions=list(alert.partitions),
                run_url=alert.run_url,
                first_notified_at=entry.first_notified_at if entry is not None else now,
                last_notified_at=now,
                delivered=False,
            )
        result = dict(self._flush_entries()).get(entry_id) or self._pending_result(message)
        if result.sent:
            with self._store.locked() as state:
                if alert.key in state.firing:
                    state.firing[alert.key].delivered = True
                    state.firing[alert.key].ts = result.ts
                    state.firing[alert.key].channel = self.channel
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
            payload = {
                "key": key,
                "severity": entry.severity,
                "title": entry.title,
                "partitions": entry.partitions,
                "run_url": entry.run_url,
            }
            message = OutgoingMessage(
                "recovery",
                key,
                recovery_text(key, entry.title),
                recovery_blocks(
                    key,
                    entry.title,
                    entry.severity,
                    entry.partitions,
                    duration(now - entry.first_notified_at),
                    entry.run_url,
                ),
                {"recovery": payload},
            )
            # Queued behind the alert it resolves, so Slack never shows a recovery before its alert.
            entry_id, _ = self._enqueue(message, now)
            del state.firing[key]
        return dict(self._flush_entries()).get(entry_id) or self._pending_result(message)

    # -- the outbox --------------------------------------------------------------------------------

    def _enqueue(self, message: OutgoingMessage, now: float) -> tuple[str, OutgoingMessage]:
        entry_id = Outbox.new_id()
        self._outbox.append(
            {
                "id": entry_id,
                "kind": message.kind,
                "key": message.key,
                "queued_at": iso_seconds(now),
                "channel": self.channel,
                "error": None if self._client is not None else "missing_token",
                "attempts": 0,
                "uncertain": False,
                "text": message.text,
                "blocks": message.blocks,
                **message.payload,
            }
        )
        if self._client is None:
            dropped = self._outbox.compact_unsent(MAX_UNSENT)
            if dropped:
                log.info("outbox %s: %d superseded unsent message(s) dropped", self.outbox_path, dropped)
            # No token is a deployment choice (local runs, the demo), not a failure: a warning.
            log.warning(
                "slack %s %r not posted to %s: %s; kept in outbox %s",
                message.kind,
                message.key,
                self.channel,
                _ERROR_HINTS["missing_token"],
                self.outbox_path,
            )
        return entry_id, message

    def _pending_result(self, message: OutgoingMessage) -> SendResult:
        error = "missing_token" if self._client is None else (self._stopped or "not attempted")
        why = _ERROR_HINTS.get(error, error)
        return SendResult(
            SendStatus.OUTBOXED,
            message.key,
            f"{why}; kept in {self.outbox_path}",
            kind=message.kind,
            error=error,
        )

    def _unqueued(self, message: OutgoingMessage, exc: Exception) -> SendResult:
        error = f"{type(exc).__name__}: {self._redact(str(exc))}"
        log.error(
            "slack %s %r could not be queued in %s (%s): %s",
            message.kind,
            message.key,
            self.outbox_path,
            error,
            message.text,
        )
        return SendResult(SendStatus.FAILED, message.key, error, kind=message.kind, error=error)

    def _flush_entries(self) -> list[tuple[str, SendResult]]:
        """Deliver pending entries in order until one fails; ``[(entry id, result)]`` of those tried."""
        if self._client is None or self._stopped is not None:
            return []
        out: list[tuple[str, SendResult]] = []
        try:
            with self._outbox.delivering() as mine:
                if not mine:
                    log.info(
                        "another process is delivering the outbox %s; leaving it to it", self.outbox_path
                    )
                    return []
                dropped = self._outbox.compact_unsent()
                if dropped:
                    log.warning(
                        "outbox %s: %d message(s) queued while no Slack token was configured were "
                        "superseded (a newer message for the same alert, or it resolved) and are not sent",
                        self.outbox_path,
                        dropped,
                    )
                for entry in self._outbox.pending():
                    result = self._deliver_entry(entry)
                    out.append((str(entry.get("id")), result))
                    if not result.sent:
                        break
        except Exception as exc:  # the outbox itself is unusable: say so, never raise
            log.error("cannot deliver the outbox %s: %s", self.outbox_path, self._redact(str(exc)))
        return out

    def _deliver_entry(self, entry: dict[str, Any]) -> SendResult:
        kind = entry.get("kind", "alert")
        key = str(entry.get("key", ""))
        blocks = list(entry.get("blocks") or [])
        if entry.get("attempts") or entry.get("error"):
            blocks.append(delayed_context(entry))
        try:
            response = self._post(str(entry.get("text") or key), blocks)
        except _Stop as stop:
            self._stopped = stop.error
            error = self._redact(stop.error)
            self._outbox.update(
                str(entry.get("id")),
                {
                    "error": error,
                    "attempts": int(entry.get("attempts") or 0) + 1,
                    "last_attempt_at": iso_seconds(self._clock()),
                    "uncertain": bool(entry.get("uncertain")) or stop.uncertain,
                },
            )
            why = _ERROR_HINTS.get(error, error)
            log.error(
                "slack %s %r not posted to %s: %s; kept in outbox %s (sent first next time)",
                kind,
                key,
                self.channel,
                why,
                self.outbox_path,
            )
            return SendResult(
                SendStatus.OUTBOXED, key, f"{why}; kept in {self.outbox_path}", kind=kind, error=error
            )
        self._outbox.update(str(entry.get("id")), None)
        ts = response.get("ts")
        log.info("slack %s %r posted to %s (ts=%s)", kind, key, self.channel, ts)
        return SendResult(SendStatus.SENT, key, f"posted to {self.channel}", kind=kind, ts=ts)

    # -- one message, retried inside the budget ----------------------------------------------------

    def _remaining(self) -> float:
        if self._deadline is None:
            self._deadline = self._monotonic() + self.budget_s
        return self._deadline - self._monotonic()

    def _post(self, text: str, blocks: list[dict[str, Any]]) -> Any:
        assert self._client is not None
        attempt = 0
        while True:
            remaining = self._remaining()
            if remaining <= 0:
                raise _Stop(f"the Slack time budget of {self.budget_s:g}s for this evaluation is spent")
            if isinstance(self._client, DeadlineWebClient):
                self._client.deadline = self._monotonic() + min(remaining, self.timeout_s)
            try:
                kwargs: dict[str, Any] = {"channel": self.channel, "text": text}
                if blocks:
                    kwargs["blocks"] = blocks
                return self._client.chat_postMessage(**kwargs)
            except SlackApiError as exc:
                status = exc.response.status_code
                error = str(exc.response.get("error") or f"HTTP {status}")
                if error in _LAYOUT_ERRORS and blocks:
                    log.warning("slack rejected the message layout (%s); sending its text alone", error)
                    blocks = []
                    continue
                if status == 429:
                    wait = _retry_after(exc.response.headers)
                    if attempt >= self.max_retries:
                        raise _Stop("ratelimited") from None
                    if wait > self.max_retry_after_s:
                        raise _Stop(
                            f"ratelimited: Retry-After {wait:g}s exceeds the cap of "
                            f"{self.max_retry_after_s:g}s"
                        ) from None
                    self._pause(wait, "ratelimited")
                elif status >= 500 and attempt < self.max_retries:
                    self._pause(_backoff(attempt), error)
                else:
                    raise _Stop(error) from None
            except SlackTransportError as exc:
                if exc.sent:
                    # Slack may have posted it: retrying now could post it twice. The outbox retries
                    # next evaluation, and the copy it sends says it may be a duplicate.
                    raise _Stop(f"no answer from Slack: {exc}", uncertain=True) from None
                if exc.deadline or attempt >= self.max_retries:
                    raise _Stop(f"cannot reach Slack: {exc}") from None
                self._pause(_backoff(attempt), str(exc))
            except Exception as exc:  # a client passed in by the caller, a bad base_url
                raise _Stop(f"{type(exc).__name__}: {self._redact(str(exc))}") from None
            attempt += 1

    def _pause(self, seconds: float, why: str) -> None:
        if seconds >= self._remaining():
            raise _Stop(f"{why}: waiting {seconds:g}s more would exceed the Slack time budget")
        self._sleep(max(seconds, 0.0))

    # -- failures of our own -----------------------------------------------------------------------

    def _last_resort(
        self, kind: Literal["alert", "recovery"], key: str, exc: Exception, alert: Alert | None
    ) -> SendResult:
        """An unexpected failure (state file, bug): queue the alert all the same, and never raise."""
        error = f"{type(exc).__name__}: {self._redact(str(exc))}"
        if alert is not None:
            message = OutgoingMessage(
                kind, key, alert_text(alert), alert_blocks(alert), {"alert": alert.to_json()}
            )
            try:
                entry_id, _ = self._enqueue(message, self._clock())
                log.error("slack %s %r: alert state unusable (%s); queued in the outbox", kind, key, error)
                return dict(self._flush_entries()).get(entry_id) or SendResult(
                    SendStatus.OUTBOXED, key, f"{error}; kept in {self.outbox_path}", kind=kind, error=error
                )
            except Exception:
                pass
        log.error("slack %s %r failed: %s", kind, key, error)
        return SendResult(SendStatus.FAILED, key, error, kind=kind, error=error)

    def _redact(self, text: str) -> str:
        if self.__token:
            text = text.replace(self.__token, "[REDACTED]")
        return _TOKEN_PATTERN.sub("[REDACTED]", text)


def _retry_after(headers: Any) -> float:
    """``Retry-After`` in seconds (Slack sends an integer); 1 s when absent or unreadable."""
    value = None
    for name, v in (headers or {}).items():
        if str(name).lower() == "retry-after":
            value = v[0] if isinstance(v, list) else v
    try:
        return max(float(value), 0.0) if value is not None else 1.0
    except (TypeError, ValueError):
        return 1.0


def _backoff(attempt: int) -> float:
    return min(0.25 * (2**attempt), 4.0)
