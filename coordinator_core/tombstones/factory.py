"""The one way a front end gets a tombstone executor and runs a plan through it.

:func:`executor_for` picks and builds the ``admin`` (OffsetDelete/DeleteGroups through the coordinator),
``produce`` (raw tombstones to a mirror or sandbox topic) or ``segment`` (a new segment in a copy of the
log dir) executor from an :class:`ExecutorRequest`; what it lacks raises :class:`MissingInput`, which says
what is missing and leaves the wording of how to give it to the front end. :func:`apply_plan` and
:func:`resume_plan` run a plan as every front end does: one run per target (``target_lock``), the plan
journaled before anything is sent, the items not yet applied, then the verification
(:func:`~offsetops.coordinator_core.tombstones.runner.run_journal`). Nothing here runs unless a front end
was asked to execute: planning is the dry run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from offsetops.coordinator_core.expiration import ExpirationPlan
from offsetops.coordinator_core.tombstones.journal import Journal
from offsetops.coordinator_core.tombstones.runner import (
    ExecutionReport,
    Executor,
    ExecutorRefused,
    open_or_create_journal,
    plan_document,
    run_journal,
    target_lock,
)

if TYPE_CHECKING:
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig

__all__ = [
    "CLUSTER_METHODS",
    "METHODS",
    "ExecutorRequest",
    "MissingInput",
    "apply_plan",
    "executor_for",
    "resume_plan",
]

METHODS = ("admin", "produce", "segment")
#: the methods that write to a cluster (they need its client configuration)
CLUSTER_METHODS = ("admin", "produce")
#: the client configuration of the cluster at a bootstrap (a resumed plan's; None: the front end's own), or
#: None when the front end has none: built only for an executor that writes to a cluster
ClusterResolver = Callable[[str | None], "KafkaClientConfig | None"]
#: told once the journal is open, before the first item: (the journal, whether it resumes, the executor)
OnStart = Callable[[Journal, bool, Executor], None]


class MissingInput(ValueError):
    """The executor cannot be built without ``missing`` (``cluster``, ``target_topic``, ``log_dir``,
    ``output_dir``); nothing was sent."""

    def __init__(self, method: str, missing: str) -> None:
        super().__init__(f"the {method} executor needs a {missing.replace('_', ' ')}")
        self.method, self.missing = method, missing


@dataclass(frozen=True, slots=True)
class ExecutorRequest:
    """Which executor applies a plan, and where: ``log_dir`` is the plan's source log dir (the segment
    executor copies it to ``output_dir``), ``cluster`` the cluster admin and produce write to (or how to
    resolve it for ``bootstrap``, which a resumed plan's target sets)."""

    method: str
    log_dir: str | None = None
    cluster: KafkaClientConfig | ClusterResolver | None = None
    bootstrap: str | None = None
    output_dir: str | None = None
    target_topic: str | None = None
    partitioning: str = "same"  # produce: the offsets partition (same) or the key hash (key)
    allow_internal_topic_write: bool = False
    semantics: str = "java"  # segment: the replay rules its verification reloads with

    def resuming(self, target: Mapping[str, Any]) -> ExecutorRequest:
        """This request with the destination of a journaled plan's ``target`` where it gives none; a
        journaled partitioning always wins (a resumed plan keeps its destination)."""
        return replace(
            self,
            log_dir=self.log_dir or target.get("source"),
            bootstrap=self.bootstrap or target.get("bootstrap"),
            output_dir=self.output_dir or target.get("output_dir"),
            target_topic=self.target_topic or target.get("topic"),
            partitioning=target.get("partitioning", self.partitioning),
        )


def executor_for(request: ExecutorRequest) -> Executor:
    """The executor ``request.method`` names, built on its destination (``ExecutorRefused`` for a method
    offsetops does not know or a destination it will not write to, ``MissingInput`` for one not given)."""
    if request.method == "admin":
        from offsetops.coordinator_core.tombstones.admin import AdminExecutor

        return AdminExecutor(_cluster(request))
    if request.method == "produce":
        from offsetops.coordinator_core.tombstones.produce import ProduceExecutor

        if not request.target_topic:
            raise MissingInput(request.method, "target_topic")
        return ProduceExecutor(
            _cluster(request),
            request.target_topic,
            partitioning=request.partitioning,
            allow_internal_topic_write=request.allow_internal_topic_write,
        )
    if request.method == "segment":
        from offsetops.coordinator_core.tombstones.segment import SegmentExecutor

        for name in ("log_dir", "output_dir"):
            if not getattr(request, name):
                raise MissingInput(request.method, name)
        return SegmentExecutor(str(request.log_dir), str(request.output_dir), semantics=request.semantics)
    raise ExecutorRefused(f"no executor {request.method!r}; one of {', '.join(METHODS)}")


def _cluster(request: ExecutorRequest) -> KafkaClientConfig:
    cluster = request.cluster(request.bootstrap) if callable(request.cluster) else request.cluster
    if cluster is None:
        raise MissingInput(request.method, "cluster")
    return cluster


def _run(
    journal_dir: str | os.PathLike[str],
    executor: Executor,
    open_journal: Callable[[], tuple[Journal, bool]],
    *,
    verify: bool,
    on_start: OnStart | None,
) -> ExecutionReport:
    """Hold the target's lock, open the journal, apply and verify; the executor is closed whatever
    happens."""
    try:
        with target_lock(journal_dir, executor.name, executor.target()):
            journal, resumed = open_journal()
            if on_start is not None:
                on_start(journal, resumed, executor)
            return run_journal(journal, executor, resumed=resumed, verify=verify)
    finally:
        executor.close()


def apply_plan(
    plan: ExpirationPlan,
    request: ExecutorRequest,
    *,
    journal_dir: str | os.PathLike[str],
    source: str | None,
    force_new: bool = False,
    verify: bool = True,
    on_start: OnStart | None = None,
) -> ExecutionReport:
    """Apply ``plan`` through the executor ``request`` names, journaled in ``journal_dir`` (an unfinished
    journal of the same plan is resumed; one of another plan on the same target refuses unless
    ``force_new``); ``source`` says in the journal where the plan was read."""
    executor = executor_for(request)

    def open_journal() -> tuple[Journal, bool]:
        doc = plan_document(plan, executor=executor, source=source)
        return open_or_create_journal(journal_dir, doc, force_new=force_new)

    return _run(journal_dir, executor, open_journal, verify=verify, on_start=on_start)


def resume_plan(
    journal_dir: str | os.PathLike[str],
    plan_id: str,
    request: ExecutorRequest,
    *,
    on_start: OnStart | None = None,
) -> ExecutionReport:
    """Continue the journaled plan ``plan_id`` through the executor it was made for, on its target
    (``request.method``, when given, must be that executor)."""
    journal = Journal.open(journal_dir, plan_id)
    name = journal.plan["executor"]
    if request.method and request.method != name:
        raise ValueError(f"plan {journal.plan_id} was made for --executor {name}")
    executor = executor_for(replace(request, method=name).resuming(journal.plan["target"]))
    return _run(journal_dir, executor, lambda: (journal, True), verify=True, on_start=on_start)
