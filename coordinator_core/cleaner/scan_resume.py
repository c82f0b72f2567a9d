"""The cleaner scan read once, then followed: it rides along the fold's resumed read (``--state DIR``).

A partition's scan (:mod:`.scan`) is saved beside its fold's resume state, in the same directory under
the same lock, at the same point (``DIR/<topic>-<partition>.scan``, :mod:`.scan_state`), and the next run
goes on from that point with the fold, so each appended byte is read once for both. The saved scan holds
only what does not move between runs (see :mod:`.scan`); it is refused, and the scan made from the start
with the reason, when what it does depend on moved:

- whatever made the fold read from the start (the fold's own reason, :data:`~..resume.REASONS`);
- ``scan_stale``: the scan was saved at a point the fold's is not past in the log as it is now (a scan
  saved before the fold went on, by a read that saved the fold alone, goes on from its own point
  instead: it reads up to the fold's point itself, then rides along);
- ``scan_inputs_changed``: the cleaner's first dirty offset (its checkpoint, the log start) or the
  read limits differ from the ones the scan was made with;
- ``segment_rewritten``: the cleaner rewrote segments before the point (the fold finds its place
  again by offset; the scan's facts of the rewritten bytes are gone);
- ``active_segment_moved``: a new active segment begins at or below an offset already counted;
- ``no_state``, ``state_unreadable``, ``state_corrupt``, ``state_foreign``, ``state_version``: as for the
  fold's file (a corrupt or foreign file is reported and ignored, never trusted).

A fresh scan while the fold resumes reads the bytes before the fold's point itself, then rides along.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.atomic import write_bytes_atomic
from offsetops.coordinator_core.cache import CoordinatorCache
from offsetops.coordinator_core.cleaner.audit import audit_from_scan, high_watermarks
from offsetops.coordinator_core.cleaner.config import CleanerConfig
from offsetops.coordinator_core.cleaner.model import PartitionAudit, PartitionFailure
from offsetops.coordinator_core.cleaner.scan import (
    PartitionScan,
    ScanInputs,
    dirty_from,
    scan_into,
    scan_partition,
)
from offsetops.coordinator_core.cleaner.scan_state import decode_scan, encode_scan
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records.reader import Scan, page_release
from offsetops.coordinator_core.resume.codec import StateFormatError
from offsetops.coordinator_core.resume.logdir import (
    Plan,
    load_partition_dir_resumable,
    log_state,
    plan_resume,
    stop_in,
)
from offsetops.coordinator_core.resume.point import Refusal, ResumePoint
from offsetops.coordinator_core.resume.store import StateStore
from offsetops.coordinator_core.sources.logdir import LogDir, PartitionDir
from offsetops.coordinator_core.untrusted import UntrustedFileError, open_regular_file, read_regular_file

__all__ = [
    "SCAN_REASONS",
    "ScanOutcome",
    "ScanRider",
    "ScanRiders",
    "audit_partitions_resumed",
    "load_and_scan",
    "scan_state_path",
]

#: why a partition's scan was made from the start rather than resumed, beside the fold's REASONS
SCAN_REASONS: dict[str, str] = {
    "scan_stale": "the scan state was saved at a point the fold's state is not past",
    "scan_inputs_changed": "the cleaner's first dirty offset or the read limits changed",
    "segment_rewritten": "the cleaner rewrote segments before the point",
    "active_segment_moved": "a new active segment begins at or below an offset already counted",
    "no_scan_store": "the resume state is kept in memory, where no scan is kept",
}


@dataclass(frozen=True)
class ScanOutcome:
    """A partition's scan after a read, whether it went on from its saved state, and if not why."""

    scan: PartitionScan
    resumed: bool
    reason: str | None
    detail: str
    #: bytes the scan read on its own (before the fold's point, or alone); it shares the fold's read
    own_bytes: int = 0
    state_error: str | None = None

    def facts(self) -> dict[str, Any]:
        """``scan_resumed``, ``scan_resume_reason``, ``scan_resume_detail``, ``scan_state_error``."""
        return {
            "scan_resumed": self.resumed,
            "scan_resume_reason": self.reason,
            "scan_resume_detail": self.detail,
            "scan_state_error": self.state_error,
        }


def scan_state_path(store: StateStore, topic: str, partition: int) -> Path:
    """The scan state beside the fold's: ``DIR/<topic>-<partition>.scan``."""
    return store.path(topic, partition).with_suffix(".scan")


def _inputs(inputs: ScanInputs) -> dict[str, Any]:
    """What a saved scan depends on beside its point (the active segment is applied when resumed)."""
    return {k: v for k, v in dataclasses.asdict(inputs).items() if k != "active_base"}


def _short(value: Any) -> str:
    """Something read from a state file, for a message: at most 200 characters."""
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


