"""The sections of the operator report, one per asset: cleaner audit, coordinator failover forecast,
expiration plan, reload and validation. Each renders its JSON report, the worst thing first, and says
plainly when its asset did not run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from offsetops.checks.charts import expiration_timeline_chart, partition_bytes, partition_bytes_chart
from offsetops.checks.report_html import (
    MAX_ROWS,
    badge,
    bytes_cell,
    card,
    decode_errors_table,
    esc,
    iso,
    more_rows,
    sample,
)
from offsetops.checks.report_verdicts import (
    NOT_RUN,
    audit_verdict,
    failover_load_ms,
    failover_verdict,
    plan_verdict,
    reload_verdict,
    sorted_partitions,
    validation_verdict,
)
from offsetops.coordinator_core.cleaner.model import HEALTHY, format_bytes
from offsetops.coordinator_core.failover import format_load_time
from offsetops.coordinator_core.findings import remedy_html, sorted_reasons
from offsetops.coordinator_core.share_group import SHARE_OFFSETS_NOTE
from offsetops.coordinator_core.timefmt import format_duration


def audit_section(audit: Mapping[str, Any] | None) -> str:
    if not audit:
        return (
            '<section id="audit"><h2>Cleaner audit '
            + badge(NOT_RUN)
            + "</h2><p>No audit in this run.</p></section>"
        )
    s = audit.get("summary", {})
    parts = sorted_partitions(audit)
    cards = _audit_cards(s)
    topic_reasons = "".join(
        f"<li>{_reason_html(r)}</li>" for r in audit.get("reasons", []) if r.get("severity") != HEALTHY
    )
    chart = partition_bytes_chart(parts)

    head = (
        "<tr><th>partition</th><th>verdict</th><th>dirty ratio</th><th>size</th><th>cleanable</th>"
        "<th>pinned</th><th>reclaimable</th>"
        "<th>open txns</th><th>offsets</th><th>findings and remedy</th></tr>"
    )
    unhealthy = [p for p in parts if p["verdict"] != HEALTHY]
    healthy = [p for p in parts if p["verdict"] == HEALTHY]
    worst = parts[0] if parts else None
    worst_line = (
        f'<p id="audit-worst">Worst partition: <strong>{int(worst["partition"])}</strong> '
        f"({esc(worst['verdict'])}: {_worst_code(worst)}; "
        f"{esc(format_bytes(partition_bytes(worst)['pinned']))} pinned, "
        f"{esc(format_bytes(partition_bytes(worst)['cleanable']))} cleanable)</p>"
        if worst and worst["verdict"] != HEALTHY
        else ""
    )
    return (
        f'<section id="audit"><h2>Cleaner audit {badge(audit_verdict(audit), "audit-verdict")}</h2>'
        f'<p class="muted">Log dir <code>{esc(audit.get("log_dir"))}</code>, '
        f"audited as of {iso(audit.get('audited_at_ms'))}.</p>"
        f"{worst_line}<div class=cards>{cards}</div>"
        + (f"<h3>Topic findings</h3><ul>{topic_reasons}</ul>" if topic_reasons else "")
        + "<h3>Bytes per partition: clean, cleanable, pinned</h3>"
        + f'<div class="chart">{chart}</div>'
        f'<h3>Partitions needing attention ({len(unhealthy)})</h3><table id="audit-partitions">{head}'
        + "".join(_audit_row(p) for p in unhealthy)
        + "</table>"
        + (
            f"<details><summary>{len(healthy)} healthy partitions</summary>"
            f'<table id="audit-healthy-partitions">{head}'
            + "".join(_audit_row(p) for p in healthy)
            + "</table></details>"
            if healthy
            else ""
        )
        + "</section>"
    )


def _audit_cards(s: Mapping[str, Any]) -> str:
    """The audit summary's figures as cards."""
    return "".join(
        [
            card("critical partitions", s.get("critical", 0), "audit-critical"),
            card("degraded partitions", s.get("degraded", 0), "audit-degraded"),
            card("healthy partitions", s.get("healthy", 0), "audit-healthy"),
            card("max dirty ratio", f"{float(s.get('max_dirty_ratio', 0)):.2f}", "audit-max-dirty"),
            card(
                "size", format_bytes(s.get("size_bytes", 0)), "audit-size", f"{s.get('size_bytes', 0)} bytes"
            ),
            card(
                "reclaimable",
                format_bytes(s.get("reclaimable_bytes", 0)),
                "audit-reclaimable",
                f"{s.get('reclaimable_bytes', 0)} bytes",
            ),
            card("open transactions", s.get("open_transactions", 0), "audit-open-txns"),
        ]
    )


