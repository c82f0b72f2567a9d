"""Broker scans: the file part of the audit, run where a broker's files are, judged centrally.

A broker's log dir lives on a volume only that broker's node can mount (ReadWriteOnce), so the part of
the audit that reads segment files runs beside the broker (a sidecar in the broker pod, or a job
scheduled onto its node) and writes a :class:`BrokerScan` to shared storage: each partition's
:func:`~offsetops.coordinator_core.cleaner.audit.audit_partition` result, and each copy's replica facts
(leader epochs, log start/end, first dirty offset, and a digest of every batch from the first dirty offset on,
so that copies on different machines can be compared). The central run reads every broker's scan,
chooses the copy of each partition a reload reads, and applies history, marks and verdicts, exactly as
:func:`~offsetops.coordinator_core.cleaner.audit.audit_log_dirs` does with the files at hand.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.atomic import write_text_atomic
from offsetops.coordinator_core.cleaner.audit import audit_log_dir, merge_broker_audits, scan_log_dir
from offsetops.coordinator_core.cleaner.broker_log import BrokerLogReport
from offsetops.coordinator_core.cleaner.config import CleanerConfig, ClusterConfig
from offsetops.coordinator_core.cleaner.metrics import CleanerMetrics
from offsetops.coordinator_core.cleaner.model import (
    DEGRADED,
    CleanerAudit,
    OpenTransaction,
    PartitionAudit,
    PartitionFailure,
    Reason,
    Thresholds,
)
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.sources.logdir import (
    OFFSETS_TOPIC,
    LogDir,
    LogDirError,
    PartitionDir,
)
from offsetops.coordinator_core.sources.replicas import BatchDigest, ReplicaCopy, compare_copies, replica_copy
from offsetops.coordinator_core.timefmt import format_duration

__all__ = [
    "SCAN_FORMAT",
    "BrokerScan",
    "audit_broker_scans",
    "read_broker_scans",
    "scan_broker",
    "write_broker_scan",
]

SCAN_FORMAT = "offsetops-broker-scan/1"
_SCAN_NAME = re.compile(r"^broker-(\d+)\.json$")
#: batches per partition whose digests a scan carries (about 80 bytes of JSON each); past it the copies
#: are compared up to the last digest, and the scan says so
DEFAULT_MAX_DIGESTS = 200_000
#: a scan older than this is a finding: the broker's collector has stopped (twice the hourly schedule)
DEFAULT_MAX_SCAN_AGE_MS = 2 * 3_600_000

# what the central run sets on a partition audit, so a scan does not carry it
_CENTRAL_FIELDS = frozenset(
    {
        "marked_uncleanable",
        "cleaning_in_progress",
        "progress",
        "live_size_bytes",
        "verdict",
        "reasons",
        "broker_id",
    }
)


def partition_audit_state(pa: PartitionAudit) -> dict[str, Any]:
    """Every field of a fresh :class:`PartitionAudit` (what :func:`audit_partition` computed), as JSON."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(pa):
        if f.name in _CENTRAL_FIELDS:
            continue
        value = getattr(pa, f.name)
        if f.name in ("open_transactions", "decode_errors"):
            value = [dataclasses.asdict(v) for v in value]
        out[f.name] = value
    return out


def partition_audit_from_state(d: Mapping[str, Any]) -> PartitionAudit:
    """The inverse of :func:`partition_audit_state` (a KeyError or TypeError on a malformed document)."""
    kwargs = {f.name: d[f.name] for f in dataclasses.fields(PartitionAudit) if f.name not in _CENTRAL_FIELDS}
    kwargs["open_transactions"] = [OpenTransaction(**t) for t in d["open_transactions"]]
    kwargs["decode_errors"] = [DecodeError(**e) for e in d["decode_errors"]]
    return PartitionAudit(**kwargs)