class ScanRider:
    """The cleaner scan of one partition dir riding along its fold's resumed read
    (:class:`~offsetops.coordinator_core.resume.logdir.ResumeRider`)."""

    def __init__(self, pdir: PartitionDir, store: Any, inputs: ScanInputs) -> None:
        self.pdir, self.store, self.inputs = pdir, store, inputs
        self.scan = PartitionScan(active_base=inputs.active_base)
        self.riding = False
        self.resumed, self.reason, self.detail = False, None, ""
        self.own_bytes, self.state_error = 0, None
        self._saved: ResumePoint | None = None
        self._at_fold = False  # the saved scan was at the fold's point (nothing read before it here)
        self._read: set[int] = set()
        self._walked: dict[int, int] = {}

    def outcome(self) -> ScanOutcome:
        return ScanOutcome(
            self.scan, self.resumed, self.reason, self.detail, self.own_bytes, self.state_error
        )

    def _fresh(self, refusal: Refusal) -> None:
        self.scan = PartitionScan(active_base=self.inputs.active_base)
        self.resumed, self.reason, self.detail = False, refusal.code, refusal.detail

    # -- ResumeRider ------------------------------------------------------------------------------

    def begin(self, plan: Plan | None, saved: ResumePoint | None, refusal: Refusal | None) -> None:
        if plan is None:  # the fold reads alone (the state is locked): so does the scan, and saves nothing
            self._fresh(refusal or Refusal("state_locked", "the state is locked"))
            inputs = self.inputs
            self.scan = scan_partition(self.pdir, dirty_from=inputs.dirty_from, verify_crc=inputs.verify_crc,
                                       max_batch_bytes=inputs.max_batch_bytes)  # fmt: skip
            self.own_bytes = self.pdir.size_bytes
            return
        self.riding, self._saved = True, saved
        if refusal is not None or saved is None:
            self._fresh(refusal or Refusal("no_state", "no resume state for this partition yet"))
            return
        if (plan.index, plan.start) == (0, 0):  # nothing was folded: the fold reads from the start too
            self.resumed, self.detail = True, "resumed with the fold at offset 0"
            return
        restored = self._restore(plan, saved)
        if isinstance(restored, Refusal):
            self._fresh(restored)
            self._scan_span(Plan(0, 0), plan)
            return
        self.scan, at = restored
        self.resumed, self.reason, self._at_fold = True, None, at == plan
        self.detail = f"resumed with the fold at offset {plan.next_offset}"
        if at != plan:
            self._scan_span(at, plan)
            self.detail = (
                f"resumed at offset {at.next_offset}, read on to the fold's offset {plan.next_offset}"
            )

    def read(self, seg: Any, start: int, mapping: mmap.mmap, walker: Scan) -> None:
        if not self.riding:
            return
        self._read.add(seg.base_offset)
        self._walked[seg.base_offset] = len(mapping)
        scan_into(self.scan, mapping, self.inputs, file=str(seg.path), base_offset=seg.base_offset,
                  size=seg.size, mtime_ms=seg.mtime_ms, start=start, walker=walker)  # fmt: skip

    def done(self, seg: Any, start: int, size: int | None) -> None:
        if not self.riding or seg.base_offset in self._read:
            return
        if size is None:
            self.scan.errors.append(
                DecodeError(
                    "io", "cannot be read (the load's errors say why)", str(seg.path), self.pdir.partition
                )
            )
        self._walked[seg.base_offset] = size or 0
        scan_into(self.scan, b"", self.inputs, file=str(seg.path), base_offset=seg.base_offset, size=seg.size,
                  mtime_ms=seg.mtime_ms, start=start)  # fmt: skip

    def saved(self, point: ResumePoint | None, bytes_read: int) -> None:
        if not self.riding or point is None or not point.segments:
            return
        if not isinstance(self.store, StateStore):
            self.state_error = SCAN_REASONS["no_scan_store"]
            return
        if self.resumed and self._at_fold and bytes_read == 0 and not self._read and point == self._saved:
            return  # the saved scan is this one: nothing was read
        last = self.pdir.segments[len(point.segments) - 1]
        position, kept = stop_in(self.scan.errors, str(last.path), self._walked.get(last.base_offset, 0))
        bases = [s.base_offset for s in self.scan.segments]
        if position != point.position or bases != [b for b, _ in point.segments]:
            self.state_error = (
                f"scan state not saved: the scan stopped at byte {position} of {last.path}, the fold at "
                f"byte {point.position}"
            )
            return
        try:
            data = encode_scan(self.scan, {"point": point.to_json(), "inputs": _inputs(self.inputs)}, kept)
            write_bytes_atomic(scan_state_path(self.store, point.topic, point.partition), data, durable=False)
        except (OSError, ValueError) as exc:
            self.state_error = f"scan state not saved: {exc}"

    # -- the saved scan -------------------------------------------------------------------------------

    def _restore(self, plan: Plan, saved: ResumePoint) -> tuple[PartitionScan, Plan] | Refusal:
        """The saved scan and where it goes on from: at the fold's ``plan`` when it was saved at the
        fold's ``saved`` point, or at its own point, behind the fold's, while the log still holds the
        bytes before it (a read that saved the fold alone went on since: the scan reads up to the fold's
        point itself); or why it cannot be used."""
        path = scan_state_path(self.store, self.pdir.topic, self.pdir.partition)
        if not isinstance(self.store, StateStore):
            return Refusal("no_scan_store", SCAN_REASONS["no_scan_store"])
        if plan.compacted:
            return Refusal(
                "segment_rewritten", "the cleaner rewrote segments before the point since the scan"
            )
        try:
            data = read_regular_file(path, kind="resume state")
        except FileNotFoundError:
            return Refusal("no_state", f"no scan state {path} yet")
        except (UntrustedFileError, OSError) as exc:
            return Refusal("state_unreadable", f"{path}: {exc}")
        listed = [(s.size, s.mtime_ms) for s in self.pdir.segments]
        try:
            head, scan = decode_scan(data, listed)
        except StateFormatError as exc:
            return Refusal(exc.code, f"{path}: {exc}")
        if head.get("inputs") != _inputs(self.inputs):
            return Refusal(
                "scan_inputs_changed",
                f"{path} was made with {_short(head.get('inputs'))}, "
                f"this run scans with {_inputs(self.inputs)}",
            )
        at = plan if head.get("point") == saved.to_json() else self._behind(head.get("point"), plan, saved)
        if at is None:
            return Refusal("scan_stale", f"{path} was saved at a point the fold's state is not past")
        if (at.index, at.start) == (0, 0):  # it had read nothing: going on is reading from the start
            return PartitionScan(active_base=self.inputs.active_base), at
        active = self._active(scan, path)
        return active if isinstance(active, Refusal) else (active, at)

    def _behind(self, doc: Any, plan: Plan, saved: ResumePoint) -> Plan | None:
        """Where a scan saved at the point ``doc`` goes on from, when that point is before the fold's
        ``plan`` in the log as it is now (the fold's own resume checks); else None."""
        try:
            theirs = ResumePoint.from_json(doc)
        except StateFormatError:
            return None
        at = plan_resume(theirs, self.pdir, log_state(self.pdir), saved.settings)
        if isinstance(at, Refusal) or at.compacted:
            return None
        return at if (at.index, at.start) <= (plan.index, plan.start) else None

    def _active(self, scan: PartitionScan, path: Path) -> PartitionScan | Refusal:
        """The saved scan with this run's active segment: its reclaimable bytes counted again from
        scratch when a new segment became the active one."""
        now = self.inputs.active_base
        if now == scan.active_base:
            return scan
        if now < scan.active_base or now <= scan.top_reclaimed:
            return Refusal(
                "active_segment_moved", f"{path}: the active segment begins at offset {now}, the scan "
                f"counted offsets up to {scan.top_reclaimed} with the active segment at {scan.active_base}",
            )  # fmt: skip
        scan.active_base, scan.active_reclaimable_bytes = now, 0.0
        return scan

    def _scan_span(self, start: Plan, end: Plan) -> None:
        """Read from ``start`` to ``end`` (where the fold goes on from) into the scan, here."""
        for i in range(start.index, end.index + 1):
            frm = start.start if i == start.index else 0
            to = end.start if i == end.index else None
            if to is not None and to <= frm:
                break
            self._scan_file(self.pdir.segments[i], frm, to)

    def _scan_file(self, seg: Any, start: int, end: int | None) -> None:
        file = str(seg.path)
        meta = {"file": file, "base_offset": seg.base_offset, "size": seg.size, "mtime_ms": seg.mtime_ms}
        try:
            with open_regular_file(seg.path, kind="segment", follow_symlinks=True) as fh:
                size = os.fstat(fh.fileno()).st_size
                stop = size if end is None else min(end, size)
                if size == 0 or stop <= start:
                    scan_into(self.scan, b"", self.inputs, start=start, **meta)
                    return
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    walker = Scan(fh.fileno(), page_release(mm))
                    scan_into(self.scan, mm, self.inputs, start=start, stop=stop, walker=walker, **meta)
                self.own_bytes += stop - start
        except (OSError, ValueError) as exc:
            self.scan.errors.append(DecodeError("io", f"cannot read: {exc}", file, self.pdir.partition))
            self.riding = False
            self.state_error = f"scan state not saved: {file} cannot be read"


