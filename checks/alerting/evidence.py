r"""What the alert sensor believes, and why: the assets' evidence turned into observations.

Each function reads one kind of evidence (each audited partition's latest verdict, the failover
forecast in the audit report, the expiration plans in the state dir) and returns
:class:`~offsetops.checks.alerting.model.Observation`\ s. Missing or unreadable evidence gives no observation,
never a healthy one: only what was seen healthy can resolve an alert. Nothing here needs an orchestrator:
Dagster's sensor (which adds what only its instance knows, in ``offsetops.assets.alerting``) and Airflow's
DAGs give it the same evidence.
"""

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from offsetops.checks.alerting.blocks import duration
from offsetops.checks.alerting.model import Observation
from offsetops.checks.alerting.state import ConditionEntry
from offsetops.checks.asset_names import AUDIT_ASSET, EXPIRATION_ASSET
from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.cleaner.model import format_bytes
from offsetops.coordinator_core.errors import error_total
from offsetops.coordinator_core.escape import for_log
from offsetops.coordinator_core.expiration import ExpirationPlan
from offsetops.coordinator_core.failover import format_load_time
from offsetops.coordinator_core.findings import (
    IMPACT,
    SEVERITIES,
    partition_key,
    slack_level,
    sorted_reasons,
)
from offsetops.coordinator_core.run import EXPIRATION_SETTINGS, settings_line
from offsetops.coordinator_core.untrusted import read_regular_file

log = logging.getLogger(__name__)

CLEANER_LEVEL = {s: slack_level(s) for s in SEVERITIES}
#: A lost group no plan has shown for this long is forgotten (it cannot come back as "resolved").
LOST_MEMORY_S = 7 * 24 * 3600


