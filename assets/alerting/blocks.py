"""Block Kit layout of alert and recovery messages, and their plain-text fallbacks.

Slack's limits are applied here (header 150 chars, section text 3000, field 2000, 10 fields) so a
long reason can never get a message rejected with ``invalid_blocks``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assets.alerting.model import Alert

SEVERITY_EMOJI: dict[str, str] = {
    "critical": ":rotating_light:",
    "warning": ":warning:",
    "info": ":information_source:",
}
RESOLVED_EMOJI = ":white_check_mark:"

_HEADER_MAX = 150
_SECTION_MAX = 3000
_FIELD_MAX = 2000
_FIELDS_MAX = 10
_DETAIL_FIELDS_MAX = _FIELDS_MAX - 2  # Severity and Partition(s) come first


def escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def partitions_label(partitions: Sequence[int]) -> str:
    """``"Partition"`` or ``"Partitions"``, as the count asks."""
    return "Partition" if len(partitions) == 1 else "Partitions"


def format_partitions(partitions: Sequence[int]) -> str:
    """``"7"``, ``"3, 7, 12"``, or ``"-"`` when the alert is not about particular partitions."""
    return ", ".join(str(p) for p in partitions) if partitions else "-"


def alert_text(alert: Alert) -> str:
    """The notification/fallback text: severity, title, partitions and reason on one line."""
    where = f" ({partitions_label(alert.partitions).lower()} {format_partitions(alert.partitions)})"
    return f"[{alert.severity.upper()}] {alert.title}{where if alert.partitions else ''}: {alert.reason}"


def alert_blocks(alert: Alert) -> list[dict[str, Any]]:
    """Header (emoji + title), fields (Severity, Partition(s), details), reason, remedy, run link."""
    fields = [
        _mrkdwn(f"*Severity:*\n{alert.severity.upper()}", _FIELD_MAX),
        _mrkdwn(
            f"*{partitions_label(alert.partitions)}:*\n{format_partitions(alert.partitions)}", _FIELD_MAX
        ),
    ]
    for name, value in list(alert.details.items())[:_DETAIL_FIELDS_MAX]:
        fields.append(_mrkdwn(f"*{escape(str(name))}:*\n{escape(str(value))}", _FIELD_MAX))

    blocks: list[dict[str, Any]] = [
        _header(f"{SEVERITY_EMOJI[alert.severity]} {alert.title}"),
        {"type": "section", "fields": fields},
        {"type": "section", "text": _mrkdwn(f"*Reason*\n{escape(alert.reason)}", _SECTION_MAX)},
        {"type": "section", "text": _mrkdwn(f"*Remedy*\n{escape(alert.remedy)}", _SECTION_MAX)},
    ]
    blocks.extend(_run_link_blocks(alert.key, alert.run_url))
    return blocks


def recovery_text(key: str, title: str) -> str:
    """The recovery fallback text: ``RESOLVED: <title>``."""
    return f"RESOLVED: {title or key}"


def recovery_blocks(
    key: str,
    title: str,
    severity: str | None,
    partitions: Sequence[int],
    fired_for: str | None,
    run_url: str | None,
) -> list[dict[str, Any]]:
    """Header ``RESOLVED: <title>``, what was firing and for how long, and the run link."""
    fields = [
        _mrkdwn(f"*Severity was:*\n{(severity or 'unknown').upper()}", _FIELD_MAX),
        _mrkdwn(f"*{partitions_label(partitions)}:*\n{format_partitions(partitions)}", _FIELD_MAX),
    ]
    if fired_for:
        fields.append(_mrkdwn(f"*Firing for:*\n{fired_for}", _FIELD_MAX))
    blocks: list[dict[str, Any]] = [
        _header(f"{RESOLVED_EMOJI} {recovery_text(key, title)}"),
        {"type": "section", "fields": fields},
        {
            "type": "section",
            "text": _mrkdwn("The condition is no longer reported. No action is needed.", _SECTION_MAX),
        },
    ]
    blocks.extend(_run_link_blocks(key, run_url))
    return blocks


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": _clip(text, _HEADER_MAX), "emoji": True}}


def _mrkdwn(text: str, limit: int) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": _clip(text, limit)}


def _run_link_blocks(key: str, run_url: str | None) -> list[dict[str, Any]]:
    context = f"alert key `{escape(key)}`"
    if not run_url:
        return [{"type": "context", "elements": [_mrkdwn(context, _SECTION_MAX)]}]
    return [
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Open Dagster run", "emoji": True},
                    "url": run_url,
                    "action_id": "open_dagster_run",
                }
            ],
        },
        {"type": "context", "elements": [_mrkdwn(f"<{run_url}|Dagster run> · {context}", _SECTION_MAX)]},
    ]