class ScanRiders:
    """A :class:`ScanRider` for each partition a :class:`~..sources.source.Source`'s resumed read goes
    through (``Source(scan_riders=)``), with the partition's inputs; then each partition's outcome."""

    def __init__(self, inputs: Mapping[int, ScanInputs]) -> None:
        self.inputs = dict(inputs)
        self._riders: dict[int, ScanRider] = {}

    def rider(self, pdir: PartitionDir, store: Any) -> ScanRider | None:
        """The rider of ``pdir`` (None for a partition without scan inputs: no segment was listed)."""
        inputs = self.inputs.get(pdir.partition)
        if inputs is None:
            return None
        rider = self._riders[pdir.partition] = ScanRider(pdir, store, inputs)
        return rider

    def outcomes(self) -> dict[int, ScanOutcome]:
        return {p: r.outcome() for p, r in sorted(self._riders.items())}


def audit_partitions_resumed(
    logdir: LogDir,
    store: StateStore,
    *,
    config: CleanerConfig,
    now_ms: int,
    num_partitions: int,
    semantics: str,
    max_batch_bytes: int,
    progress: Callable[[int, PartitionDir], None] | None = None,
) -> tuple[dict[int, PartitionAudit | PartitionFailure | None], dict[int, dict[str, Any]]]:
    """Each partition's unjudged audit (``scan_log_dir``'s) from its scan resumed with its fold, and
    what each read: ``bytes_read`` (this run, the fold's and the scan's own), ``resumed`` (the scan),
    ``resume_reason`` / ``resume_detail`` (why not) and ``state_error``."""
    hw = high_watermarks(logdir, [])
    audits: dict[int, PartitionAudit | PartitionFailure | None] = {}
    reads: dict[int, dict[str, Any]] = {}
    for pdir in logdir.partitions:
        if pdir.segments:
            audits[pdir.partition], reads[pdir.partition] = _audit_resumed(
                logdir, pdir, store, hw, config=config, now_ms=now_ms, num_partitions=num_partitions,
                semantics=semantics, max_batch_bytes=max_batch_bytes,
            )  # fmt: skip
        else:
            audits[pdir.partition] = None
        if progress is not None:
            progress(len(logdir.partitions), pdir)
    return audits, reads


