"""The alert lifecycle as a state machine: hypothesis drives random sequences of evidence through
``advance`` and checks the invariants on-call relies on against a reference model."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from offsetops.checks.alerting.blocks import condition_text
from offsetops.checks.alerting.lifecycle import advance, message_groups, transition_for
from offsetops.checks.alerting.model import Observation, Transition
from offsetops.checks.alerting.state import ConditionEntry

LEVELS = ("ok", "warning", "critical")
SUBJECTS = (
    ("cleaner", 7, None),
    ("cleaner", 47, None),
    ("offsets", 3, "payments"),
    ("offsets", 3, "billing"),
)


def _observation(subject: tuple[str, int, str | None], level: str) -> Observation:
    kind, partition, group = subject
    return Observation(
        key=f"{kind}:{partition}:{group}",
        kind=kind,
        level=level,  # type: ignore[arg-type]
        state={"ok": "HEALTHY", "warning": "DEGRADED", "critical": "CRITICAL"}[level],
        reason=f"{level} evidence",
        remedy="do the thing",
        partition=partition,
        group=group,
    )


def test_transition_table() -> None:
    assert [transition_for(a, b) for a in LEVELS for b in LEVELS] == [
        None,
        Transition.OPENED,
        Transition.OPENED,
        Transition.RESOLVED,
        None,
        Transition.ESCALATED,
        Transition.RESOLVED,
        Transition.DOWNGRADED,
        None,
    ]


class AlertLifecycleMachine(RuleBasedStateMachine):
    """Evaluations observe any subset of subjects at any level; unobserved subjects have no evidence."""

    def __init__(self) -> None:
        super().__init__()
        self.conditions: dict[str, ConditionEntry] = {}
        self.model: dict[str, str] = {}  # the level each key was last observed at ("ok" if never)
        self.opened: dict[str, int] = {}
        self.resolved: dict[str, int] = {}
        self.now = 1_700_000_000.0

    @rule(
        evidence=st.dictionaries(
            st.sampled_from(range(len(SUBJECTS))), st.sampled_from(LEVELS), max_size=len(SUBJECTS)
        )
    )
    def evaluate(self, evidence: dict[int, str]) -> None:
        self.now += 60
        observations = [_observation(SUBJECTS[i], level) for i, level in evidence.items()]
        changes = advance(self.conditions, observations, self.now)
        changed = {c.observation.key: c for c in changes}
        for obs in observations:
            before = self.model.get(obs.key, "ok")
            change = changed.get(obs.key)
            # A message exactly when the level moved; the kind of message is the table's.
            assert (change is None) == (before == obs.level)
            if change is not None:
                assert change.transition is transition_for(before, obs.level)
                assert change.previous_level == before
                if change.transition is Transition.RESOLVED:
                    assert obs.level == "ok" and before != "ok"  # only on evidence of health
                self.opened[obs.key] = self.opened.get(obs.key, 0) + (change.transition is Transition.OPENED)
                self.resolved[obs.key] = self.resolved.get(obs.key, 0) + (
                    change.transition is Transition.RESOLVED
                )
            self.model[obs.key] = obs.level
        # Nothing changes for a subject without evidence.
        assert set(changed) <= {o.key for o in observations}
        # One message per (level, transition, kind); each names its changes only, with one status.
        groups = message_groups(changes)
        assert sum(len(g) for g in groups) == len(changes)
        for group in groups:
            statuses = {condition_text([c]).split("]")[0] for c in group}
            assert len(statuses) == 1
            assert condition_text(group).startswith(statuses.pop())
            assert condition_text(group).startswith("[RESOLVED]") == (
                group[0].transition is Transition.RESOLVED
            )

    @invariant()
    def state_matches_the_model(self) -> None:
        firing = {k: v for k, v in self.model.items() if v != "ok"}
        assert {k: e.level for k, e in self.conditions.items()} == firing

    @invariant()
    def every_episode_opens_once_and_resolves_at_most_once(self) -> None:
        for key, opened in self.opened.items():
            assert opened - self.resolved.get(key, 0) == (1 if key in self.conditions else 0)


AlertLifecycleMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
test_alert_lifecycle_machine = AlertLifecycleMachine.TestCase
