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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.atomic import SHARED_FILE_MODE, write_text_atomic
from offsetops.coordinator_core.cleaner.audit import audit_log_dir, merge_broker_audits, scan_log_dir
from offsetops.coordinator_core.cleaner.broker_log import BrokerLogReport
from offsetops.coordinator_core.cleaner.config import CleanerConfig, ClusterConfig
from offsetops.coordinator_core.cleaner.metrics import CleanerMetrics
from offsetops.coordinator_core.cleaner.model import (
    DEGRADED,
    CleanerAudit,
    PartitionAudit,
    PartitionFailure,
    Reason,
    Thresholds,
)
from offsetops.coordinator_core.cleaner.scan_findings import (
    duplicate_scan_reason,
    future_scan_reason,
    unusable_scan_reason,
)
from offsetops.coordinator_core.cleaner.scan_schema import (
    MAX_PARTITION,
    ScanSchemaError,
    check_config,
    check_int,
    check_label,
    check_list,
    check_mapping,
    check_notes,
    check_partition_audit,
    check_partition_number,
    check_replica_copy,
)
from offsetops.coordinator_core.sources.logdir import (
    OFFSETS_TOPIC,
    LogDir,
    LogDirError,
    PartitionDir,
)
from offsetops.coordinator_core.sources.replicas import BatchDigest, ReplicaCopy, compare_copies, replica_copy
from offsetops.coordinator_core.timefmt import format_duration
from offsetops.coordinator_core.untrusted import MAX_BYTES, UntrustedFileError, read_regular_file