@dataclass
class BrokerScan:
    """What one broker's collector found in its log dir."""

    broker_id: int
    log_dir: str
    scanned_at_ms: int
    config: dict[str, Any]
    partitions: dict[int, PartitionAudit | PartitionFailure] = field(default_factory=dict)
    copies: list[ReplicaCopy] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the file it was read from (set by :func:`read_broker_scans`)
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        parts: dict[str, Any] = {}
        for number, pa in sorted(self.partitions.items()):
            if isinstance(pa, PartitionFailure):
                parts[str(number)] = {"failure": pa.to_json()}
            else:
                parts[str(number)] = {"audit": partition_audit_state(pa)}
        return {
            "format": SCAN_FORMAT,
            "broker_id": self.broker_id,
            "log_dir": self.log_dir,
            "scanned_at_ms": self.scanned_at_ms,
            "config": self.config,
            "notes": list(self.notes),
            "partitions": parts,
            "copies": [_copy_json(c) for c in self.copies],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], source: str) -> BrokerScan:
        if doc.get("format") != SCAN_FORMAT:
            raise LogDirError(
                f"{source}: not a broker scan (format {doc.get('format')!r}, expected {SCAN_FORMAT})"
            )
        try:
            parts: dict[int, PartitionAudit | PartitionFailure] = {}
            for number, entry in doc["partitions"].items():
                if "failure" in entry:
                    fail = entry["failure"]
                    parts[int(number)] = PartitionFailure(int(number), fail["path"], fail["error"])
                else:
                    parts[int(number)] = partition_audit_from_state(entry["audit"])
            return cls(
                broker_id=int(doc["broker_id"]),
                log_dir=str(doc["log_dir"]),
                scanned_at_ms=int(doc["scanned_at_ms"]),
                config=dict(doc["config"]),
                partitions=parts,
                copies=[_copy_from_json(int(doc["broker_id"]), c) for c in doc["copies"]],
                notes=[str(n) for n in doc["notes"]],
                source=source,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise LogDirError(f"{source}: malformed broker scan: {type(exc).__name__}: {exc}") from None


def _copy_json(c: ReplicaCopy) -> dict[str, Any]:
    return {
        **c.to_json(),
        "partition": c.partition,
        "leader_epochs": [list(e) for e in c.leader_epochs],
        "digests_until": c.digests_until,
        "digests": [[d.base_offset, d.last_offset, d.size, d.digest] for d in c.digests or ()],
    }


def _copy_from_json(broker_id: int, d: Mapping[str, Any]) -> ReplicaCopy:
    return ReplicaCopy(
        broker_id=broker_id,
        partition=int(d["partition"]),
        path=str(d["path"]),
        size_bytes=int(d["size_bytes"]),
        leader_epochs=tuple((int(e), int(s)) for e, s in d["leader_epochs"]),
        log_start_offset=int(d["log_start_offset"]),
        log_end_offset=int(d["log_end_offset"]),
        first_dirty_offset=int(d["first_dirty_offset"]),
        digests=tuple(BatchDigest(int(b), int(e), int(n), str(h)) for b, e, n, h in d["digests"]),
        digests_until=None if d["digests_until"] is None else int(d["digests_until"]),
    )


def _with_digests(copy: ReplicaCopy, max_digests: int) -> ReplicaCopy:
    """The copy with its batch digests from the first dirty offset on, at most ``max_digests``."""
    digests: list[BatchDigest] = []
    until = None
    for d in copy.digests_from(copy.first_dirty_offset):
        if len(digests) >= max_digests:
            until = d.base_offset
            break
        digests.append(d)
    return dataclasses.replace(copy, pdir=None, digests=tuple(digests), digests_until=until)


def scan_broker(
    logdir: LogDir,
    broker_id: int,
    *,
    config: CleanerConfig | None = None,
    now_ms: int | None = None,
    verify_crc: bool = True,
    max_digests: int = DEFAULT_MAX_DIGESTS,
) -> BrokerScan:
    """Scan every partition of one broker's log dir: the audit's per-partition part and the replica facts."""
    cfg = config or CleanerConfig()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    notes = list(logdir.checkpoint_errors)
    scan = BrokerScan(broker_id, str(Path(logdir.path).resolve()), now, cfg.to_json(), notes=notes)
    found = scan_log_dir(logdir, config=cfg, now_ms=now, verify_crc=verify_crc, notes=notes)
    for pdir in logdir.partitions:
        pa = found[pdir.partition]
        if pa is None:
            continue  # no segment files: audit_log_dir notes it when it finds no scan for the partition
        scan.partitions[pdir.partition] = pa
        try:
            copy = replica_copy(broker_id, logdir, pdir)
        except LogDirError as exc:
            scan.notes.append(f"{pdir.path}: not compared with other brokers' copies: {exc}")
            continue
        copy = _with_digests(copy, max_digests)
        if copy.digests_until is not None:
            scan.notes.append(
                f"{pdir.path}: batch digests stop at offset {copy.digests_until} ({max_digests} batches); "
                "copies are compared up to there"
            )
        scan.copies.append(copy)
    return scan


def write_broker_scan(scan: BrokerScan, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``broker-<id>.json`` into ``out_dir`` atomically, so the central run never reads half a scan."""
    path = Path(out_dir) / f"broker-{scan.broker_id}.json"
    return write_text_atomic(path, json.dumps(scan.to_json(), separators=(",", ":")))


def read_broker_scans(path: str | os.PathLike[str]) -> list[BrokerScan]:
    """Every ``broker-<id>.json`` in ``path``, in broker order; LogDirError naming the file otherwise."""
    root = Path(path)
    if not root.is_dir():
        raise LogDirError(f"{root}: no such directory of broker scans")
    scans = []
    for entry in sorted(root.iterdir()):
        m = _SCAN_NAME.match(entry.name)
        if not m:
            continue
        try:
            doc = json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise LogDirError(f"{entry}: cannot read broker scan: {exc}") from None
        scan = BrokerScan.from_json(doc, str(entry))
        if scan.broker_id != int(m.group(1)):
            raise LogDirError(f"{entry}: holds the scan of broker {scan.broker_id}")
        scans.append(scan)
    if not scans:
        raise LogDirError(f"{root}: no broker-<id>.json scans (is the per-broker collector running?)")
    return scans


def audit_broker_scans(
    scans: Sequence[BrokerScan],
    *,
    config: CleanerConfig | None = None,
    thresholds: Thresholds | None = None,
    now_ms: int | None = None,
    metrics: Mapping[int, CleanerMetrics] | None = None,
    broker_logs: Mapping[int, BrokerLogReport] | None = None,
    live: ClusterConfig | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    record_history: bool = True,
    partitions: Sequence[int] | None = None,
    max_scan_age_ms: int = DEFAULT_MAX_SCAN_AGE_MS,
) -> CleanerAudit:
    """The audit of several brokers from their scans: what :func:`audit_log_dirs` gives with the files at
    hand. A scan older than ``max_scan_age_ms`` is a DEGRADED finding (its numbers are that old).

    The options are :func:`audit_log_dirs`' own, with the same names and meaning, so an operator moves
    from log dirs to scans without relearning them; only the input differs."""
    cfg, th = config or CleanerConfig(), thresholds or Thresholds()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    wanted = None if partitions is None else set(partitions)
    if wanted is not None:
        missing = sorted(wanted - {n for scan in scans for n in scan.partitions})
        if missing:
            raise LogDirError(f"partition(s) {missing} of {OFFSETS_TOPIC} are in none of the broker scans")
    per_broker: list[tuple[int, CleanerAudit]] = []
    notes: list[str] = []
    stale: list[Reason] = []
    for scan in scans:
        age = now - scan.scanned_at_ms
        if age > max_scan_age_ms:
            stale.append(_stale_scan(scan, age, max_scan_age_ms))
        if scan.config != cfg.to_json():
            notes.append(f"broker {scan.broker_id}: scanned with another cleaner config than this audit's")
        found = {n: pa for n, pa in scan.partitions.items() if wanted is None or n in wanted}
        one = audit_log_dir(
            _scanned_log_dir(scan, found),
            config=cfg,
            thresholds=th,
            now_ms=now,
            metrics=(metrics or {}).get(scan.broker_id),
            broker_log=(broker_logs or {}).get(scan.broker_id),
            state_dir=state_dir,
            record_history=record_history,
            partition_audits=found,
            log_dir_key=f"broker-{scan.broker_id}:{scan.log_dir}",
        )
        per_broker.append((scan.broker_id, one))
    by_partition: dict[int, list[ReplicaCopy]] = {}
    for scan in scans:
        for c in scan.copies:
            if wanted is None or c.partition in wanted:
                by_partition.setdefault(c.partition, []).append(c)
    choices = [compare_copies(p, copies) for p, copies in sorted(by_partition.items())]
    return merge_broker_audits(
        per_broker,
        choices,
        brokers={s.broker_id: s.log_dir for s in scans},
        config=cfg,
        thresholds=th,
        now_ms=now,
        live=live,
        notes=notes,
        extra_reasons=stale,
    )


def _stale_scan(scan: BrokerScan, age: int, max_scan_age_ms: int) -> Reason:
    """The finding for a scan older than the limit: its partitions are judged on old numbers."""
    return Reason(
        DEGRADED,
        "stale_broker_scan",
        f"broker {scan.broker_id}'s scan ({scan.source}) is {format_duration(age)} old "
        f"(limit {format_duration(max_scan_age_ms)}); its partitions are judged on old numbers",
        f"check the offsetops collector beside broker {scan.broker_id} (its CronJob or sidecar "
        "logs) and that it can write to the shared scans volume",
    )


def _scanned_log_dir(scan: BrokerScan, found: Mapping[int, Any]) -> LogDir:
    """The broker's log dir as its scan saw it: the scanned partitions (no segments read here)."""
    return LogDir(
        path=Path(scan.log_dir),
        partitions=tuple(
            PartitionDir(Path(scan.log_dir) / f"{OFFSETS_TOPIC}-{n}", OFFSETS_TOPIC, n, ())
            for n in sorted(found)
        ),
        checkpoint_errors=tuple(scan.notes),
    )
