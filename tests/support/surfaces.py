"""The consistency matrix's readers: what each surface of one run says, read back into one shape.

Every surface renders the same run: the core's findings in the one worst-first order, and the settings
the run model resolved once. A reader here takes what one surface produced (a CLI command's stdout,
report.html, a Prometheus exposition, the Dagster run's evaluations and metadata, the Slack messages the
loopback server received, the Spark jobs' tables) and returns a :class:`Story` holding only what that
surface shows; :func:`disagreements` compares it with the truth, field by field.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from offsetops.coordinator_core.findings import CRITICAL, DEGRADED, HEALTHY, RANK, SEVERITIES, worst_first
from prometheus_client.parser import text_string_to_metric_families

AT_RISK = "offsetops_expiration_offsets_at_risk"
DUE = "offsetops_expiration_tombstones_due"
STATUS = "offsetops_cleaner_partition_status"
SETTINGS = "offsetops_settings_info"
_FROM_PROMETHEUS = {0: HEALTHY, 1: DEGRADED, 2: CRITICAL}
_FROM_CHECK = {(True, "WARN"): HEALTHY, (False, "WARN"): DEGRADED, (False, "ERROR"): CRITICAL}


@dataclass(frozen=True)
class Story:
    """What one surface says about one run; ``None`` where the surface does not say it."""

    verdicts: Mapping[int, str] | None = None
    """Every partition's verdict."""
    unhealthy: Mapping[int, str] | None = None
    """The partitions the surface names as failing, each with the level it gives."""
    worst_first: tuple[int, ...] | None = None
    """The failing partitions, in the surface's order."""
    cut: tuple[tuple[int, ...], int] | None = None
    """A list cut for space: the partitions it names first, and how many it says it left out."""
    worst: int | None = None
    """The one partition the surface shows as "the latest" (it must be the worst)."""
    cleaner_verdict: str | None = None
    topic_verdict: str | None = None
    """The topic's verdict: the cleaner's and the expiration plan's, the worse of the two."""
    at_risk: Mapping[int, int] | None = None
    """Offsets expiring within the forecast window, per offsets partition (partitions with none left out)."""
    at_risk_total: int | None = None
    tombstones_due: int | None = None
    groups_at_risk: tuple[str, ...] | None = None
    """The groups whose offsets expire within the window, in the surface's order."""
    group_risks: tuple[tuple[str, str], ...] | None = None
    """Each group that lost committed offsets (CRITICAL) or loses some within the window (DEGRADED), worst
    first: the lost ones, then the soonest expiry, then the partition and the group id."""
    groups_named: frozenset[str] | None = None
    """The groups at risk or lost that a surface names in no particular order (a message each, say)."""
    group_count: int | None = None
    retention: tuple[str, str] | None = None
    """``offsets.retention.minutes`` as the surface shows it: the value and the source it names."""


def truth(audit: Mapping[str, Any], plan: Mapping[str, Any], retention: tuple[str, str]) -> Story:
    """The run's story, computed here from the core's audit and plan documents (not read from a surface)."""
    verdicts = {int(d["partition"]): str(d["verdict"]) for d in audit["partitions"]}
    order = tuple(int(d["partition"]) for d in worst_first(audit["partitions"]) if d["verdict"] != HEALTHY)
    at_risk = dict(Counter(int(f["offsets_partition"]) for f in plan["forecast"]))
    first: dict[str, tuple[int, str]] = {}
    for f in plan["forecast"]:
        key = (int(f["expires_at"]), str(f["group_id"]))
        first[f["group_id"]] = min(first.get(f["group_id"], key), key)
    groups = tuple(g for g, _ in sorted(first.items(), key=lambda kv: kv[1]))
    risks = _group_risks(plan, first)
    cleaner = str(audit["verdict"])
    plan_verdict = CRITICAL if _lost(plan) else DEGRADED if plan["forecast"] else HEALTHY
    return Story(
        verdicts=verdicts,
        unhealthy={p: v for p, v in verdicts.items() if v != HEALTHY},
        worst_first=order,
        cut=(order, 0),
        worst=order[0] if order else None,
        cleaner_verdict=cleaner,
        topic_verdict=max(cleaner, plan_verdict, key=RANK.__getitem__),
        at_risk=at_risk,
        at_risk_total=sum(at_risk.values()),
        tombstones_due=len(plan["tombstones"]),
        groups_at_risk=groups,
        group_risks=risks,
        groups_named=frozenset(g for g, _ in risks),
        group_count=len(groups),
        retention=retention,
    )