def _reason_html(r: Mapping[str, Any]) -> str:
    """One finding: its severity, code, message and remedy."""
    return (
        f"{badge(r['severity'])} <code>{esc(r['code'])}</code> {esc(r['message'])}"
        f'<div class="remedy">Remedy: {remedy_html(r["remedy"])}</div>'
    )


def _audit_row(p: Mapping[str, Any]) -> str:
    """One audited partition's table row: verdict, bytes, open transactions, offsets, findings."""
    reasons = "".join(
        f"<div>{_reason_html(r)}</div>"
        for r in sorted_reasons(p.get("reasons", []))
        if r.get("severity") != HEALTHY
    )
    txns = p.get("open_transactions") or []
    txn_text = "".join(
        f"<div><code>producer {esc(t.get('producer_id'))}</code> "
        f"since offset {esc(t.get('first_offset'))}</div>"
        for t in txns[:3]
        if isinstance(t, Mapping)
    )
    return (
        f'<tr data-partition="{int(p["partition"])}" data-verdict="{esc(p["verdict"])}">'
        f'<td class="num">{int(p["partition"])}</td><td>{badge(p["verdict"])}</td>'
        f'<td class="num">{float(p.get("dirty_ratio") or 0):.3f}</td>'
        f"{bytes_cell(p.get('size_bytes'))}{bytes_cell(partition_bytes(p)['cleanable'])}"
        f"{bytes_cell(partition_bytes(p)['pinned'])}{bytes_cell(p.get('reclaimable_bytes'))}"
        f'<td class="num">{len(txns)}{txn_text}</td>'
        f'<td class="num">{esc(p.get("log_start_offset"))}..{esc(p.get("log_end_offset"))}</td>'
        f"<td>{reasons or '<span class=muted>no findings</span>'}</td></tr>"
    )


def _worst_code(p: Mapping[str, Any]) -> str:
    first = next(iter(sorted_reasons(r for r in p.get("reasons", []) if r.get("severity") != HEALTHY)), None)
    return f"<code>{esc(first['code'])}</code>" if first else "no findings"


