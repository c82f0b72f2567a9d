"""The exporter's snapshots: a whole refresh of the run's source, or, following (``--follow``), one look
at it and the appends applied (:class:`~offsetops.coordinator_core.follow.Follower`), with the cleaner
audit re-run in a thread of its own. ``offsetops exporter``'s collector serves what these build."""

from __future__ import annotations

import argparse
import logging
import threading
import time
from dataclasses import dataclass, replace

from offsetops.commands._load import load_with_progress, source_from_args
from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.cleaner.model import CleanerAudit
from offsetops.coordinator_core.clock import WALL, resolve_clock
from offsetops.coordinator_core.describe import GroupFilter, wanted_partitions
from offsetops.coordinator_core.escape import for_log
from offsetops.coordinator_core.failover import read_load_logs
from offsetops.coordinator_core.follow import Follower, FollowStep
from offsetops.coordinator_core.group_views import source_log_offsets
from offsetops.coordinator_core.metrics_pieces import SnapshotPieces, render_families
from offsetops.coordinator_core.metrics_snapshot import Snapshot, compute_snapshot, snapshot_metrics
from offsetops.coordinator_core.resume.memory import MemoryStateStore
from offsetops.coordinator_core.resume.store import StateStore
from offsetops.coordinator_core.sources.source import Source

log = logging.getLogger(__name__)


def build_snapshot(args: argparse.Namespace) -> Snapshot:
    """One whole refresh of the run's source (reloaded, or resumed from ``--state DIR``), as of ``--now``,
    else the clock the log dir declares, else the wall clock."""
    return ExporterSnapshots(args).full()


@dataclass(frozen=True, slots=True)
class FollowUpdate:
    """A snapshot that reflects appends, and when the look that saw them ended (``time.monotonic``)."""

    snapshot: Snapshot
    seen: float
    step: FollowStep


class ExporterSnapshots:
    """The exporter's snapshots of one source: whole at every refresh, or, following, the partitions that
    moved since the last look re-read from their resume state.

    Following, only the first refresh audits the cleaner in line; later refreshes start the next audit
    in a thread of its own (it reads every segment, and the looks must not wait for it) and serve the
    newest audit finished.
    """

    def __init__(self, args: argparse.Namespace):
        self._args = args
        self._audit: CleanerAudit | None = None
        self._auditing: threading.Thread | None = None
        self._follower: Follower | None = None
        self._pieces: SnapshotPieces | None = None
        if getattr(args, "follow", False):
            source = source_from_args(args)
            if source.state_dir is None:
                # no --state: each partition's resume state lives in this process
                source = replace(source, state_store=MemoryStateStore())
            else:
                # the state files, and each partition's decoded survivors kept between its reads
                source = replace(source, state_store=StateStore.kept(source.state_dir))
            run = args.run
            self._follower = Follower(
                source, num_partitions=run["num_partitions"], semantics=run["semantics"]
            )
            # following, most partitions did not move between two snapshots: their views and lines stay
            self._pieces = SnapshotPieces(getattr(args, "granularity", "partition"))

    def full(self) -> Snapshot:
        """Reload (following: check every partition against its resume state and read what was
        appended), audit the cleaner (log dirs only), plan expiration and forecast failover."""
        started = time.time()
        if self._follower is None:
            # one Source per refresh: the reload and the log offsets read the same one
            source = source_from_args(self._args)
            return self._compute(source, load_with_progress(source, self._args.run), started, audit=None)
        follower = self._follower
        self._report(follower.refresh())
        if self._audit is None:
            snap = self._compute(follower.source, follower.caches, started, audit=None)
            self._audit = snap.audit
            return snap
        self._start_audit()
        return self._compute(follower.source, follower.caches, started, audit=self._audit)

    def _start_audit(self) -> None:
        """The next cleaner audit, in its own thread (none while one still runs)."""
        if self._auditing is not None and self._auditing.is_alive():
            return
        self._auditing = threading.Thread(target=self._run_audit, args=(self._now(),), name="cleaner-audit",
                                          daemon=True)  # fmt: skip
        self._auditing.start()

    def _run_audit(self, now_ms: int) -> None:
        from offsetops.coordinator_core.cleaner.audit import audit_log_dir

        try:
            audit = audit_log_dir(
                self._args.path, now_ms=now_ms, state_dir=self._args.state_dir, record_history=False
            )
        except Exception as exc:  # the previous audit stays served; the error is logged
            log.error("cleaner audit failed: %s", for_log(f"{type(exc).__name__}: {exc}"))
            return
        self._audit = audit  # one reference swapped: readers see the old audit or the new one

    def follow(self) -> FollowUpdate | None:
        """One look at the source: None when nothing moved, else the snapshot with the appends applied."""
        assert self._follower is not None
        moved = self._follower.look()
        if not moved:
            return None
        seen = time.monotonic()
        started = time.time()
        step = self._follower.apply(moved)
        self._report(step)
        snap = self._compute(self._follower.source, self._follower.caches, started, audit=self._audit)
        return FollowUpdate(snap, seen, step)

    def exposition(self, snap: Snapshot) -> bytes:
        """The snapshot's families as the text exposition (following: re-rendering only the partitions
        that moved)."""
        if self._pieces is not None:
            return self._pieces.exposition(snap)
        return render_families(
            snapshot_metrics(snap, granularity=getattr(self._args, "granularity", "partition"))
        )

    def close(self) -> None:
        if self._follower is not None:
            self._follower.close()

    def _now(self) -> int:
        """A real broker's log dir is evaluated at each refresh's wall clock; a configured or declared
        instant stays the run's."""
        run = self._args.run
        return resolve_clock(None).as_of_ms if run.clock.source == WALL else run.now_ms

    def _report(self, step: FollowStep) -> None:
        for notice in step.notices():
            log.warning("%s", for_log(notice))

    def _compute(
        self, source: Source, caches: list[CoordinatorCache], started: float, *, audit: CleanerAudit | None
    ) -> Snapshot:
        args = self._args
        run = args.run
        pieces = self._pieces
        wanted = pieces.wanted(caches) if pieces is not None else wanted_partitions(caches, GroupFilter())
        offsets, _where = source_log_offsets(source, wanted)
        return compute_snapshot(
            caches,
            offsets,
            log_dir=args.path,
            now_ms=self._now(),
            retention_ms=run.retention_ms,
            forecast_horizon_ms=run.forecast_horizon_ms,
            observed=read_load_logs(args.broker_log),
            failover_threshold_ms=args.failover_threshold_ms,
            taken_at=started,
            settings=run,
            audit=audit,
            audit_state_dir=args.state_dir,
            views=pieces.views(caches, offsets) if pieces is not None else None,
        )