def _group_risks(
    plan: Mapping[str, Any], first: Mapping[str, tuple[int, str]]
) -> tuple[tuple[str, str], ...]:
    """Groups lost (offset tombstones due, or the group deleted) or at risk, in the one worst-first order."""
    partition: dict[str, int] = {}
    lost = set()
    for t in plan["tombstones"]:
        if t.get("kind") == "offset_commit":
            lost.add(t["group_id"])
            partition[t["group_id"]] = int(t["offsets_partition"])
    for d in plan.get("dead_groups") or []:
        lost.add(d["group_id"])
        partition[d["group_id"]] = int(d["offsets_partition"])
    for f in plan["forecast"]:
        partition.setdefault(f["group_id"], int(f["offsets_partition"]))
    order = sorted(
        partition,
        key=lambda g: (g not in lost, -1 if g in lost else first[g][0], partition[g], g),
    )
    return tuple((g, CRITICAL if g in lost else DEGRADED) for g in order)


def _lost(plan: Mapping[str, Any]) -> bool:
    return any(t.get("kind") == "offset_commit" for t in plan["tombstones"]) or bool(plan.get("dead_groups"))


def disagreements(want: Story, shown: Story) -> list[str]:
    """Every field the surface shows that differs from the truth (a cut list: its head and its count)."""
    out = []
    for f in fields(Story):
        got, expected = getattr(shown, f.name), getattr(want, f.name)
        if got is None:
            continue
        if f.name == "cut":
            named, more = got
            order = want.worst_first or ()
            if not named or tuple(named) != order[: len(named)] or len(named) + more != len(order):
                out.append(f"cut: names {named} and {more} more; the order is {order}")
        elif isinstance(got, Mapping) and isinstance(expected, Mapping) and got != expected:
            keys = sorted(set(got) | set(expected), key=str)
            diff = {k: (got.get(k), expected.get(k)) for k in keys if got.get(k) != expected.get(k)}
            out.append(f"{f.name}: differs at {{key: (shown, the run's)}} {diff}")
        elif got != expected:
            out.append(f"{f.name}: shows {got!r}, the run says {expected!r}")
    if all(getattr(shown, f.name) is None for f in fields(Story)):
        out.append("the surface showed nothing to compare")
    return out


# -- the CLI ---------------------------------------------------------------------------------------


def cli_audit_json(doc: Mapping[str, Any]) -> Story:
    """``audit --json``: every verdict and its ``worst_first`` list."""
    verdicts = {int(p["partition"]): str(p["verdict"]) for p in doc["partitions"]}
    return Story(verdicts=verdicts, worst_first=tuple(doc["worst_first"]), cleaner_verdict=doc["verdict"])


def cli_audit_json_findings(doc: Mapping[str, Any]) -> Story:
    """``audit --json``'s findings list: the partitions in the order their first finding comes."""
    named = [(int(f["partition"]), str(f["severity"])) for f in doc["findings"] if f["partition"] is not None]
    order = tuple(dict.fromkeys(p for p, _ in named))
    worst = {p: max((s for q, s in named if q == p), key=RANK.__getitem__) for p in order}
    return Story(unhealthy=worst, worst_first=order)