def failover_section(audit: Mapping[str, Any] | None) -> str:
    """Per offsets partition, what a new coordinator replays after a leader change and for how long;
    the partitions over the threshold first, the rest folded away."""
    fo = (audit or {}).get("failover")
    verdict = failover_verdict(audit)
    if verdict == NOT_RUN or not isinstance(fo, Mapping):
        return (
            '<section id="failover"><h2>Coordinator failover forecast '
            + badge(NOT_RUN)
            + "</h2><p>No forecast in this run (it rides on the cleaner audit).</p></section>"
        )
    parts = list(fo.get("partitions") or [])
    slow = [p for p in parts if p.get("slow")]
    rest = [p for p in parts if not p.get("slow")]
    threshold = int(fo.get("threshold_ms") or 0)
    cal = fo.get("calibration") or {}
    worst = parts[0] if parts else None
    worst_ms = 0 if worst is None else failover_load_ms(worst)

    cards = "".join(
        [
            card("partitions over the threshold", len(slow), "failover-slow"),
            card("worst estimated load", format_load_time(worst_ms), "failover-worst", f"{worst_ms} ms"),
            card("threshold", format_load_time(threshold), "failover-threshold", f"{threshold} ms"),
            card(
                "replay rate",
                f"{float(cal.get('bytes_per_second') or 0) / 2**20:.1f} MiB/s",
                "failover-rate",
                cal.get("source"),
            ),
        ]
    )

    def row(p: Mapping[str, Any]) -> str:
        observed = p.get("observed_load_ms")
        return (
            f'<tr data-partition="{int(p["partition"])}"><td class="num">{int(p["partition"])}</td>'
            f"<td>{badge('DEGRADED' if p.get('slow') else HEALTHY)}</td>"
            f"{bytes_cell(p.get('bytes'))}"
            f'<td class="num">{esc(p.get("batches"))}</td>'
            f'<td class="num">{esc(p.get("data_records", p.get("records")))}</td>'
            f'<td class="num">{esc(p.get("live_keys"))}</td>'
            f'<td class="num">{esc(format_load_time(int(p["estimated_load_ms"])))}</td>'
            f'<td class="num">{esc("-" if observed is None else format_load_time(int(observed)))}</td></tr>'
        )

    head = (
        "<tr><th>partition</th><th>forecast</th><th>size</th><th>batches</th><th>data records</th>"
        "<th>live keys</th><th>estimated load</th><th>last observed load</th></tr>"
    )
    lead = (
        f'<p id="failover-worst-line">After a leader change, the groups of <strong>__consumer_offsets-'
        f"{int(worst['partition'])}</strong> would get COORDINATOR_LOAD_IN_PROGRESS for about "
        f"<strong>{esc(format_load_time(worst_ms))}</strong> while the new coordinator replays "
        f"{esc(format_bytes(int(worst['bytes'])))}. Keep the partition small (a working Log Cleaner, "
        "offsets.retention.minutes) and move its leadership in quiet hours.</p>"
        if slow and worst is not None
        else f"<p>No partition would take longer than {esc(format_load_time(threshold))} to load.</p>"
    )
    return (
        f'<section id="failover"><h2>Coordinator failover forecast {badge(verdict, "failover-verdict")}</h2>'
        f'<p class="muted">{esc(_rate_note(cal))}</p>{lead}<div class=cards>{cards}</div>'
        + (
            f'<table id="failover-slow-partitions">{head}'
            + "".join(row(p) for p in slow[:MAX_ROWS])
            + "</table>"
            + more_rows(len(slow), min(len(slow), MAX_ROWS), "partitions")
            if slow
            else ""
        )
        + (
            f"<details><summary>{len(rest)} partitions under the threshold</summary>"
            f'<table id="failover-partitions">{head}'
            + "".join(row(p) for p in rest[:MAX_ROWS])
            + "</table></details>"
            if rest
            else ""
        )
        + "</section>"
    )


def _rate_note(cal: Mapping[str, Any]) -> str:
    """Where the replay rate comes from, and how to calibrate it where this page is read (the CLI and
    the Dagster audit both take broker logs)."""
    rate = f"{float(cal.get('bytes_per_second') or 0) / 2**20:.1f} MiB/s"
    if cal.get("source") == "broker_log":
        return f"{cal.get('note') or rate}."
    return (
        f"Replay rate {rate}, assumed: no broker load time was given. Calibrate it with the brokers' "
        "server.log (CleanerAuditConfig.broker_logs in Dagster, --broker-log on the command line)."
    )


