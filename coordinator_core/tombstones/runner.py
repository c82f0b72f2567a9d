"""Run an expiration plan through an executor: journal first, apply what is not applied yet, verify."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from offsetops.coordinator_core.atomic import file_lock
from offsetops.coordinator_core.expiration import ExpirationPlan
from offsetops.coordinator_core.kafka_client import KafkaClientError
from offsetops.coordinator_core.tombstones.journal import (
    APPLIED_STATUSES,
    Journal,
    JournalError,
    list_journals,
    prepare_document,
)


class ExecutorRefused(Exception):
    """The executor will not run with these settings; the message says why (nothing was sent)."""


class RunStopped(Exception):
    """The target became unreachable: the run stopped at once, and the journal can be resumed.

    Raised instead of paying the connect timeout again for every remaining item (a 300-item plan
    against a dead cluster would otherwise take hours).
    """

    def __init__(self, plan_id: str, cause: str, applied: int, total: int) -> None:
        super().__init__(
            f"{cause}; run stopped, {applied} of {total} item(s) applied, journal {plan_id} kept for resuming"
        )
        self.plan_id, self.cause, self.applied, self.total = plan_id, cause, applied, total


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """After execution: is the key gone (absent), tombstoned (latest record is null), or present?"""

    item_id: int
    key_hex: str
    group_id: str
    topic: str | None
    partition: int | None
    state: str  # gone | tombstoned | present | unknown
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.state in ("gone", "tombstoned")

    def to_json(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "key_hex": self.key_hex,
            "group_id": self.group_id,
            "topic": self.topic,
            "partition": self.partition,
            "state": self.state,
            "detail": self.detail,
        }


class Executor(Protocol):
    """What the runner needs from an executor."""

    name: str

    def target(self) -> dict[str, Any]:
        """The destination's identity; part of the plan id, so a plan is bound to one target."""
        ...

    def apply(self, journal: Journal, todo: list[dict[str, Any]]) -> None:
        """Write the ``todo`` items (plan order), journaling each item's outcome as it lands."""
        ...

    def verify(self, journal: Journal) -> list[VerifyResult]:
        """Re-read the target and say, per item, whether its key is gone or tombstoned."""
        ...

    def close(self) -> None: ...


def _check(executor: Executor) -> None:
    """An executor that talks to a cluster has ``check()``: reach it once before the first item."""
    check = getattr(executor, "check", None)
    if check is not None:
        check()


@dataclass
class ExecutionReport:
    """What one run did: per-item outcomes, and the verification that followed."""

    plan_id: str
    journal: str
    executor: str
    resumed: bool
    skipped_already_applied: int
    items: list[dict[str, Any]] = field(default_factory=list)
    verification: list[VerifyResult] = field(default_factory=list)

    @property
    def outcomes(self) -> dict[str, int]:
        return dict(Counter(i["status"] for i in self.items))

    @property
    def not_gone(self) -> list[VerifyResult]:
        return [v for v in self.verification if not v.ok]

    @property
    def complete(self) -> bool:
        return all(i["status"] in APPLIED_STATUSES for i in self.items)

    def to_json(self) -> dict[str, Any]:
        return {
            "plan_id": self.plan_id,
            "journal": self.journal,
            "executor": self.executor,
            "resumed": self.resumed,
            "skipped_already_applied": self.skipped_already_applied,
            "outcomes": self.outcomes,
            "complete": self.complete,
            "items": self.items,
            "verification": {
                "checked": len(self.verification),
                "not_gone": [v.to_json() for v in self.not_gone],
            },
        }


def plan_document(plan: ExpirationPlan, *, executor: Executor, source: str | None) -> dict[str, Any]:
    """The journal's plan document for ``plan`` bound to ``executor``'s target."""
    return {
        "now_ms": plan.now_ms,
        "retention_ms": plan.retention_ms,
        "coordinator": plan.coordinator,
        "executor": executor.name,
        "target": executor.target(),
        "source": source,
        "items": [t.to_journal() for t in plan.tombstones],
        "dead_groups": [d.to_json() for d in plan.dead_groups],
    }


class TargetBusy(JournalError):
    """Another process is applying a plan to the same target; nothing was done by this one."""


