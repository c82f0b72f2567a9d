"""Domain objects of the alerting library: what an alert is, and what became of sending one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

Severity = Literal["critical", "warning", "info"]

SEVERITIES: tuple[Severity, ...] = ("critical", "warning", "info")

# Higher is more urgent; a key that escalates (warning -> critical) is re-sent inside the window.
SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "critical": 2}


@dataclass(frozen=True)
class Alert:
    """One condition an on-call engineer should hear about.

    ``key`` identifies the condition across sensor ticks (``"audit:critical:partition-7"``); it is the
    deduplication and recovery key, so it must not contain anything that changes from tick to tick.
    ``partitions`` are ``__consumer_offsets`` partitions. ``details`` holds a few small facts shown as
    extra fields (keep it JSON-serialisable).
    """

    key: str
    severity: Severity
    title: str
    partitions: tuple[int, ...]
    reason: str
    remedy: str
    run_url: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not self.key or not self.key.strip():
            raise ValueError("Alert.key must be a non-empty string")
        if self.severity not in SEVERITY_RANK:
            raise ValueError(f"Alert.severity must be one of {SEVERITIES}, got {self.severity!r}")
        if not isinstance(self.partitions, tuple):
            object.__setattr__(self, "partitions", tuple(_as_partitions(self.partitions)))
        if not isinstance(self.details, dict):
            object.__setattr__(self, "details", dict(self.details))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the outbox and the dedupe state store this)."""
        return {
            "key": self.key,
            "severity": self.severity,
            "title": self.title,
            "partitions": list(self.partitions),
            "reason": self.reason,
            "remedy": self.remedy,
            "run_url": self.run_url,
            "details": {str(k): _jsonable(v) for k, v in self.details.items()},
        }


def _as_partitions(value: Iterable[int] | int) -> Iterable[int]:
    if isinstance(value, int):
        return (value,)
    return (int(p) for p in value)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def failure_alert(
    job_name: str, run_id: str, partitions: Iterable[int], reason: str, steps: Iterable[str], run_url: str
) -> Alert:
    """The page for one failed run (a Dagster run or an Airflow DAG run) over ``partitions``."""
    steps = sorted(set(steps))
    return Alert(
        key=f"run-failure:{job_name}:{run_id}",
        severity="critical",
        title=f"Dagster run of {job_name} failed",
        partitions=tuple(partitions),
        reason=reason[:1500] or "the run failed",
        remedy="Open the run, read the failed step's error, fix the cause, then re-execute from failure.",
        run_url=run_url,
        details={"job": job_name, "run_id": run_id, **({"failed_steps": ", ".join(steps)} if steps else {})},
    )


class SendStatus(StrEnum):
    """What happened to one notification."""

    SENT = "sent"  # Slack accepted it
    DEDUPLICATED = "deduplicated"  # the key was already notified inside the window; nothing sent
    OUTBOXED = "outboxed"  # Slack was unusable; the notification was appended to the local outbox
    SKIPPED = "skipped"  # nothing to do (a recovery for a key that never fired)
    FAILED = "failed"  # neither Slack nor the outbox took it (the log line carries the alert)


@dataclass(frozen=True)
class SendResult:
    """The outcome of ``SlackNotifier.send`` / ``resolve``, with the reason in plain words."""

    status: SendStatus
    key: str
    reason: str
    kind: Literal["alert", "recovery"] = "alert"
    ts: str | None = None
    error: str | None = None

    @property
    def sent(self) -> bool:
        return self.status is SendStatus.SENT

    @property
    def deduplicated(self) -> bool:
        return self.status is SendStatus.DEDUPLICATED

    @property
    def outboxed(self) -> bool:
        return self.status is SendStatus.OUTBOXED


# -- conditions: what the alert sensor observes, and how each observation moves its alert ----------

Level = Literal["ok", "warning", "critical"]

#: ``ok`` is positive evidence of health; a subject the evaluation has no evidence about is not observed.
LEVEL_RANK: dict[str, int] = {"ok": 0, "warning": 1, "critical": 2}


class Transition(StrEnum):
    """How one condition moved between two evaluations; each is its own message, never a recovery."""

    OPENED = "opened"  # healthy -> warning or critical
    ESCALATED = "escalated"  # warning -> critical
    DOWNGRADED = "downgraded"  # critical -> warning: still firing, so neither RESOLVED nor silence
    RESOLVED = "resolved"  # warning or critical -> healthy, on evidence of health


@dataclass(frozen=True)
class Observation:
    """What one evaluation's evidence says about one subject (a partition, a group, the validation).

    ``key`` names the subject across evaluations (``"offsets:3:payments"``); ``kind`` groups subjects
    into one message (``cleaner``, ``cleaner-topic``, ``offsets``, ``validation``). ``state`` is the
    evidence's own word (``CRITICAL``, ``lost``, ``at risk``); ``weight`` orders subjects of one level,
    bigger is worse (offsets lost, dirty ratio).
    """

    key: str
    kind: str
    level: Level
    state: str
    reason: str
    remedy: str = ""
    partition: int | None = None
    group: str | None = None
    weight: float = 0.0
    asset: str | None = None
    run_id: str | None = None
    as_of: str | None = None
    #: the settings the evidence was computed with and their sources (one line, for the message)
    settings: str | None = None
    #: the stable reason codes behind it (``hanging_transaction``, ``offsets_expiring``), every one named
    #: in the message's notification text
    codes: tuple[str, ...] = ()
    #: the subject's place in the one worst-first order (coordinator_core.findings) within its level;
    #: ahead of ``weight``
    order: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.level not in LEVEL_RANK:
            raise ValueError(f"Observation.level must be one of {tuple(LEVEL_RANK)}, got {self.level!r}")


@dataclass(frozen=True)
class Change:
    """One condition's transition in one evaluation: the message material for it."""

    transition: Transition
    observation: Observation
    previous_level: Level
    previous_state: str
    opened_at: float  # epoch seconds when the episode (first non-healthy evaluation) began

    @property
    def level(self) -> Level:
        return self.observation.level


def severity_order(observation: Observation) -> tuple[Any, ...]:
    """Sort key that puts the worst subject first: level, then the findings order, then weight, then
    partition and group."""
    return (
        -LEVEL_RANK[observation.level],
        observation.order,
        -observation.weight,
        observation.partition if observation.partition is not None else -1,
        observation.group or "",
    )
