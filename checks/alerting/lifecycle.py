"""The alert lifecycle: one state machine per condition, moved only by evidence.

Each condition (a partition's cleaner verdict, a group's committed offsets, the cache validation)
is ``ok``, ``warning`` or ``critical``. An evaluation observes some conditions; each observed one
moves as follows, and every move but "unchanged" is one message:

=============  ==========  ===========  ===========
from \\ to      ok          warning      critical
=============  ==========  ===========  ===========
ok             --          OPENED       OPENED
warning        RESOLVED    --           ESCALATED
critical       RESOLVED    DOWNGRADED   --
=============  ==========  ===========  ===========

* A condition the evaluation has no evidence about is not observed and does not move: missing data
  is never health, so nothing resolves because a report went quiet.
* ``ok`` is positive evidence (the partition audited HEALTHY; the group present with offsets nobody
  will expire), so RESOLVED is only ever sent for a condition that truly cleared.
* ``critical -> warning`` is DOWNGRADED: still firing, so neither a recovery nor silence; on-call
  learns the urgency dropped and what still needs doing.
* The same evidence twice moves nothing, so it sends nothing.

Messages group the changes of one evaluation by (kind, transition, level): seven groups losing their
offsets together are one message naming the seven, not seven pages.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby

from offsetops.checks.alerting.model import LEVEL_RANK, Change, Observation, Transition, severity_order
from offsetops.checks.alerting.state import ConditionEntry

_HEALTHY_WORD = {
    "cleaner": "HEALTHY",
    "cleaner-topic": "HEALTHY",
    "offsets": "ok",
    "validation": "passed",
    "failover": "loads quickly",
}


def transition_for(old: str, new: str) -> Transition | None:
    """The move from level ``old`` to level ``new`` (None when the level did not change)."""
    if old == new:
        return None
    if old == "ok":
        return Transition.OPENED
    if new == "ok":
        return Transition.RESOLVED
    return Transition.ESCALATED if LEVEL_RANK[new] > LEVEL_RANK[old] else Transition.DOWNGRADED


def advance(
    conditions: dict[str, ConditionEntry], observations: Iterable[Observation], now: float
) -> list[Change]:
    """Move ``conditions`` (in place) by ``observations``; the changes, worst first.

    Two observations of one key in one evaluation: the worse one counts.
    """
    by_key: dict[str, Observation] = {}
    for obs in observations:
        held = by_key.get(obs.key)
        if held is None or LEVEL_RANK[obs.level] > LEVEL_RANK[held.level]:
            by_key[obs.key] = obs
    changes = []
    for key, obs in sorted(by_key.items()):
        entry = conditions.get(key)
        old = entry.level if entry is not None else "ok"
        transition = transition_for(old, obs.level)
        if entry is not None:
            entry.last_seen = now
        if transition is None:
            if entry is not None:
                entry.state, entry.reason = obs.state, obs.reason
            continue
        opened_at = entry.opened_at if entry is not None else now
        changes.append(
            Change(
                transition=transition,
                observation=obs,
                previous_level=old,  # type: ignore[arg-type]
                previous_state=entry.state if entry is not None else _HEALTHY_WORD.get(obs.kind, "ok"),
                opened_at=opened_at,
            )
        )
        if obs.level == "ok":
            del conditions[key]
        else:
            conditions[key] = ConditionEntry(
                kind=obs.kind,
                level=obs.level,
                state=obs.state,
                partition=obs.partition,
                group=obs.group,
                reason=obs.reason,
                opened_at=opened_at,
                level_since=now,
                last_seen=now,
            )
    changes.sort(key=lambda c: severity_order(c.observation))
    return changes


_TRANSITION_ORDER = {
    Transition.ESCALATED: 0,
    Transition.OPENED: 1,
    Transition.DOWNGRADED: 2,
    Transition.RESOLVED: 3,
}


def message_groups(changes: Iterable[Change]) -> list[list[Change]]:
    """The changes grouped into messages, pages first: (level, transition, kind), worst subject first."""

    def group_key(c: Change) -> tuple[int, int, str]:
        transition = c.transition
        if c.observation.kind == "offsets" and transition is Transition.ESCALATED:
            # At risk, then lost: one "N groups lost committed offsets" with the newly lost ones.
            transition = Transition.OPENED
        return (-LEVEL_RANK[c.level], _TRANSITION_ORDER[transition], c.observation.kind)

    ordered = sorted(changes, key=lambda c: (group_key(c), severity_order(c.observation)))
    return [list(g) for _, g in groupby(ordered, key=group_key)]