@contextlib.contextmanager
def target_lock(journal_dir: str | os.PathLike[str], executor: str, target: dict[str, Any]) -> Iterator[Path]:
    """Hold the one lock of ``executor``'s ``target`` in ``journal_dir`` for the block (yields its path).

    A plan is bound to one target, so this is also the plan's lock: two runs of the same plan (or of
    two plans on one target) never apply at the same time. The second one is refused at once with
    :class:`TargetBusy` instead of waiting on a run of unknown length; rerun it when the first is done,
    and it resumes the journal (and says so when nothing is left to apply).
    """
    ident = json.dumps({"executor": executor, "target": target}, sort_keys=True, separators=(",", ":"))
    path = Path(journal_dir) / f"target-{hashlib.sha256(ident.encode()).hexdigest()[:16]}.lock"
    with file_lock(path, wait=False) as held:
        if not held:
            raise TargetBusy(
                f"another offsetops run is applying a plan to this {executor} target (lock {path} is held); "
                "nothing was done: rerun once it has finished, and the journal says what is left"
            )
        yield path


def open_or_create_journal(
    journal_dir: str | os.PathLike[str],
    doc: dict[str, Any],
    *,
    force_new: bool = False,
) -> tuple[Journal, bool]:
    """Create the journal for ``doc`` (or reuse the one with the same id).

    Refuses when another, unfinished journal targets the same destination: resuming that one
    (``--resume``) is almost always what the operator wants, and two plans interleaving on one
    target is how things get applied twice.
    """
    if not force_new:
        plan_id = prepare_document(doc)["plan_id"]
        for other in list_journals(journal_dir):
            same_target = (
                other.plan.get("executor") == doc["executor"] and other.plan.get("target") == doc["target"]
            )
            if same_target and other.plan_id != plan_id and not other.is_complete():
                raise JournalError(
                    f"journal {other.plan_id} in {journal_dir} targets the same destination and is "
                    f"not finished; resume it with --resume {other.plan_id}, or pass --force-new-plan"
                )
    return Journal.create(journal_dir, doc)


def run_journal(
    journal: Journal, executor: Executor, *, resumed: bool, verify: bool = True
) -> ExecutionReport:
    """Apply every item of ``journal`` that is not applied yet, then verify the whole plan.

    The target is checked once first; when it cannot be reached (then or later) the run stops with
    :class:`RunStopped`, everything journaled so far stays, and a rerun resumes where it stopped.
    """
    if journal.plan.get("executor") != executor.name:
        raise JournalError(
            f"plan {journal.plan_id} was made for the {journal.plan.get('executor')} executor, "
            f"not {executor.name}"
        )
    if journal.plan.get("target") != executor.target():
        raise JournalError(
            f"plan {journal.plan_id} targets {journal.plan.get('target')}, not {executor.target()}"
        )
    done_before = journal.applied_ids()
    todo = [item for item in journal.items if item["item_id"] not in done_before]
    try:
        try:
            _check(executor)
            journal.event("run", todo=len(todo), skipped=len(done_before), pid=os.getpid())
            if todo:
                executor.apply(journal, todo)
            statuses = journal.statuses()
            verification = executor.verify(journal) if verify else []
        except KafkaClientError as exc:
            journal.event("stopped", reason=str(exc))
            applied = len(journal.applied_ids())
            raise RunStopped(journal.plan_id, str(exc), applied, len(journal.items)) from None
        items = []
        for item in journal.items:
            st = statuses.get(item["item_id"], {"status": "not_attempted", "detail": None})
            items.append(
                {
                    "item_id": item["item_id"],
                    "kind": item["kind"],
                    "group_id": item["group_id"],
                    "topic": item["topic"],
                    "partition": item["partition"],
                    "status": st["status"],
                    "detail": st.get("detail"),
                }
            )
        if verify:
            journal.event(
                "verified",
                checked=len(verification),
                not_gone=[v.item_id for v in verification if not v.ok],
            )
    finally:
        executor.close()
    return ExecutionReport(
        plan_id=journal.plan_id,
        journal=str(journal.plan_path),
        executor=executor.name,
        resumed=resumed,
        skipped_already_applied=len(done_before),
        items=items,
        verification=verification,
    )