def metadata_rows(value: Any) -> list[dict[str, Any]]:
    """A list of dicts from JSON metadata or a ``TableMetadataValue``'s records."""
    records = getattr(value, "records", None)
    if records is not None:
        return [dict(getattr(r, "data", r)) for r in records]
    return [dict(r) for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def _partition_verdict(meta: Mapping[str, Any], partition: int) -> str | None:
    """The partition's own verdict: from a per-partition map when the metadata has one, else ``verdict``."""
    verdicts = meta.get("partition_verdicts")
    if isinstance(verdicts, Mapping):
        verdict = verdicts.get(str(partition))
        return str(verdict) if verdict is not None else None
    verdict = meta.get("verdict")
    return str(verdict) if verdict is not None else None


def cleaner_observations(latest: Mapping[int, tuple[dict[str, Any], str]]) -> list[Observation]:
    """One observation per audited partition: HEALTHY is ok, DEGRADED warning, CRITICAL critical."""
    out = []
    for partition, (meta, run_id) in sorted(latest.items()):
        verdict = _partition_verdict(meta, partition)
        level = CLEANER_LEVEL.get(verdict or "")
        if level is None:
            continue  # no verdict is no evidence, not health
        # Run-wide findings carry their partition; a partition's own findings table does not.
        mine = sorted_reasons(
            f for f in metadata_rows(meta.get("findings")) if f.get("partition", partition) == partition
        )
        worst = [f for f in mine if f.get("severity") == verdict] or mine
        reason = "; ".join(f"{f.get('code')}: {f.get('message')}" for f in worst[:3])
        ratio = meta.get("dirty_ratio", meta.get("max_dirty_ratio"))
        size = meta.get("size_bytes")
        order = partition_key(
            {
                "verdict": verdict,
                "reasons": mine,
                "size_bytes": size if isinstance(size, int) else 0,
                "partition": partition,
            }
        )[1:]
        out.append(
            Observation(
                key=f"cleaner:{partition}",
                kind="cleaner",
                level=level,  # type: ignore[arg-type]
                state=verdict or "",
                reason=reason or f"the cleaner audit verdict is {verdict}",
                remedy="; ".join(dict.fromkeys(str(f.get("remedy")) for f in worst if f.get("remedy"))),
                partition=partition,
                weight=float(ratio) if isinstance(ratio, int | float) else 0.0,
                asset=AUDIT_ASSET,
                run_id=run_id,
                as_of=_as_of(meta.get("as_of")),
                codes=tuple(
                    dict.fromkeys(str(f.get("code")) for f in mine if f.get("severity") != "HEALTHY")
                ),
                order=order,
            )
        )
    return out


def _as_of(value: Any) -> str | None:
    """The run's as-of time for the message: ISO text as recorded, or a timestamp made ISO."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(float(value), UTC).isoformat(timespec="seconds")
    return str(value) if value else None


FAILOVER_REMEDY = (
    "Until the partition is smaller, a leader change of it stalls its groups (JoinGroup, OffsetCommit, "
    "OffsetFetch get COORDINATOR_LOAD_IN_PROGRESS): get the Log Cleaner compacting it (see the cleaner "
    "audit), lower offsets.retention.minutes if idle groups pile up, and move leadership of "
    "__consumer_offsets in quiet hours."
)


def failover_observations(reports_dir: Path) -> list[Observation]:
    """Per audited partition, the coordinator failover forecast of ``cleaner_audit.json``: a replay
    longer than the threshold is a warning, a shorter one is ok. No report, no observation."""
    path = reports_dir / "cleaner_audit.json"
    try:
        doc = json.loads(read_regular_file(path, kind="report"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("cleaner audit report %s is unreadable (%s); failover forecast not evaluated", path, exc)
        return []
    forecast = doc.get("failover")
    if not isinstance(forecast, Mapping) or not isinstance(forecast.get("partitions"), list):
        return []
    threshold = forecast.get("threshold_ms")
    cal = forecast.get("calibration") or {}
    speed = f"{float(cal.get('bytes_per_second') or 0) / 2**20:.1f} MiB/s"
    rate = f"replay at {speed} " + (
        "measured from the broker's own load times" if cal.get("source") == "broker_log" else "(assumed)"
    )
    as_of = _iso_ms(doc.get("audited_at_ms"))
    out = []
    for p in forecast["partitions"]:
        try:
            partition, est = int(p["partition"]), int(p["estimated_load_ms"])
            observed, nbytes = p.get("observed_load_ms"), int(p["bytes"])
        except (KeyError, TypeError, ValueError):
            continue  # not evidence either way
        load = max(est, int(observed or 0))
        seen = f", last observed {format_load_time(int(observed))}" if observed is not None else ""
        within = f" (threshold {format_load_time(int(threshold))})" if isinstance(threshold, int) else ""
        out.append(
            Observation(
                key=f"failover:{partition}",
                kind="failover",
                level="warning" if p.get("slow") else "ok",
                state="slow to load" if p.get("slow") else "loads quickly",
                reason=f"a new coordinator replays {format_bytes(nbytes)}: about {format_load_time(load)} of "
                f"COORDINATOR_LOAD_IN_PROGRESS{seen}{within}; {rate}",
                remedy=FAILOVER_REMEDY,
                partition=partition,
                codes=("slow_coordinator_load",) if p.get("slow") else (),
                weight=float(load),
                asset=AUDIT_ASSET,
                as_of=as_of,
            )
        )
    return out


def _iso_ms(ms: Any) -> str | None:
    if not isinstance(ms, int):
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def _in_ms(ms: int) -> str:
    return duration(ms / 1000)


def partition_plan_doc(
    plan: ExpirationPlan, cache: CoordinatorCache, *, run_id: str | None
) -> dict[str, Any]:
    """One partition's share of ``plan``: what the tombstone execution replays and the alerts read.

    ``groups`` lists every group present with its committed offsets: the alert sensor tells a group
    that committed again (healthy) from one that vanished (its offsets were deleted) by it.
    """
    p = cache.partition
    return {
        "partition": p,
        "run_id": run_id,
        "now_ms": plan.now_ms,
        "retention_ms": plan.retention_ms,
        "coordinator": plan.coordinator,
        "forecast_horizon_ms": plan.forecast_horizon_ms,
        "errors": error_total(cache.stats.errors),
        "groups": {g.group_id: len(g.offsets) for g in cache.groups.values()},
        "tombstones": [t.to_journal() for t in plan.tombstones if t.offsets_partition == p],
        "dead_groups": [d.to_json() for d in plan.dead_groups if d.offsets_partition == p],
        "forecast": [f.to_json() for f in plan.forecast if f.offsets_partition == p],
    }


def load_partition_plans(*folders: Path) -> dict[int, dict[str, Any]]:
    """Each partition's latest expiration plan among ``folders`` (the ``expiration_plan`` asset's, the
    ``offsets_follow`` sensor's): the one made at the latest ``now_ms``, the one written last on a tie."""
    best: dict[int, tuple[tuple[int, int], dict[str, Any]]] = {}
    for folder in folders:
        for path in folder.glob("partition-*.json") if folder.is_dir() else ():
            try:
                doc = json.loads(read_regular_file(path, kind="report"))
                partition = int(doc["partition"])
                rank = (int(doc.get("now_ms") or 0), path.stat().st_mtime_ns)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("expiration plan %s is unreadable (%s); its partition is not evaluated",
                            for_log(str(path)), for_log(str(exc)))  # fmt: skip
                continue
            if partition not in best or rank > best[partition][0]:
                best[partition] = (rank, doc)
    return {p: doc for p, (_rank, doc) in best.items()}


def offsets_observations(
    plans: Mapping[int, Mapping[str, Any]],
    firing: Mapping[str, ConditionEntry],
    run_ids: Mapping[int, str],
) -> list[Observation]:
    """Per group: lost (offset tombstones planned, or deleted as a dead group) is critical, at risk
    (offsets expire within the forecast window) is warning, present with offsets nobody will expire
    is ok. A firing group that has vanished from its partition lost its offsets: critical, never ok.

    The plan's tombstones are offsets already past retention: the broker's own cleanup
    (``GroupMetadataManager.cleanupGroupMetadata``, every ``offsets.retention.check.interval.ms``)
    deletes them, so the group's consumers find no committed offset and fall back to
    ``auto.offset.reset``.
    """
    out = []
    for partition, doc in sorted(plans.items()):
        # a plan the offsets_follow sensor made says run_id None: no run to link to
        run_id = doc["run_id"] if "run_id" in doc else run_ids.get(partition)
        as_of = _iso_ms(doc.get("now_ms"))
        lost = _lost_groups(doc)
        at_risk = _groups_at_risk(doc, lost)
        common = {
            "kind": "offsets",
            "partition": partition,
            "asset": EXPIRATION_ASSET,
            "run_id": run_id,
            "settings": settings_line(doc.get("settings"), EXPIRATION_SETTINGS),
        }
        out += _lost_observations(partition, lost, as_of, common)
        out += _at_risk_observations(partition, at_risk, doc.get("forecast_horizon_ms"), as_of, common)
        present = doc.get("groups")
        if not isinstance(present, Mapping | list):
            continue  # a plan that does not list its groups cannot show one healthy or gone
        seen = set(lost) | set(at_risk)
        out += _firing_observations(partition, firing, seen, present, as_of, common)
    return out


def _lost_groups(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The groups of a plan that lose offsets (tombstones) or are deleted (dead groups)."""
    lost: dict[str, dict[str, Any]] = {}
    for t in doc.get("tombstones") or []:
        if t.get("kind") == "offset_commit":
            g = lost.setdefault(str(t.get("group_id")), {"offsets": 0, "rules": set(), "dead": False})
            g["offsets"] += 1
            g["rules"].add(str(t.get("reason")))
    for d in doc.get("dead_groups") or []:
        g = lost.setdefault(str(d.get("group_id")), {"offsets": 0, "rules": set(), "dead": False})
        g["dead"] = True
    return lost


def _groups_at_risk(doc: Mapping[str, Any], lost: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The groups not lost whose offsets expire within the forecast window, with their first expiry."""
    at_risk: dict[str, dict[str, Any]] = {}
    for f in doc.get("forecast") or []:
        gid = str(f.get("group_id"))
        if gid in lost:
            continue
        g = at_risk.setdefault(
            gid, {"offsets": 0, "first": f.get("expires_at"), "in": f.get("expires_in_ms")}
        )
        g["offsets"] += 1
        if isinstance(f.get("expires_at"), int) and f["expires_at"] < (g["first"] or f["expires_at"] + 1):
            g["first"], g["in"] = f["expires_at"], f.get("expires_in_ms")
    return at_risk


def _lost_observations(
    partition: int, lost: Mapping[str, dict[str, Any]], as_of: str | None, common: Mapping[str, Any]
) -> list[Observation]:
    out = []
    for gid, g in lost.items():
        what = []
        if g["offsets"]:
            rules = ", ".join(sorted(g["rules"]))
            what.append(f"{g['offsets']} committed offset(s) expired ({rules})")
        if g["dead"]:
            what.append("no committed offset remains, so the group itself is deleted")
        out.append(
            Observation(
                key=f"offsets:{partition}:{gid}",
                level="critical",
                state="lost",
                reason="; ".join(what),
                remedy=LOST_REMEDY,
                group=gid,
                codes=tuple(
                    c for c, on in (("offsets_expired", g["offsets"]), ("group_deleted", g["dead"])) if on
                ),
                order=(-IMPACT["offsets_expired"],),
                weight=g["offsets"],
                as_of=as_of,
                **common,
            )
        )
    return out


def _at_risk_observations(
    partition: int,
    at_risk: Mapping[str, dict[str, Any]],
    horizon: Any,
    as_of: str | None,
    common: Mapping[str, Any],
) -> list[Observation]:
    out = []
    for gid, g in at_risk.items():
        within = f" within {_in_ms(horizon)}" if isinstance(horizon, int) else ""
        first = f", first at {_iso_ms(g['first'])} (in {_in_ms(g['in'])})" if isinstance(g["in"], int) else ""
        out.append(
            Observation(
                key=f"offsets:{partition}:{gid}",
                level="warning",
                state="at risk",
                reason=f"{g['offsets']} committed offset(s) expire{within}{first}",
                remedy=AT_RISK_REMEDY,
                group=gid,
                codes=("offsets_expiring",),
                order=(-IMPACT["offsets_expiring"], g["first"] if isinstance(g["first"], int) else 0),
                weight=-float(g["in"] or 0),  # the sooner the offsets expire, the worse
                as_of=as_of,
                **common,
            )
        )
    return out


def _firing_observations(
    partition: int,
    firing: Mapping[str, ConditionEntry],
    seen: set[str],
    present: Mapping[str, Any] | list[Any],
    as_of: str | None,
    common: Mapping[str, Any],
) -> list[Observation]:
    """Firing groups of the partition the plan no longer shows lost or at risk: ok when the group is
    still there, lost when it is gone (news only after a warning)."""
    out = []
    for key, entry in firing.items():
        if entry.kind != "offsets" or entry.partition != partition or entry.group is None:
            continue
        if entry.group in seen:
            continue
        if entry.group in present:
            out.append(
                Observation(
                    key=key,
                    level="ok",
                    state="committed again",
                    reason="the group has committed offsets that are not due to expire",
                    group=entry.group,
                    as_of=as_of,
                    **common,
                )
            )
        elif entry.level != "critical":
            # Gone after a warning: the loss is news. Gone after the loss was reported: nothing new,
            # and not observed, so the memory of it lapses (see _forget_long_lost).
            out.append(
                Observation(
                    key=key,
                    level="critical",
                    state="lost",
                    reason="the group is gone from __consumer_offsets: its committed offsets were "
                    "deleted (expired and cleaned up, or the group was deleted)",
                    remedy=LOST_REMEDY,
                    group=entry.group,
                    codes=("group_deleted",),
                    as_of=as_of,
                    **common,
                )
            )
    return out


LOST_REMEDY = (
    "Consumers of these groups have no committed offset: on restart they follow auto.offset.reset "
    "(earliest replays, latest skips data). If a group is still in use, stop it and reset its offsets to "
    "a known position (kafka-consumer-groups --reset-offsets) before it resumes; raise "
    "offsets.retention.minutes if idle groups must survive longer."
)
AT_RISK_REMEDY = (
    "If these groups are still needed, restart their consumers (or commit) before the offsets expire; "
    "otherwise no action: cleanup deletes them (offsets.retention.minutes)."
)


def forget_long_lost(conditions: dict[str, ConditionEntry], now: float) -> None:
    """Forget lost groups no plan has shown for ``LOST_MEMORY_S`` (they are gone; no message).

    A group a plan still shows with tombstones is seen again each evaluation and stays remembered,
    so an unexecuted plan over an old snapshot never pages the same loss twice.
    """
    for key in [
        k
        for k, e in conditions.items()
        if e.kind == "offsets" and e.level == "critical" and now - e.last_seen > LOST_MEMORY_S
    ]:
        del conditions[key]
