"""Block Kit layout of offsetops messages, and their plain-text fallbacks.

Everything that comes from the data (group ids, topic names, finding messages, error text) goes
through :func:`escape` before it reaches ``text`` or a ``mrkdwn`` block: ``&``, ``<`` and ``>`` become
entities, so ``<!channel>`` in a group id pings nobody and ``<http://x|y>`` links nowhere, and control
characters are shown as ``\\xNN`` so a newline or an ANSI escape cannot forge a line of the message.
Headers are ``plain_text``; Slack decodes the three entities there too, so they are escaped alike.

Slack's limits are applied here (header 150 chars, section text 3000, field 2000, 10 fields, 50
blocks, 5 buttons per actions block) so a long reason can never get a message rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from offsetops.checks.alerting.model import Alert, Change, Observation, Transition, severity_order
from offsetops.coordinator_core.escape import for_slack, slack_code, visible
from offsetops.coordinator_core.findings import DEGRADED, and_more, severity_of_level

SEVERITY_EMOJI: dict[str, str] = {
    "critical": ":rotating_light:",
    "warning": ":warning:",
    "info": ":information_source:",
}
RESOLVED_EMOJI = ":white_check_mark:"
ESCALATED_EMOJI = ":arrow_double_up:"
DOWNGRADED_EMOJI = ":arrow_down_small:"

_HEADER_MAX = 150
_SECTION_MAX = 3000
_FIELD_MAX = 2000
_FIELDS_MAX = 10
_DETAIL_FIELDS_MAX = _FIELDS_MAX - 2  # Severity and Partition(s) come first
_SUBJECT_LINES_MAX = 25  # the rest are counted ("and 12 more"); the report lists them all
_GROUPS_IN_TEXT = 10
_PARTITION_BUTTONS = 3


def neutralise(text: str) -> str:
    """Control characters as visible ``\\xNN`` (``\\uNNNN``) escapes; the rest unchanged."""
    return visible(text)


def escape(text: str) -> str:
    """Safe for Slack ``text`` and ``mrkdwn``: controls neutralised, ``& < >`` as entities."""
    return for_slack(text)


def escape_multiline(text: str) -> str:
    """Like :func:`escape`, keeping line breaks (for our own multi-line text, like a traceback)."""
    return "\n".join(escape(line) for line in str(text).split("\n"))


def code(text: str) -> str:
    """A data value in inline code; a backtick in it is shown as ``\\x60`` so it cannot close the span."""
    return slack_code(text)


def code_block(text: str) -> str:
    """Multi-line data (a run's error messages) in a Slack code block: no formatting, mention or link;
    its own line breaks kept, every other control character escaped."""
    lines = (slack_code(line)[1:-1] for line in str(text).split("\n"))
    return "```" + "\n".join(lines) + "```"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def partitions_label(partitions: Sequence[int]) -> str:
    """``"Partition"`` or ``"Partitions"``, as the count asks."""
    return "Partition" if len(partitions) == 1 else "Partitions"


def format_partitions(partitions: Sequence[int]) -> str:
    """``"7"``, ``"47, 3, 12"`` (in the order given), or ``"-"`` when there are none."""
    return ", ".join(str(p) for p in partitions) if partitions else "-"


def iso_seconds(epoch_s: float) -> str:
    """``2026-03-01T05:15:00+00:00``: a Unix time in seconds, as alerts and the outbox show it."""
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")


def duration(seconds: float) -> str:
    """``"5h"``, ``"2h 5m"``, ``"3d 4h"``, ``"under a minute"``."""
    if seconds < 60:
        return "under a minute"
    hours, minutes = divmod(int(seconds) // 60, 60)
    days, hours = divmod(hours, 24)
    return " ".join(f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m")) if n)


# -- links ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlertLinks:
    """Where a message points: the Dagster UI (asset partitions, runs) and the operator report."""

    dagster_url: str
    reports_url: str | None = None
    report_path: str = "report.html"

    def run(self, run_id: str) -> str:
        return f"{self.dagster_url.rstrip('/')}/runs/{quote(run_id, safe='')}"

    def asset_partition(self, asset: str, partition: int) -> str:
        """The asset's Partitions tab with ``partition`` selected (the UI's own URL for it)."""
        return (
            f"{self.dagster_url.rstrip('/')}/assets/{quote(asset, safe='/')}"
            f"?view=partitions&partition={quote(str(partition), safe='')}"
        )

    def report(self) -> str | None:
        """The operator report's URL; None without a base URL (Slack cannot open ``file://``)."""
        if not self.reports_url:
            return None
        from offsetops.checks.operator_report import report_url

        return report_url("", self.report_path, base_url=self.reports_url)