def cli_audit_text(text: str) -> Story:
    """``audit``'s text: the findings (``[LEVEL] partition N:``) and the table of partitions."""
    findings = re.findall(r"^  \[(CRITICAL|DEGRADED)\] partition (\d+):", text, re.M)
    levels: dict[int, str] = {}
    for level, p in findings:
        levels.setdefault(int(p), level)
    table = re.findall(r"^(\d+)\s+(HEALTHY|DEGRADED|CRITICAL)\s", text, re.M)
    return Story(unhealthy=levels, worst_first=tuple(levels), verdicts={int(p): v for p, v in table})


def cli_audit_text_table(text: str) -> Story:
    """``audit``'s table of partitions: the failing ones in its row order."""
    table = re.findall(r"^(\d+)\s+(HEALTHY|DEGRADED|CRITICAL)\s", text, re.M)
    return Story(worst_first=tuple(int(p) for p, v in table if v != HEALTHY))


def _settings_retention(settings: Mapping[str, Any]) -> tuple[str, str]:
    item = settings["retention_minutes"]
    return (_number(item["value"]), str(item["source"]))


def _number(value: Any) -> str:
    """A retention as every surface prints it: ``60``, never ``60.0``."""
    number = float(value)
    return str(int(number)) if number.is_integer() else str(number)


def cli_expire_json(doc: Mapping[str, Any]) -> Story:
    """``expire --json``: the forecast per partition, the tombstones due, the retention and its source."""
    at_risk = dict(Counter(int(f["offsets_partition"]) for f in doc["forecast"]))
    return Story(
        at_risk=at_risk,
        tombstones_due=len(doc["tombstones"]),
        retention=_settings_retention(doc["settings"]),
    )


def cli_expire_text(text: str) -> Story:
    """``expire``'s text: its forecast line, the groups it lists at risk, the settings line."""
    forecast = re.search(r"forecast \(next [^)]*\): (\d+) offsets in (\d+) groups", text)
    listed = re.findall(r"^  \[\d+\] '([^']+)' (DEGRADED|CRITICAL) ", text, re.M)
    return Story(
        at_risk_total=int(forecast.group(1)) if forecast else -1,
        group_count=int(forecast.group(2)) if forecast else -1,
        group_risks=tuple((g, level) for g, level in listed),
        retention=settings_line_retention(text),
    )


def settings_line_retention(text: str) -> tuple[str, str]:
    """The retention in a settings line (``retention_minutes 60 (SOURCE); coordinator ...``); a source may
    hold parentheses of its own. Every distinct line must say the same."""
    found = set(re.findall(r"retention_minutes (\S+) \((.*?)\)(?:; |\s*$)", text, re.M))
    return found.pop() if len(found) == 1 else ("?", f"{len(found)} different settings lines")


def cli_groups_json(doc: Mapping[str, Any]) -> Story:
    """``groups --json``: the groups that lost offsets or lose some within the window, in its order."""
    risks = tuple((g["group_id"], g["expiry"]["severity"]) for g in doc["groups"] if g.get("expiry"))
    return Story(group_risks=risks, retention=_settings_retention(doc["settings"]))


def cli_settings_json(doc: Mapping[str, Any]) -> Story:
    """Any JSON document that carries the run's settings (``describe --json``)."""
    return Story(retention=_settings_retention(doc["settings"]))


# -- the operator report ---------------------------------------------------------------------------


def report_table(page: str) -> Story:
    """report.html's table of the audit's partitions, in its row order."""
    table = page.split('<table id="audit-partitions">', 1)[1].split("</table>", 1)[0]
    return Story(worst_first=tuple(int(p) for p in re.findall(r'<tr data-partition="(\d+)"', table)))


def report_banner(page: str) -> Story:
    """report.html's banner: the failing partitions it names first with their level, and "and N more"."""
    banner = page.split('id="overall"', 1)[1].split("</div>\n</div>", 1)[0]
    named = re.findall(r"(\d+) \((CRITICAL|DEGRADED)\)", banner)
    more = re.search(r"and (\d+) more", banner)
    order = tuple(int(p) for p, _ in named)
    return Story(unhealthy={int(p): v for p, v in named}, cut=(order, int(more.group(1)) if more else 0))


