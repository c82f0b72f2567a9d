"""The one findings model: one severity vocabulary, one worst-first order, one way to cut a list.

Every surface (CLI text and JSON, the operator report, Dagster metadata and checks, Slack, the
Prometheus families) says HEALTHY, DEGRADED or CRITICAL and maps them to its own levels here, once:

=========  ================  ===========  ==========
severity   Dagster check     Slack level  Prometheus
=========  ================  ===========  ==========
HEALTHY    passes            ok           0
DEGRADED   fails, WARN       warning      1
CRITICAL   fails, ERROR      critical     2
=========  ================  ===========  ==========

**Worst first** is decided once, here, and every list of partitions or findings uses it:

1. the verdict (CRITICAL, then DEGRADED, then HEALTHY);
2. the impact of the worst finding at that verdict: one that *loses data* (committed offsets expired
   or a group deleted) or *blocks cleaning* (a transaction pinning the last stable offset, an
   uncleanable mark, a stalled or dead cleaner, corrupt data) before one that only *delays* it
   (cleaning due, a dirty active segment, tombstones waiting, a tight dedupe buffer);
3. for groups, the soonest expiry first; for partitions, the largest first (what a coordinator
   replays after a failover, and what a stuck cleaner lets grow);
4. then the partition number (and broker id), then the group id, so the order is total.

A list cut for space always says how many it left out (:func:`and_more`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from offsetops.coordinator_core import escape

__all__ = [
    "CRITICAL",
    "DEGRADED",
    "HEALTHY",
    "IMPACT",
    "RANK",
    "SEVERITIES",
    "Finding",
    "and_more",
    "dagster_severity",
    "finding_key",
    "impact",
    "partition_findings",
    "partition_key",
    "prometheus_value",
    "rank",
    "reason_key",
    "remedy_html",
    "remedy_markdown",
    "remedy_parts",
    "remedy_slack",
    "remedy_terminal",
    "severity_of_level",
    "slack_level",
    "sorted_findings",
    "sorted_reasons",
    "worst",
    "worst_first",
]

HEALTHY, DEGRADED, CRITICAL = "HEALTHY", "DEGRADED", "CRITICAL"
SEVERITIES = (HEALTHY, DEGRADED, CRITICAL)
RANK = {HEALTHY: 0, DEGRADED: 1, CRITICAL: 2}

_DAGSTER = {DEGRADED: "WARN", CRITICAL: "ERROR", HEALTHY: "WARN"}
_SLACK = {HEALTHY: "ok", DEGRADED: "warning", CRITICAL: "critical"}

#: How much a finding's code costs, for the order within a verdict: 3 loses data, 2 blocks cleaning,
#: 1 delays it (every code the cleaner audit and the expiration plan emit; an unknown code counts 1).
LOSES_DATA, BLOCKS_CLEANING, DELAYS_CLEANING = 3, 2, 1
IMPACT: dict[str, int] = {
    "offsets_expired": LOSES_DATA,
    "group_deleted": LOSES_DATA,
    "offsets_expiring": LOSES_DATA,
    "marked_uncleanable": BLOCKS_CLEANING,
    "hanging_transaction": BLOCKS_CLEANING,
    "no_progress": BLOCKS_CLEANING,
    "corrupt_data": BLOCKS_CLEANING,
    "cleanup_policy": BLOCKS_CLEANING,
    "cleaner_disabled": BLOCKS_CLEANING,
    "dead_cleaner_thread": BLOCKS_CLEANING,
    "uncleanable_partitions": BLOCKS_CLEANING,
    "cleaner_thread_died": BLOCKS_CLEANING,
    "partition_audit_failed": BLOCKS_CLEANING,
    "cleaning_due": DELAYS_CLEANING,
    "dirty_active_segment": DELAYS_CLEANING,
    "checkpoint_beyond_log_end": DELAYS_CLEANING,
    "expired_tombstones": DELAYS_CLEANING,
    "dedupe_buffer_too_small": DELAYS_CLEANING,
    "dedupe_buffer_tight": DELAYS_CLEANING,
    "fast_growth": DELAYS_CLEANING,
    "cleaner_not_running": DELAYS_CLEANING,
    "slow_cleaning": DELAYS_CLEANING,
}


def rank(severity: str) -> int:
    """0 HEALTHY, 1 DEGRADED, 2 CRITICAL; anything else (``NOT RUN``) -1."""
    return RANK.get(severity, -1)


def worst(severities: Iterable[str]) -> str:
    """The worst of ``severities`` (HEALTHY when there are none)."""
    return max((s for s in severities if s in RANK), key=RANK.__getitem__, default=HEALTHY)


def dagster_severity(severity: str) -> str:
    """The ``AssetCheckSeverity`` member name a failing check of this severity takes."""
    return _DAGSTER[severity]


def slack_level(severity: str) -> str:
    """The alert level (``ok``, ``warning``, ``critical``) of this severity."""
    return _SLACK[severity]


def severity_of_level(level: str) -> str:
    """The severity word of an alert level (``warning`` is DEGRADED, ``ok`` HEALTHY)."""
    return {v: k for k, v in _SLACK.items()}[level]


def prometheus_value(severity: str) -> int:
    """The gauge value (0, 1, 2) of this severity; anything unknown counts as CRITICAL."""
    return RANK.get(severity, 2)


def impact(codes: Iterable[str]) -> int:
    """The largest impact among ``codes`` (0 for none)."""
    return max((IMPACT.get(c, DELAYS_CLEANING) for c in codes), default=0)


def _get(row: Any, name: str, default: Any = None) -> Any:
    return row.get(name, default) if isinstance(row, Mapping) else getattr(row, name, default)


def _reasons(row: Any) -> list[tuple[str, str]]:
    out = []
    for r in _get(row, "reasons", None) or []:
        out.append((str(_get(r, "severity", "")), str(_get(r, "code", ""))))
    return out


def partition_key(row: Any) -> tuple[int, int, int, int, int]:
    """The worst-first sort key of one audited partition: a ``PartitionAudit`` or its JSON."""
    verdict = str(_get(row, "verdict", HEALTHY))
    codes = [code for sev, code in _reasons(row) if sev == verdict]
    return (
        -rank(verdict),
        -impact(codes),
        -int(_get(row, "size_bytes", 0) or 0),
        int(_get(row, "partition", 0)),
        int(_get(row, "broker_id", None) or 0),
    )


T = TypeVar("T")


def worst_first(rows: Iterable[T]) -> list[T]:
    """Audited partitions (``PartitionAudit`` objects or their JSON) in the one worst-first order."""
    return sorted(rows, key=partition_key)


@dataclass(frozen=True)
class Finding:
    """One thing to act on: how bad, where (partition, groups), a stable code, the facts and the remedy.

    ``remedy`` may hold commands with placeholders (``<broker>``, ``<leader>``); renderers show the
    commands :func:`remedy_parts` finds as code so the placeholders survive Markdown, HTML and Slack.
    """

    severity: str
    code: str
    text: str
    remedy: str
    partition: int | None = None
    groups: tuple[str, ...] = ()
    broker_id: int | None = None
    size_bytes: int = 0
    #: when the data is lost (offsets expire), for the soonest-first order of group findings
    expires_at_ms: int | None = None
    details: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.severity not in RANK:
            raise ValueError(f"Finding.severity must be one of {SEVERITIES}, got {self.severity!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "code": self.code,
            "partition": self.partition,
            "groups": list(self.groups),
            "text": self.text,
            "remedy": self.remedy,
            **({} if self.broker_id is None else {"broker_id": self.broker_id}),
            **({} if self.expires_at_ms is None else {"expires_at_ms": self.expires_at_ms}),
        }


def finding_key(f: Finding) -> tuple[Any, ...]:
    """The worst-first sort key of a finding (see the module docstring)."""
    return (
        -rank(f.severity),
        -IMPACT.get(f.code, DELAYS_CLEANING),
        f.expires_at_ms if f.expires_at_ms is not None else -1,
        -f.size_bytes,
        f.partition if f.partition is not None else -1,
        f.broker_id or 0,
        f.groups,
        f.code,
    )


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=finding_key)


def reason_key(reason: Any) -> tuple[int, int]:
    """The order of one subject's findings (a ``Reason`` or its JSON): severity, then impact."""
    code = str(_get(reason, "code", ""))
    return (-rank(str(_get(reason, "severity", ""))), -IMPACT.get(code, DELAYS_CLEANING))