def _groups_at_risk(forecast: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The forecast per group (its offsets partition, how many offsets, the first to expire), the soonest
    expiry first."""
    at_risk: dict[str, dict[str, Any]] = {}
    for f in forecast:
        entry = at_risk.setdefault(
            f["group_id"],
            {"group": f["group_id"], "partition": f.get("offsets_partition"), "offsets": 0, "first": f},
        )
        entry["offsets"] += 1
        if f["expires_at"] < entry["first"]["expires_at"]:
            entry["first"] = f
    return sorted(at_risk.values(), key=lambda e: (e["first"]["expires_at"], e["group"]))


def _risk_row(e: Mapping[str, Any]) -> str:
    return (
        f'<tr><td><code>{esc(e["group"])}</code></td><td class="num">{esc(e["partition"])}</td>'
        f'<td class="num">{e["offsets"]}</td><td>{iso(e["first"]["expires_at"])}</td>'
        f'<td class="num">{esc(format_duration(e["first"]["expires_in_ms"]))}</td>'
        f"<td>{esc(e['first']['reason'])}</td></tr>"
    )


def _tombstone_row(t: Mapping[str, Any]) -> str:
    """A planned tombstone: an offset commit's topic-partition and age, or a group tombstone."""
    head = (
        f"<tr><td><code>{esc(t['group_id'])}</code></td>"
        f'<td class="num">{esc(t.get("offsets_partition"))}</td>'
        f"<td>{esc(t.get('kind'))}</td>"
    )
    if t.get("kind") != "offset_commit":
        return head + f"<td>-</td><td>-</td><td>{esc(t.get('reason'))}</td></tr>"
    return (
        head + f"<td><code>{esc(t.get('topic'))}-{esc(t.get('partition'))}</code></td>"
        f'<td class="num">{esc(format_duration(t["age_ms"]) if t.get("age_ms") is not None else "-")}</td>'
        f"<td>{esc(t.get('reason'))}</td></tr>"
    )


def plan_section(plan: Mapping[str, Any] | None) -> str:
    if not plan:
        return (
            '<section id="expiration"><h2>Expiration plan '
            + badge(NOT_RUN)
            + "</h2><p>No plan in this run.</p></section>"
        )
    s = plan.get("summary", {})
    planned = plan.get("planned") or [{}]
    now_ms = planned[0].get("now_ms")
    horizon_ms = int(planned[0].get("forecast_horizon_ms") or 24 * 3_600_000)
    retention_ms = planned[0].get("retention_ms")
    tombstones = plan.get("tombstones", [])
    offset_tombs = [t for t in tombstones if t.get("kind") == "offset_commit"]
    forecast = plan.get("forecast", [])
    lost_groups = sorted({t["group_id"] for t in offset_tombs})
    cards = "".join(
        [
            card("offset tombstones", s.get("offset_tombstones", 0), "plan-offset-tombstones"),
            card("groups losing offsets now", len(lost_groups), "plan-groups-losing"),
            card("dead groups", s.get("dead_groups", 0), "plan-dead-groups"),
            card("offsets expiring in window", s.get("forecast_offsets", 0), "plan-forecast-offsets"),
            card("groups at risk", s.get("forecast_groups", 0), "plan-forecast-groups"),
        ]
    )
    chart = (
        expiration_timeline_chart(
            [int(f["expires_at"]) for f in forecast],
            now_ms=int(now_ms),
            horizon_ms=horizon_ms,
            expired_now=len(offset_tombs),
        )
        if now_ms is not None
        else ""
    )
    risk_rows = _groups_at_risk(forecast)
    risk_html = "".join(_risk_row(e) for e in risk_rows[:MAX_ROWS])
    tomb_html = "".join(_tombstone_row(t) for t in tombstones[:MAX_ROWS])
    lost = (
        f'<p id="plan-lost">{len(lost_groups)} group(s) lost committed offsets (past retention; the next '
        f"cleanup deletes them): "
        + ", ".join(f"<code>{esc(g)}</code>" for g in lost_groups[:20])
        + (f" and {len(lost_groups) - 20} more" if len(lost_groups) > 20 else "")
        + "</p>"
        if lost_groups
        else ""
    )
    return (
        f'<section id="expiration"><h2>Expiration plan {badge(plan_verdict(plan), "plan-verdict")}</h2>'
        f'<p class="muted">As of {iso(now_ms)}; offsets.retention.minutes '
        f"{esc(None if retention_ms is None else int(retention_ms) // 60000)}; forecast window "
        f"{esc(format_duration(horizon_ms))}. A dry run: nothing was written to Kafka.</p>"
        f"{lost}<div class=cards>{cards}</div>"
        f'<h3>Offsets expiring over the coming window</h3><div class="chart">{chart}</div>'
        f"<h3>Groups at risk ({len(risk_rows)})</h3>"
        + (
            '<table id="plan-at-risk"><tr><th>group</th><th>offsets partition</th><th>offsets</th>'
            f"<th>first expiry</th><th>in</th><th>rule</th></tr>{risk_html}</table>"
            + more_rows(len(risk_rows), min(len(risk_rows), MAX_ROWS), "groups")
            if risk_rows
            else "<p>No offset expires within the window.</p>"
        )
        + f"<h3>Planned tombstones ({len(tombstones)})</h3>"
        + (
            '<table id="plan-tombstones"><tr><th>group</th><th>offsets partition</th><th>kind</th>'
            f"<th>topic-partition</th><th>age</th><th>reason</th></tr>{tomb_html}</table>"
            + more_rows(len(tombstones), min(len(tombstones), MAX_ROWS), "tombstones")
            if tombstones
            else "<p>Nothing to delete now.</p>"
        )
        + "</section>"
    )


def reload_section(reload: Mapping[str, Any] | None, validation: Mapping[str, Any] | None) -> str:
    if not reload:
        return (
            '<section id="reload"><h2>Reload '
            + badge(NOT_RUN)
            + "</h2><p>No reload in this run.</p></section>"
        )
    counts = reload.get("counts", {})
    cards = "".join(
        [
            card("groups", counts.get("groups", 0), "reload-groups"),
            card("committed offsets", counts.get("offsets", 0), "reload-offsets"),
            card("pending offsets", counts.get("pending_offsets", 0), "reload-pending"),
            card("members", counts.get("members", 0), "reload-members"),
            card("segments", reload.get("segments", 0), "reload-segments"),
            card("records incl. control", reload.get("records", 0), "reload-records"),
            card(
                "bytes",
                format_bytes(reload.get("bytes", 0)),
                "reload-bytes",
                f"{reload.get('bytes', 0)} bytes",
            ),
            card("decode errors", counts.get("decode_errors", 0), "reload-decode-errors"),
        ]
    )
    states = ", ".join(f"{esc(k)} {int(v)}" for k, v in sorted((reload.get("group_states") or {}).items()))
    group_types = reload.get("group_types") or {}
    types = ", ".join(f"{esc(k)} {int(v)}" for k, v in sorted(group_types.items()))
    kinds = ", ".join(f"{esc(k)} {int(v)}" for k, v in sorted((reload.get("error_kinds") or {}).items()))
    sample = (validation or {}).get("decode_errors_sample") or []
    sample_table = decode_errors_table(sample, "decode-errors")
    return (
        f'<section id="reload"><h2>Reload {badge(reload_verdict(reload), "reload-verdict")}</h2>'
        f'<p class="muted">Source {esc(reload.get("source"))}; '
        f"{len(reload.get('partitions', []))} partitions in "
        f"{esc(reload.get('elapsed_s'))} s.</p><div class=cards>{cards}</div>"
        f"<p>Group states: {states or '-'}</p>"
        + (f'<p id="reload-group-types">Group types: {types}</p>' if types else "")
        + (
            f'<p id="reload-share-note">{int(group_types["share"])} share group(s): '
            f"{esc(SHARE_OFFSETS_NOTE)}.</p>"
            if group_types.get("share")
            else ""
        )
        + (f"<p>Decode errors by kind: {kinds}</p>" if kinds else "")
        + (f"<h3>Decode errors (first rows)</h3>{sample_table}" if sample_table else "")
        + "</section>"
    )


def validation_section(
    validation: Mapping[str, Any] | None, docs_href: str | None, summary_href: str | None
) -> str:
    if not validation:
        return (
            '<section id="validation"><h2>Validation '
            + badge(NOT_RUN)
            + "</h2><p>No validation in this run.</p></section>"
        )
    tally = validation.get("expectations", {})
    err, warn = tally.get("error", {}), tally.get("warning", {})
    cards = "".join(
        [
            card("errors failed", err.get("failed", 0), "validation-error-failed"),
            card("warnings failed", warn.get("failed", 0), "validation-warning-failed"),
            card("passed", err.get("passed", 0) + warn.get("passed", 0), "validation-passed"),
        ]
    )
    failed = validation.get("failed", [])
    rows = "".join(
        f'<tr data-check="{esc(o["check_id"])}"><td><code>{esc(o["check_id"])}</code></td>'
        f"<td>{esc(o['severity'])}</td>"
        f'<td class="num">{esc("-" if o.get("unexpected_count") is None else o["unexpected_count"])}</td>'
        f"<td>{esc(o.get('description'))}</td>"
        f"<td><code>{esc(sample(o))}</code></td></tr>"
        for o in failed
    )
    links = []
    if docs_href:
        links.append(f'<a id="data-docs-link" href="{esc(docs_href)}">Great Expectations Data Docs</a>')
    if summary_href:
        links.append(f'<a id="validation-summary-link" href="{esc(summary_href)}">validation summary</a>')
    return (
        f'<section id="validation"><h2>Validation '
        f"{badge(validation_verdict(validation), 'validation-verdict')}</h2>"
        f"<p>{' · '.join(links)}</p><div class=cards>{cards}</div>"
        + (
            '<table id="validation-failed"><tr><th>check</th><th>severity</th><th>unexpected</th>'
            f"<th>expectation</th><th>sample</th></tr>{rows}</table>"
            if rows
            else "<p>Every expectation passed.</p>"
        )
        + "</section>"
    )