def _button(text: str, url: str, action_id: str) -> dict[str, Any]:
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": _clip(text, 75), "emoji": True},
        "url": url,
        "action_id": action_id,
    }


# -- event alerts (a failed run) -----------------------------------------------------------------


def alert_text(alert: Alert) -> str:
    """The notification/fallback text: severity, title, partitions and reason on one line."""
    where = f" ({partitions_label(alert.partitions).lower()} {format_partitions(alert.partitions)})"
    return escape(f"[{alert.severity.upper()}] {alert.title}{where if alert.partitions else ''}: ") + code(
        alert.reason.replace("\n", " ")
    )


def alert_blocks(alert: Alert) -> list[dict[str, Any]]:
    """Header (emoji + title), fields (Severity, Partition(s), details), reason, remedy, run link."""
    fields = [
        _mrkdwn(f"*Severity:*\n{alert.severity.upper()}", _FIELD_MAX),
        _mrkdwn(
            f"*{partitions_label(alert.partitions)}:*\n{format_partitions(alert.partitions)}", _FIELD_MAX
        ),
    ]
    for name, value in list(alert.details.items())[:_DETAIL_FIELDS_MAX]:
        fields.append(_mrkdwn(f"*{escape(str(name))}:*\n{code(str(value))}", _FIELD_MAX))

    blocks: list[dict[str, Any]] = [
        _header(f"{SEVERITY_EMOJI[alert.severity]} {alert.title}"),
        {"type": "section", "fields": fields},
        {"type": "section", "text": _mrkdwn(f"*Reason*\n{code_block(alert.reason)}", _SECTION_MAX)},
        {"type": "section", "text": _mrkdwn(f"*Remedy*\n{escape_multiline(alert.remedy)}", _SECTION_MAX)},
    ]
    blocks.extend(_run_link_blocks(alert.key, alert.run_url))
    return blocks


def recovery_text(key: str, title: str) -> str:
    """The recovery fallback text: ``RESOLVED: <title>``."""
    return escape(f"RESOLVED: {title or key}")


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
        _header(f"{RESOLVED_EMOJI} RESOLVED: {title or key}"),
        {"type": "section", "fields": fields},
        {"type": "section", "text": _mrkdwn("The event was resolved.", _SECTION_MAX)},
    ]
    blocks.extend(_run_link_blocks(key, run_url))
    return blocks


def delayed_context(entry: dict[str, Any]) -> dict[str, Any]:
    """The note a message carries when it leaves the outbox late (and maybe for the second time)."""
    note = f"Delayed: queued {escape(str(entry.get('queued_at') or '?'))}"
    if entry.get("error"):
        note += f"; not delivered then ({escape(str(entry['error']))})"
    if entry.get("uncertain"):
        note += (
            ". Slack's answer to an earlier attempt never arrived: this may repeat a message already posted"
        )
    return {"type": "context", "elements": [_mrkdwn(note, _SECTION_MAX)]}


# -- condition messages (the alert lifecycle) ----------------------------------------------------

_KIND_NOUN = {
    "cleaner": "Log Cleaner",
    "cleaner-topic": "Log Cleaner (topic-wide)",
    "offsets": "Committed offsets",
    "validation": "Cache validation",
}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def condition_title(changes: Sequence[Change]) -> str:
    """What the condition is now, in our own words and numbers only (no data-derived strings)."""
    first = changes[0]
    kind, transition, level = first.observation.kind, first.transition, first.level
    n = len(changes)
    partitions = {c.observation.partition for c in changes if c.observation.partition is not None}
    on = f"on {_plural(len(partitions), 'partition')} of __consumer_offsets" if partitions else ""
    if kind == "offsets":
        groups = _plural(n, "consumer group")
        if transition is Transition.RESOLVED:
            was_lost = any(c.previous_level == "critical" for c in changes)
            return f"{groups} committed offsets again" + ("" if was_lost else ", no longer at risk")
        if transition is Transition.DOWNGRADED:
            return f"{groups} committed again but will lose offsets soon (were lost)"
        if level == "critical":
            return f"{groups} lost committed offsets"
        return f"{groups} will lose committed offsets soon"
    if kind == "failover":
        if transition is Transition.RESOLVED:
            return f"coordinator failover would load quickly again {on}"
        return f"coordinator failover would stall consumer groups {on}"
    if kind == "validation":
        if transition is Transition.RESOLVED:
            return "cache validation passes at error level again"
        return "cache validation failed at error level"
    noun = "Log Cleaner" if kind == "cleaner" else "Log Cleaner (topic-wide)"
    where = on or "for __consumer_offsets"
    if transition is Transition.RESOLVED:
        return f"{noun} HEALTHY again {where}"
    word = "CRITICAL" if level == "critical" else "DEGRADED"
    was = {Transition.ESCALATED: " (was DEGRADED)", Transition.DOWNGRADED: " (was CRITICAL)"}
    return f"{noun} {word} {where}{was.get(transition, '')}"