def sorted_reasons(reasons: Iterable[T]) -> list[T]:
    """One subject's findings worst first (stable: the rule table's order breaks ties)."""
    return sorted(reasons, key=reason_key)


def partition_findings(rows: Iterable[Any], topic_reasons: Iterable[Any] = ()) -> list[Finding]:
    """Every finding of an audit in the one order: topic-wide findings at their severity ahead of the
    partitions of the same verdict, then partitions worst first, each partition's findings worst first."""
    out: list[tuple[tuple[Any, ...], Finding]] = []
    for i, r in enumerate(sorted_reasons(topic_reasons)):
        sev = str(_get(r, "severity"))
        if sev == HEALTHY:
            continue
        f = Finding(sev, str(_get(r, "code")), str(_get(r, "message")), str(_get(r, "remedy")))
        out.append(((-rank(sev), -1, i), f))
    for n, row in enumerate(worst_first(rows)):
        key = partition_key(row)
        for i, r in enumerate(sorted_reasons(_get(row, "reasons", None) or [])):
            sev = str(_get(r, "severity"))
            if sev == HEALTHY:
                continue
            f = Finding(
                sev,
                str(_get(r, "code")),
                str(_get(r, "message")),
                str(_get(r, "remedy")),
                partition=int(_get(row, "partition")),
                broker_id=_get(row, "broker_id", None),
                size_bytes=int(_get(row, "size_bytes", 0) or 0),
            )
            out.append(((key[0], n, i), f))
    return [f for _, f in sorted(out, key=lambda kv: kv[0])]


