"""One alert evaluation, whoever runs it (Dagster's sensor, Airflow's alert task): observations move
each condition's lifecycle, and the changes go out as messages through the notifier."""

from __future__ import annotations

from collections.abc import Callable

from offsetops.checks.alerting.blocks import AlertLinks, condition_blocks, condition_text
from offsetops.checks.alerting.evidence import forget_long_lost
from offsetops.checks.alerting.lifecycle import advance, message_groups
from offsetops.checks.alerting.model import Observation, SendResult, Transition
from offsetops.checks.alerting.notifier import OutgoingMessage, SlackNotifier
from offsetops.checks.alerting.state import ConditionEntry

#: The observations the current evidence supports, given the conditions as they stand (firing ones
#: that the evidence no longer shows may need an observation of their own).
Observe = Callable[[dict[str, ConditionEntry]], list[Observation]]


def reconcile(notifier: SlackNotifier, links: AlertLinks, observe: Observe, now: float) -> list[SendResult]:
    """Move every condition by ``observe``'s observations and deliver the messages (the outbox's first).

    The state change and its messages are made durable together (messages queued inside the state
    lock) before anything is sent.
    """
    with notifier.store.locked() as alert_state:
        observations = observe(alert_state.conditions)
        changes = advance(alert_state.conditions, observations, now)
        forget_long_lost(alert_state.conditions, now)  # after advance: what was seen now stays
        queued = notifier.queue(
            OutgoingMessage(
                "recovery" if group[0].transition is Transition.RESOLVED else "alert",
                ",".join(c.observation.key for c in group),
                condition_text(group, links),
                condition_blocks(group, links, now),
                {"changes": [{"key": c.observation.key, "transition": c.transition.value} for c in group]},
            )
            for group in message_groups(changes)
        )
    return notifier.deliver(queued)