def report_expiration(page: str) -> Story:
    """report.html's expiration facts and its settings footer (values HTML-escaped as the page has them)."""
    line = re.search(r"(\d+) groups \((\d+) offsets\) expire within the window", page)
    footer = page[page.index('<footer id="settings">') :]
    row = re.search(r"<td>retention_minutes</td><td>([^<]*)</td><td>([^<]*)</td>", footer)
    return Story(
        group_count=int(line.group(1)) if line else -1,
        at_risk_total=int(line.group(2)) if line else -1,
        retention=(html.unescape(row.group(1)), html.unescape(row.group(2))) if row else ("?", "not shown"),
    )


# -- Prometheus: the textfile and the exporter ------------------------------------------------------


def prometheus(text: str, *, cleaner: bool = True) -> Story:
    """An exposition: each partition's cleaner status, offsets at risk, tombstones due, the settings."""
    status: dict[int, str] = {}
    at_risk: dict[int, int] = {}
    due = 0
    retention = ("?", "not shown")
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == STATUS:
                status[int(s.labels["partition"])] = _FROM_PROMETHEUS[int(s.value)]
            elif s.name == AT_RISK and s.value:
                at_risk[int(s.labels["offsets_partition"])] = int(s.value)
            elif s.name == DUE:
                due += int(s.value)
            elif s.name == SETTINGS and s.labels.get("name") == "retention_minutes":
                retention = (_number(s.labels["value"]), s.labels["source"])
    return Story(
        verdicts=status if cleaner else None, at_risk=at_risk, tombstones_due=due, retention=retention
    )


# -- Slack -----------------------------------------------------------------------------------------


def slack_cleaner(messages: Sequence[Mapping[str, Any]]) -> Story:
    """The Log Cleaner alerts: the partitions each names (``(partitions 3, 7)``) at its level, in order."""
    levels: dict[int, str] = {}
    for m in messages:
        text = m.get("text", "")
        if "Log Cleaner" not in text or "topic-wide" in text:
            continue
        found = re.search(r"\(partitions? ([\d, ]+)\)", text)
        level = next(
            (s for s in SEVERITIES if text.startswith(f"[{s}]")), f"not a severity word: {text[:30]}"
        )
        for p in found.group(1).split(", ") if found else ["-1"]:
            levels.setdefault(int(p), level)
    return Story(unhealthy=levels, worst_first=tuple(levels))


def slack_offsets(messages: Sequence[Mapping[str, Any]], candidates: Iterable[str]) -> Story:
    """The offsets alerts: which groups they name, and the settings line of their context block."""
    blocks = [m for m in messages if "offsets:" in json.dumps(m.get("blocks", []))]
    posted = " ".join(json.dumps(m.get("blocks", [])) for m in blocks)
    contexts = [
        e["text"]
        for m in blocks
        for b in m["blocks"]
        if b["type"] == "context"
        for e in b["elements"]
        if "settings:" in e["text"]
    ]
    retention = settings_line_retention("\n".join(contexts)) if contexts else ("?", "no settings line")
    named = frozenset(g for g in candidates if json.dumps(g)[1:-1] in posted)
    return Story(groups_named=named, retention=retention)


