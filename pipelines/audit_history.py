"""The audit job's driver side with an audit history (``--state-dir``), as ``offsetops audit`` judges.

The executors scan (``offsetops.pipelines.audit.partition_audits``); the driver judges every partition
against the earlier audits of the same log dir in ``audits.jsonl`` through ``audit_log_dir``, so a cleaner
with no progress since the previous audit is CRITICAL (``LogCleanerManager`` progress between audits).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.cleaner.model import CleanerAudit, PartitionAudit, PartitionFailure
from offsetops.coordinator_core.sources.logdir import OFFSETS_TOPIC, LogDir, PartitionDir
from offsetops.pipelines.source import LogDirListing


class PartitionAuditError(Exception):
    """A partition the audit could not compute (names the partition, its dir and why)."""


def judged_audit(
    listing: LogDirListing,
    scans: Mapping[int, PartitionAudit | PartitionFailure | None],
    *,
    now_ms: int,
    state_dir: str,
    record_history: bool = True,
    checkpoint_notes: list[str] | None = None,
) -> CleanerAudit:
    """The executors' ``scans`` judged with the history in ``state_dir`` (appended to unless
    ``record_history`` is false), as ``offsetops audit --state-dir`` and the Dagster asset judge them.

    Raises PartitionAuditError when a partition could not be audited: the ``cleaner_audit`` table has a
    row only for audited partitions, as without history."""
    # The history key is the log dir as `offsetops audit` names it: a local one resolved, a remote URI as is.
    key = str(Path(listing.root).resolve()) if listing.local else listing.root
    logdir = LogDir(
        Path(key),
        tuple(
            PartitionDir(Path(key) / f"{OFFSETS_TOPIC}-{n}", OFFSETS_TOPIC, n, ()) for n in listing.partitions
        ),
        checkpoint_errors=tuple(checkpoint_notes or ()),
    )
    audit = audit_log_dir(
        logdir,
        now_ms=now_ms,
        state_dir=state_dir,
        record_history=record_history,
        partition_audits=scans,
        log_dir_key=key,
        files_at_hand=False,
    )
    if audit.failures:
        raise PartitionAuditError(
            "; ".join(
                f"{OFFSETS_TOPIC}-{f.partition} ({f.path}) could not be audited: {f.error}"
                for f in audit.failures
            )
        )
    return audit


def topic_values(audit: CleanerAudit) -> tuple:
    """The ``cleaner_audit_topic`` row of a judged audit, in schema order."""
    return (
        audit.audited_at_ms,
        audit.verdict,
        [r.to_json() for r in audit.reasons],
        len(audit.partitions),
        sum(pa.size_bytes for pa in audit.partitions),
        sum(pa.reclaimable_bytes for pa in audit.partitions),
    )