def and_more(items: Sequence[T], limit: int, render: Callable[[T], str] = str, sep: str = ", ") -> str:
    """``"a, b, c and 4 more"``: the first ``limit`` items and how many were left out, never silently."""
    shown = sep.join(render(i) for i in items[: max(limit, 0)])
    rest = len(items) - min(len(items), max(limit, 0))
    if not rest:
        return shown
    return f"{shown} and {rest} more" if shown else f"{rest} more"


# -- remedies: which parts are commands ---------------------------------------------------------

_COMMAND_START = re.compile(r"(?<![\w/.-])(kafka-[a-z-]+\.sh|kafka-consumer-groups|offsetops)(?= )")
_STOP_WORDS = frozenset({"then", "and", "or", "if", "to", "in", "lists", "checks", "for", "before"})


def _command_end(text: str, start: int, tool: str) -> int:
    """Where the command starting at ``start`` ends: its options and their values (and its subcommand
    words) up to a comma, semicolon, closing parenthesis or a plain word of the sentence."""
    pos = start + len(tool)
    prev_option = subcommand_seen = False
    while (m := re.match(r" (\S+)", text[pos:])) is not None:
        token = m.group(1)
        core = token.rstrip(",;)")
        if not core or core in _STOP_WORDS:
            break
        is_option = core.startswith("-")
        is_value = prev_option or core.startswith("<") or core.isupper() or core[0].isdigit()
        if not is_option and not is_value:
            if tool == "offsetops":
                if subcommand_seen:
                    break
                subcommand_seen = True
            elif not _SUBCOMMAND.fullmatch(core):
                break
        pos += 1 + len(core)
        if core != token:
            break
        prev_option = is_option and "=" not in core
    return pos


_SUBCOMMAND = re.compile(r"[a-z]+(?:-[a-z]+)+|abort|describe|list")


def remedy_parts(remedy: str) -> list[tuple[bool, str]]:
    """The remedy cut into ``(is_command, text)`` parts, so a renderer can show commands as code."""
    parts: list[tuple[bool, str]] = []
    pos = 0
    for m in _COMMAND_START.finditer(remedy):
        if m.start() < pos:
            continue
        end = _command_end(remedy, m.start(), m.group(1))
        if m.start() > pos:
            parts.append((False, remedy[pos : m.start()]))
        parts.append((True, remedy[m.start() : end]))
        pos = end
    if pos < len(remedy):
        parts.append((False, remedy[pos:]))
    return parts


def _render(remedy: str, text: Callable[[str], str], code: Callable[[str], str]) -> str:
    return "".join(code(part) if is_command else text(part) for is_command, part in remedy_parts(remedy))


def remedy_markdown(remedy: str) -> str:
    """The remedy for Markdown (Dagster descriptions): commands as code spans, the rest escaped."""
    return _render(remedy, escape.for_markdown, escape.markdown_code)


def remedy_html(remedy: str) -> str:
    """The remedy for HTML: commands in ``<code>``, every part escaped."""
    return _render(remedy, escape.for_html, lambda c: f"<code>{escape.for_html(c)}</code>")


def remedy_slack(remedy: str) -> str:
    """The remedy for Slack mrkdwn: commands as code spans, the rest escaped."""
    return _render(remedy, escape.for_slack, escape.slack_code)


def remedy_terminal(remedy: str) -> str:
    """The remedy for a terminal: as written (the placeholders are plain text there), escaped."""
    return escape.for_terminal(remedy)