def slack_levels(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """The first word of every message: one severity vocabulary (``[CRITICAL]``, ``[DEGRADED]``, ...)."""
    return {m.get("text", "").split("]", 1)[0].lstrip("[") for m in messages}


# -- Dagster ---------------------------------------------------------------------------------------


def dagster_partition_checks(evaluations: Iterable[Any], check_name: str) -> Story:
    """A per-partition check's evaluations: each partition's pass/severity read back as a verdict."""
    verdicts = {
        int(e.partition): _FROM_CHECK.get((e.passed, e.severity.value), f"{e.passed}/{e.severity.value}")
        for e in evaluations
        if e.check_name == check_name and e.partition is not None
    }
    return Story(verdicts=verdicts)


def dagster_topic_check(evaluation: Any) -> Story:
    """``topic_cleaner_verdict``: its verdict, its ``worst_first`` metadata and the partitions it lists."""
    lines = re.findall(r"^- partition (\d+) (CRITICAL|DEGRADED)", evaluation.description, re.M)
    more = re.search(r"^- and (\d+) more", evaluation.description, re.M)
    named = tuple(int(p) for p, _ in lines)
    level = _FROM_CHECK.get((evaluation.passed, evaluation.severity.value))
    listed = str(evaluation.metadata["worst_first"].value)
    return Story(
        cleaner_verdict=str(evaluation.metadata["verdict"].value) if level else "severity not mapped",
        worst_first=tuple(int(p) for p in listed.split(", ")) if listed != "none" else (),
        unhealthy={int(p): v for p, v in lines},
        cut=(named, int(more.group(1)) if more else 0),
    )


def dagster_failing_table(evaluation: Any) -> Story:
    """``cleaner_verdict``'s table of failing partitions: its rows' order and verdicts."""
    rows = [r.data for r in evaluation.metadata["failing_partitions"].records]
    return Story(
        worst_first=tuple(int(r["partition"]) for r in rows),
        unhealthy={int(r["partition"]): str(r["verdict"]) for r in rows},
        cleaner_verdict=str(evaluation.metadata["verdict"].value),
    )


def dagster_plan_partitions(materializations: Iterable[Any]) -> Story:
    """expiration_plan's per-partition metadata (each partition's latest materialization: the worst one is
    restated last): offsets at risk, tombstones, and the settings."""
    latest = {int(m.partition): m for m in materializations}
    at_risk: dict[int, int] = {}
    due = 0
    retention = set()
    for m in latest.values():
        meta = m.metadata
        if meta["forecast_offsets"].value:
            at_risk[int(m.partition)] = int(meta["forecast_offsets"].value)
        due += int(meta["offset_tombstones"].value) + int(meta["group_tombstones"].value)
        retention.add(_settings_retention(meta["settings"].value))
    return Story(
        at_risk=at_risk,
        tombstones_due=due,
        retention=retention.pop() if len(retention) == 1 else ("?", f"{len(retention)} different"),
    )


def dagster_summary(metadata: Mapping[str, Any], tags: Mapping[str, str]) -> Story:
    """offsets_topic_summary's metadata (the groups at risk, the verdicts) and the run's verdict tag."""
    return Story(
        groups_at_risk=tuple(r.data["group_id"] for r in metadata["groups_at_risk"].records),
        cleaner_verdict=str(metadata["cleaner_verdict"].value),
        topic_verdict=tags.get("offsetops/verdict", "no tag"),
        at_risk_total=int(metadata["forecast_offsets"].value),
        group_count=int(metadata["forecast_groups"].value),
        retention=_settings_retention(metadata["settings"].value),
    )


def dagster_metrics(metadata: Mapping[str, Any]) -> Story:
    """offsets_metrics's metadata: the offsets at risk it wrote, and the settings."""
    return Story(
        at_risk_total=int(metadata[f"sum({AT_RISK})"].value),
        retention=_settings_retention(metadata["settings"].value),
    )


# -- the Spark jobs' tables (what the Airflow DAG's tasks write and read) ----------------------------


def job_audit_rows(rows: Iterable[Mapping[str, Any]]) -> Story:
    """The audit job's ``cleaner_audit`` table: one row per partition with its verdict."""
    return Story(verdicts={int(r["offsets_partition"]): str(r["verdict"]) for r in rows})


def job_expire_rows(forecast: Iterable[Mapping[str, Any]], tombstones: Iterable[Mapping[str, Any]]) -> Story:
    """The expire job's ``expiration_forecast`` and ``tombstones`` tables."""
    return Story(
        at_risk=dict(Counter(int(r["offsets_partition"]) for r in forecast)),
        tombstones_due=sum(1 for _ in tombstones),
    )