__all__ = [
    "SCAN_FORMAT",
    "BrokerScan",
    "BrokerScans",
    "audit_broker_scans",
    "partition_entry_from_json",
    "partition_entry_json",
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
#: a scan dated further than this after the audit's clock is a finding: the collector's clock is skewed
DEFAULT_MAX_SCAN_SKEW_MS = 5 * 60_000
#: the size limit of a scan file is the untrusted reader's for this kind (64 MiB)
SCAN_KIND = "broker scan"

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
        parts = {str(number): partition_entry_json(pa) for number, pa in sorted(self.partitions.items())}
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
    def from_json(cls, doc: Any, source: str) -> BrokerScan:
        """The scan in ``doc``, checked against the schema (:mod:`.scan_schema`). A malformed frame is a
        LogDirError naming the file and the field; a malformed partition entry is that partition's
        :class:`PartitionFailure`, and a malformed copy is left out with a note, so the rest is judged."""
        try:
            doc = check_mapping(doc, "the document")
            if doc.get("format") != SCAN_FORMAT:
                raise ScanSchemaError(f"format is {_label(doc.get('format'))}, expected {SCAN_FORMAT}")
            broker_id = check_int(doc.get("broker_id"), "broker_id", high=MAX_PARTITION)
            scan = cls(
                broker_id=broker_id,
                log_dir=check_label(doc.get("log_dir"), "log_dir"),
                scanned_at_ms=check_int(doc.get("scanned_at_ms"), "scanned_at_ms"),
                config=check_config(doc.get("config"), "config"),
                notes=check_notes(doc.get("notes"), "notes"),
                source=source,
            )
            parts = check_mapping(doc.get("partitions"), "partitions")
            copies = check_list(doc.get("copies"), "copies")
        except ScanSchemaError as exc:
            raise LogDirError(f"{source}: not a valid broker scan: {exc}") from None
        for key in list(parts):
            scan._add_partition(key, parts.pop(key))  # popped: the parsed entry is freed once converted
        while copies:
            where = f"copies[{len(scan.copies)}]"
            try:
                scan.copies.append(check_replica_copy(broker_id, copies.pop(0), where))
            except ScanSchemaError as exc:
                scan.notes.append(f"{source}: {where} left out of the comparison of copies: {exc}")
        return scan

    def _add_partition(self, key: Any, entry: Any) -> None:
        number, pa = partition_entry_from_json(key, entry, self.source)
        self.partitions[number] = pa


def partition_entry_json(pa: PartitionAudit | PartitionFailure) -> dict[str, Any]:
    """A scanned, unjudged partition as a scan file carries it: ``{"audit": ...}`` or ``{"failure": ...}``."""
    if isinstance(pa, PartitionFailure):
        return {"failure": pa.to_json()}
    return {"audit": partition_audit_state(pa)}


def partition_entry_from_json(
    key: Any, entry: Any, source: str | None
) -> tuple[int, PartitionAudit | PartitionFailure]:
    """The partition number and audit of a scan file's ``partitions`` entry, checked against the schema;
    a malformed entry is that partition's :class:`PartitionFailure` (a malformed key raises)."""
    where = f"partitions.{key}" if isinstance(key, str) and len(key) <= 20 else f"partitions[{_label(key)}]"
    number = check_partition_number(key, "partitions")
    try:
        entry = check_mapping(entry, where)
        if "failure" in entry:
            fail = check_mapping(entry["failure"], f"{where}.failure")
            path = check_label(fail.get("path"), f"{where}.failure.path")
            error = check_label(fail.get("error"), f"{where}.failure.error")
            return number, PartitionFailure(number, path, error)
        audit = check_partition_audit(entry.get("audit"), f"{where}.audit", central=_CENTRAL_FIELDS)
        if audit.partition != number:
            raise ScanSchemaError(f"{where}.audit.partition is {audit.partition}")
        return number, audit
    except ScanSchemaError as exc:
        return number, PartitionFailure(number, f"{source}#{where}", f"malformed in the scan: {exc}")


def _label(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _copy_json(c: ReplicaCopy) -> dict[str, Any]:
    return {
        **c.to_json(),
        "partition": c.partition,
        "leader_epochs": [list(e) for e in c.leader_epochs],
        "digests_until": c.digests_until,
        "digests": [[d.base_offset, d.last_offset, d.size, d.digest] for d in c.digests or ()],
    }


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
    now_ms: int,
    verify_crc: bool = True,
    max_digests: int = DEFAULT_MAX_DIGESTS,
) -> BrokerScan:
    """Scan every partition of one broker's log dir: the audit's per-partition part and the replica facts."""
    cfg = config or CleanerConfig()
    now = now_ms
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
    """Write ``broker-<id>.json`` into ``out_dir`` atomically, so the central run never reads half a scan,
    group-readable (the file-mode policy of :mod:`offsetops.coordinator_core.atomic`). A scan that would
    pass the reader's size limit keeps fewer batch digests per copy (the copies are then compared up to
    the last digest kept, and the scan says so), so the central run never refuses what a collector wrote."""
    limit = MAX_BYTES[SCAN_KIND]
    text = json.dumps(scan.to_json(), separators=(",", ":"), allow_nan=False)
    while len(text) > limit and any(c.digests for c in scan.copies):
        keep = max(len(c.digests or ()) for c in scan.copies) // 2
        scan.copies = [_trimmed(c, keep) for c in scan.copies]
        scan.notes.append(
            f"batch digests cut to {keep} per partition to keep the scan under {limit} bytes; "
            "copies are compared up to the last digest kept"
        )
        text = json.dumps(scan.to_json(), separators=(",", ":"), allow_nan=False)
    path = Path(out_dir) / f"broker-{scan.broker_id}.json"
    return write_text_atomic(path, text, mode=SHARED_FILE_MODE)


def _trimmed(copy: ReplicaCopy, keep: int) -> ReplicaCopy:
    digests = copy.digests or ()
    if len(digests) <= keep:
        return copy
    return dataclasses.replace(copy, digests=tuple(digests[:keep]), digests_until=digests[keep].base_offset)


@dataclass
class BrokerScans:
    """The scans of a directory, one per broker, and every file of it that was not used, as findings."""

    scans: list[BrokerScan]
    findings: list[Reason] = field(default_factory=list)

    def __iter__(self) -> Iterator[BrokerScan]:
        return iter(self.scans)

    def __len__(self) -> int:
        return len(self.scans)

    def __getitem__(self, i: int) -> BrokerScan:
        return self.scans[i]


def read_broker_scans(path: str | os.PathLike[str]) -> BrokerScans:
    """Every ``broker-<id>.json`` in ``path``, in broker order. A file that cannot be used (not a regular
    file, above :data:`MAX_BYTES` for a scan, not JSON, not a scan, another broker's) is a finding and the
    other brokers are judged; several files of one broker id (``broker-1.json``, ``broker-01.json``) are a
    finding too, and the one named as the collector names it (else the first by name) is used.
    LogDirError when the directory is unusable or holds no usable scan."""
    root = Path(path)
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        raise LogDirError(
            f"{root}: cannot list the directory of broker scans: {exc.strerror or exc}"
        ) from None
    by_broker: dict[int, list[Path]] = {}
    for entry in entries:
        m = _SCAN_NAME.match(entry.name)
        if m and len(m.group(1)) <= 10:
            by_broker.setdefault(int(m.group(1)), []).append(root / entry.name)
    out = BrokerScans([])
    problems: list[str] = []
    for broker_id, files in sorted(by_broker.items()):
        chosen = _canonical(broker_id, files)
        if len(files) > 1:
            out.findings.append(duplicate_scan_reason(broker_id, chosen, files))
        try:
            out.scans.append(_read_one(chosen, broker_id))
        except LogDirError as exc:
            problems.append(str(exc))
    if problems:
        out.findings.append(unusable_scan_reason(problems))
    if not out.scans:
        if problems:
            raise LogDirError(f"{root}: no usable broker scan: " + "; ".join(problems))
        raise LogDirError(f"{root}: no broker-<id>.json scans (is the per-broker collector running?)")
    return out


def _canonical(broker_id: int, files: Sequence[Path]) -> Path:
    """The file of ``broker_id`` used: ``broker-<id>.json`` as :func:`write_broker_scan` names it, else
    the first by name (a deterministic choice, whatever the directory order)."""
    name = f"broker-{broker_id}.json"
    return next((f for f in files if f.name == name), min(files, key=lambda f: f.name))


def _read_one(path: Path, broker_id: int) -> BrokerScan:
    try:
        raw = read_regular_file(path, kind=SCAN_KIND)
    except UntrustedFileError as exc:
        raise LogDirError(str(exc)) from None
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise LogDirError(f"{path}: not JSON: {exc}") from None
    del raw
    scan = BrokerScan.from_json(doc, str(path))
    if scan.broker_id != broker_id:
        raise LogDirError(f"{path}: holds the scan of broker {scan.broker_id}, not of broker {broker_id}")
    return scan


def audit_broker_scans(
    scans: BrokerScans | Sequence[BrokerScan],
    *,
    config: CleanerConfig | None = None,
    thresholds: Thresholds | None = None,
    now_ms: int,
    metrics: Mapping[int, CleanerMetrics] | None = None,
    broker_logs: Mapping[int, BrokerLogReport] | None = None,
    live: ClusterConfig | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    record_history: bool = True,
    partitions: Sequence[int] | None = None,
    max_scan_age_ms: int = DEFAULT_MAX_SCAN_AGE_MS,
    max_scan_skew_ms: int = DEFAULT_MAX_SCAN_SKEW_MS,
) -> CleanerAudit:
    """The audit of several brokers from their scans: what :func:`audit_log_dirs` gives with the files at
    hand. A scan older than ``max_scan_age_ms`` is a DEGRADED finding (its numbers are that old), and so
    is one dated more than ``max_scan_skew_ms`` after the audit's clock (a collector with a skewed clock
    would otherwise never look stale). A scan's paths are labels: no file of a scan is opened here.

    The options are :func:`audit_log_dirs`' own, with the same names and meaning, so an operator moves
    from log dirs to scans without relearning them; only the input differs."""
    cfg, th = config or CleanerConfig(), thresholds or Thresholds()
    now = now_ms
    wanted = None if partitions is None else set(partitions)
    if wanted is not None:
        missing = sorted(wanted - {n for scan in scans for n in scan.partitions})
        if missing:
            raise LogDirError(f"partition(s) {missing} of {OFFSETS_TOPIC} are in none of the broker scans")
    per_broker: list[tuple[int, CleanerAudit]] = []
    notes: list[str] = []
    stale: list[Reason] = list(scans.findings) if isinstance(scans, BrokerScans) else []
    for scan in scans:
        age = now - scan.scanned_at_ms
        if -age > max_scan_skew_ms:
            stale.append(future_scan_reason(scan, -age, max_scan_skew_ms))
        elif age > max_scan_age_ms:
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
            files_at_hand=False,
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
