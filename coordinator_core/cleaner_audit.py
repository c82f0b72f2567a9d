"""The Log Cleaner audit's public names in one import.

The code lives in :mod:`offsetops.coordinator_core.cleaner`:

``model`` (verdicts, findings, thresholds, the JSON), ``manager`` (``LogCleanerManager`` arithmetic),
``scan`` (the record scan), ``rules`` (the verdict rules as data) and ``audit`` (a partition, a log
dir). The operator's guide is docs/cleaner-audit.md.
"""

from __future__ import annotations

from offsetops.coordinator_core.cleaner.audit import audit_log_dir, audit_partition, audit_partition_isolated
from offsetops.coordinator_core.cleaner.manager import (
    LogToClean,
    OffsetsToClean,
    SegmentInfo,
    calculate_cleanable_bytes,
    cleanable_offsets,
    log_to_clean,
    max_compaction_delay,
    max_dirty_ratio,
)
from offsetops.coordinator_core.cleaner.model import (
    CRITICAL,
    DEGRADED,
    HEALTHY,
    RANK,
    CleanerAudit,
    OpenTransaction,
    PartitionAudit,
    PartitionFailure,
    Reason,
    Thresholds,
    format_bytes,
    worst,
)
from offsetops.coordinator_core.cleaner.rules import judge_partition, judge_topic
from offsetops.coordinator_core.timefmt import format_duration

__all__ = [
    "CRITICAL",
    "DEGRADED",
    "HEALTHY",
    "RANK",
    "CleanerAudit",
    "LogToClean",
    "OffsetsToClean",
    "OpenTransaction",
    "PartitionAudit",
    "PartitionFailure",
    "Reason",
    "SegmentInfo",
    "Thresholds",
    "audit_log_dir",
    "audit_partition",
    "audit_partition_isolated",
    "calculate_cleanable_bytes",
    "cleanable_offsets",
    "format_bytes",
    "format_duration",
    "judge_partition",
    "judge_topic",
    "log_to_clean",
    "max_compaction_delay",
    "max_dirty_ratio",
    "worst",
]