def _emoji(changes: Sequence[Change]) -> str:
    return {
        "RESOLVED": RESOLVED_EMOJI,
        "ESCALATED to CRITICAL": f"{ESCALATED_EMOJI} {SEVERITY_EMOJI['critical']}",
        "DOWNGRADED to DEGRADED, not resolved": DOWNGRADED_EMOJI,
    }.get(_status_word(changes), SEVERITY_EMOJI.get(changes[0].level, ""))


def _status_word(changes: Sequence[Change]) -> str:
    """RESOLVED, CRITICAL, DEGRADED, ESCALATED to CRITICAL, DOWNGRADED to DEGRADED, not resolved: the
    one severity vocabulary of coordinator_core.findings (a warning level is DEGRADED everywhere)."""
    first = changes[0]
    if first.transition is Transition.RESOLVED:
        return "RESOLVED"
    if first.transition is Transition.DOWNGRADED:
        return f"DOWNGRADED to {DEGRADED}, not resolved"
    if first.transition is Transition.ESCALATED and first.observation.kind != "offsets":
        return "ESCALATED to CRITICAL"  # (a group at risk that lost its offsets is its own alert)
    return severity_of_level(first.level)


def _partition_link(o: Observation, links: AlertLinks | None) -> str:
    """``__consumer_offsets-N`` linked to its partition in Dagster (our own text, never data)."""
    name = f"__consumer_offsets-{o.partition}"
    if links is None or not o.asset:
        return f"*{name}*"
    return f"<{links.asset_partition(o.asset, int(o.partition or 0))}|{name}>"


def _subject_line(change: Change, now: float, links: AlertLinks | None = None) -> str:
    """One subject: who (a group as code, a partition as a link), its state, and what, as code."""
    o = change.observation
    if o.group is not None:
        where = f" ({_partition_link(o, links)})" if o.partition is not None else ""
        who = f"{code(o.group)}{where}"
    elif o.partition is not None:
        who = _partition_link(o, links)
    else:
        who = "*__consumer_offsets*"
    line = f"• {who}: {escape(o.state)}"
    if change.transition is not Transition.OPENED:
        line += f" (was {escape(change.previous_state)}"
        if change.transition is Transition.RESOLVED:
            line += f" for {duration(now - change.opened_at)}"
        line += ")"
    return line + f" — {code(o.reason)}"


def _codes(changes: Sequence[Change]) -> list[str]:
    """Every reason code present, in the order of the subjects (worst first)."""
    return list(dict.fromkeys(c for ch in changes for c in ch.observation.codes))


def report_note(links: AlertLinks | None) -> str:
    """The operator report: its link, or its name when no base URL serves it."""
    url = None if links is None else links.report()
    if url:
        return f"<{url}|Operator report>"
    path = "report.html" if links is None else links.report_path
    return f"Operator report: {code(path)} in the reports dir"


def _remedies(changes: Sequence[Change]) -> str:
    if changes[0].transition is Transition.RESOLVED:
        return "No action is needed: the latest evidence shows this healthy."
    seen = dict.fromkeys(c.observation.remedy for c in changes if c.observation.remedy)
    return "\n".join(f"• {escape(r)}" for r in seen) or "See the operator report."


def condition_text(changes: Sequence[Change], links: AlertLinks | None = None) -> str:
    """The fallback/notification text: status, title, partitions worst first, every reason code
    present, groups (data as code spans), and where the operator report is."""
    ordered = sorted(changes, key=lambda c: severity_order(c.observation))
    partitions = list(
        dict.fromkeys(c.observation.partition for c in ordered if c.observation.partition is not None)
    )
    groups = [c.observation.group for c in ordered if c.observation.group is not None]
    text = f"[{_status_word(ordered)}] {condition_title(ordered)}"
    if partitions:
        text += f" ({partitions_label(partitions).lower()} {format_partitions(partitions)})"
    if groups:
        text += f": {and_more(groups, _GROUPS_IN_TEXT, code)}"
    elif ordered[0].transition is not Transition.RESOLVED:
        text += f": {code(ordered[0].observation.reason)}"
    codes = _codes(ordered)
    if codes and ordered[0].transition is not Transition.RESOLVED:
        text += f" · reasons {', '.join(code(c) for c in codes)}"
    note = report_note(links) if links is not None else ""
    return _clip(text, 3000 - len(note) - 3) + (f" · {note}" if note else "")