def _audit_resumed(
    logdir: LogDir, pdir: PartitionDir, store: StateStore, hw: Mapping[tuple[str, int], int], *,
    config: CleanerConfig, now_ms: int, num_partitions: int, semantics: str, max_batch_bytes: int,
) -> tuple[PartitionAudit | PartitionFailure, dict[str, Any]]:  # fmt: skip
    tp = (pdir.topic, pdir.partition)
    checkpoint, log_start = logdir.cleaner_checkpoint.get(tp), logdir.log_start_checkpoint.get(tp)
    first = dirty_from(checkpoint, log_start, pdir.segments[0].base_offset)
    inputs = ScanInputs(pdir.partition, first, pdir.segments[-1].base_offset, True, max_batch_bytes)
    try:
        cache, outcome = load_and_scan(
            pdir, store, inputs, num_partitions=num_partitions, semantics=semantics
        )
        audit = audit_from_scan(
            pdir.partition, outcome.scan, config=config, now_ms=now_ms, checkpoint=checkpoint,
            log_start_checkpoint=log_start, high_watermark=hw.get(tp),
        )  # fmt: skip
    except Exception as exc:  # reported per partition, as audit_partition_isolated does
        failure = PartitionFailure(pdir.partition, str(pdir.path), f"{type(exc).__name__}: {exc}")
        return failure, {"bytes_read": 0, "resumed": False, "resume_reason": "unverifiable",
                         "resume_detail": failure.error, "state_error": None}  # fmt: skip
    return audit, {
        "bytes_read": cache.stats.bytes_read + outcome.own_bytes,
        "resumed": outcome.resumed,
        "resume_reason": outcome.reason,
        "resume_detail": outcome.detail,
        "state_error": outcome.state_error or cache.stats.state_error,
    }


def load_and_scan(
    pdir: PartitionDir,
    store: StateStore,
    inputs: ScanInputs,
    *,
    num_partitions: int,
    semantics: str,
) -> tuple[CoordinatorCache, ScanOutcome]:
    """The partition's resumed load (``load_partition_dir_resumable``) and its cleaner scan from one
    read: both go on from the saved point when it holds (``inputs``' read limits are the fold's too)."""
    rider = ScanRider(pdir, store, inputs)
    cache = load_partition_dir_resumable(
        pdir, store, num_partitions=num_partitions, semantics=semantics, verify_crc=inputs.verify_crc,
        max_batch_bytes=inputs.max_batch_bytes, rider=rider,
    )  # fmt: skip
    return cache, rider.outcome()
