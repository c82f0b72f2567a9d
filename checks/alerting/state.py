"""Which alerts are firing, persisted as JSON so fresh sensor processes share one memory.

Two kinds of memory live in one file: ``firing`` holds event alerts (a failed run) for deduplication,
and ``conditions`` holds each observed condition's lifecycle (its level and since when), which the
alert sensor moves through :mod:`offsetops.checks.alerting.lifecycle`.

The file is rewritten atomically (temporary file in the same directory, fsync, ``os.replace``) and every
read-modify-write happens under an advisory ``flock`` on a sibling ``.lock`` file, so two sensors
ticking at once cannot lose each other's updates.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.atomic import file_lock, write_text_atomic
from offsetops.coordinator_core.untrusted import read_regular_text

log = logging.getLogger(__name__)

STATE_VERSION = 2


@dataclass
class FiringEntry:
    """What we remember about one firing key (enough to write its recovery message)."""

    severity: str
    title: str
    partitions: list[int]
    run_url: str | None
    first_notified_at: float
    last_notified_at: float
    delivered: bool  # True when Slack accepted the last notification, False when it went to the outbox
    ts: str | None = None
    channel: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FiringEntry:
        return cls(
            severity=str(data.get("severity", "info")),
            title=str(data.get("title", "")),
            partitions=[int(p) for p in data.get("partitions", [])],
            run_url=data.get("run_url"),
            first_notified_at=float(data.get("first_notified_at", 0.0)),
            last_notified_at=float(data.get("last_notified_at", 0.0)),
            delivered=bool(data.get("delivered", False)),
            ts=data.get("ts"),
            channel=data.get("channel"),
        )


@dataclass
class ConditionEntry:
    """One condition that is not healthy: its level, the evidence's word, and when it began."""

    kind: str
    level: str  # warning | critical (healthy conditions are not kept)
    state: str
    partition: int | None
    group: str | None
    reason: str
    opened_at: float  # the episode began (first non-healthy evaluation)
    level_since: float  # the current level began
    last_seen: float  # the last evaluation that had evidence for it

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConditionEntry:
        partition = data.get("partition")
        return cls(
            kind=str(data["kind"]),
            level=str(data["level"]),
            state=str(data.get("state", "")),
            partition=int(partition) if partition is not None else None,
            group=data.get("group"),
            reason=str(data.get("reason", "")),
            opened_at=float(data.get("opened_at", 0.0)),
            level_since=float(data.get("level_since", 0.0)),
            last_seen=float(data.get("last_seen", 0.0)),
        )


@dataclass
class AlertState:
    """The firing event keys and the open conditions, as loaded from (and saved to) the state file."""

    firing: dict[str, FiringEntry] = field(default_factory=dict)
    conditions: dict[str, ConditionEntry] = field(default_factory=dict)


class AlertStateStore:
    """Load and atomically save :class:`AlertState` at ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")

    @contextlib.contextmanager
    def locked(self) -> Iterator[AlertState]:
        """Hold the lock, yield the current state, and save it back when the block succeeds."""
        with file_lock(self._lock_path):
            state = self.load()
            yield state
            self.save(state)

    def load(self) -> AlertState:
        """The saved state; an absent file is empty, and an unreadable one is logged and treated as empty."""
        try:
            raw = read_regular_text(self.path, kind="state")
        except FileNotFoundError:
            return AlertState()
        try:
            data = json.loads(raw)
            firing = {str(k): FiringEntry.from_json(v) for k, v in data.get("firing", {}).items()}
            conditions = {str(k): ConditionEntry.from_json(v) for k, v in data.get("conditions", {}).items()}
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            log.warning(
                "alert state file %s is unreadable (%s); starting with no firing alerts", self.path, exc
            )
            return AlertState()
        if data.get("version", 1) < 2:
            # Version 1 kept conditions as firing keys ("audit:...", "expiration:..."); their recovery
            # rules were wrong, so they are dropped and the next evaluation opens what is still true.
            firing = {k: v for k, v in firing.items() if k.startswith("run-failure:")}
        return AlertState(firing=firing, conditions=conditions)

    def save(self, state: AlertState) -> None:
        """Write ``state`` atomically: readers see the old file or the new one, never half of one."""
        payload = {
            "version": STATE_VERSION,
            "firing": {k: asdict(v) for k, v in sorted(state.firing.items())},
            "conditions": {k: asdict(v) for k, v in sorted(state.conditions.items())},
        }
        write_text_atomic(self.path, json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")