def condition_blocks(changes: Sequence[Change], links: AlertLinks, now: float) -> list[dict[str, Any]]:
    """Header, fields (status, partitions worst first, groups, as of), what, remedy, links."""
    ordered = sorted(changes, key=lambda c: severity_order(c.observation))
    first = ordered[0]
    partitions = list(
        dict.fromkeys(c.observation.partition for c in ordered if c.observation.partition is not None)
    )
    groups = [c.observation.group for c in ordered if c.observation.group is not None]
    fields = [
        _mrkdwn(f"*Status:*\n{_status_word(ordered)}", _FIELD_MAX),
        _mrkdwn(
            f"*{partitions_label(partitions)} (worst first):*\n{format_partitions(partitions)}", _FIELD_MAX
        ),
    ]
    if groups:
        fields.append(
            _mrkdwn(f"*Groups ({len(groups)}):*\n{and_more(groups, _GROUPS_IN_TEXT, code)}", _FIELD_MAX)
        )
    codes = _codes(ordered)
    if codes:
        fields.append(_mrkdwn(f"*Reason codes:*\n{', '.join(code(c) for c in codes)}", _FIELD_MAX))
    as_of = next((c.observation.as_of for c in ordered if c.observation.as_of), None)
    if as_of:
        fields.append(_mrkdwn(f"*As of:*\n{escape(as_of)}", _FIELD_MAX))
    lines = [_subject_line(c, now, links) for c in ordered[:_SUBJECT_LINES_MAX]]
    if len(ordered) > _SUBJECT_LINES_MAX:
        lines.append(f"… and {len(ordered) - _SUBJECT_LINES_MAX} more (see the operator report)")
    blocks: list[dict[str, Any]] = [
        _header(f"{_emoji(ordered)} {_status_word(ordered)}: {condition_title(ordered)}"),
        {"type": "section", "fields": fields},
        {"type": "section", "text": _mrkdwn("*What*\n" + "\n".join(lines), _SECTION_MAX)},
        {"type": "section", "text": _mrkdwn("*Remedy*\n" + _remedies(ordered), _SECTION_MAX)},
    ]
    buttons = []
    asset = first.observation.asset
    if asset:
        for p in partitions[:_PARTITION_BUTTONS]:
            buttons.append(
                _button(f"Partition {p} in Dagster", links.asset_partition(asset, p), f"partition_{p}")
            )
    run_id = first.observation.run_id
    if run_id:
        buttons.append(_button("Dagster run", links.run(run_id), "open_dagster_run"))
    report = links.report()
    if report:
        buttons.append(_button("Operator report", report, "open_report"))
    if buttons:
        blocks.append({"type": "actions", "elements": buttons[:5]})
    keys = and_more([c.observation.key for c in ordered], 5, code)
    context = f"alert {escape(first.transition.value)} · keys {keys} · {report_note(links)}"
    blocks.append({"type": "context", "elements": [_mrkdwn(context, _SECTION_MAX)]})
    settings = next((c.observation.settings for c in ordered if c.observation.settings), None)
    if settings:
        blocks.append({"type": "context", "elements": [_mrkdwn(escape(settings), _SECTION_MAX)]})
    return blocks


def _header(text: str) -> dict[str, Any]:
    return {
        "type": "header",
        "text": {"type": "plain_text", "text": _clip(escape(text), _HEADER_MAX), "emoji": True},
    }


def _mrkdwn(text: str, limit: int) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": _clip(text, limit)}


def _run_link_blocks(key: str, run_url: str | None) -> list[dict[str, Any]]:
    context = f"alert key {code(key)} · {report_note(None)}"
    if not run_url:
        return [{"type": "context", "elements": [_mrkdwn(context, _SECTION_MAX)]}]
    safe_url = quote(run_url, safe=":/?&=#%@+,;~")
    return [
        {"type": "actions", "elements": [_button("Open Dagster run", safe_url, "open_dagster_run")]},
        {"type": "context", "elements": [_mrkdwn(f"<{safe_url}|Dagster run> · {context}", _SECTION_MAX)]},
    ]
