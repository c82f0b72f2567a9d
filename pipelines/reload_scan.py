"""The cleaner audit's record scan, run in the reload's pass: each segment is read once for both.

Stage 1 of the reload folds a segment and, with a :class:`ScanPlan`, scans the same bytes
(:func:`~offsetops.coordinator_core.cleaner.scan.scan_segment`; a local segment is mapped once for
both); stage 2 merges the scans of a partition in log order beside its folds and turns the merged scan
into the partition's unjudged :class:`PartitionAudit`
(:func:`~offsetops.coordinator_core.cleaner.audit.audit_from_scan`), carried as a JSON blob. The driver
writes them all into one file (``offsetops-reload-scan/1``), stamped with what they were computed from
(:func:`scan_identity`): the cleaner audit of the same run judges them instead of reading the segments
again, and scans itself when the file is missing or belongs to another run or other inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from offsetops.coordinator_core.atomic import write_text_atomic
from offsetops.coordinator_core.cleaner.audit import audit_from_scan
from offsetops.coordinator_core.cleaner.collect import partition_entry_from_json, partition_entry_json
from offsetops.coordinator_core.cleaner.config import CleanerConfig
from offsetops.coordinator_core.cleaner.model import PartitionAudit, PartitionFailure
from offsetops.coordinator_core.cleaner.scan import PartitionScan, ScanInputs, dirty_from, scan_segment
from offsetops.coordinator_core.cleaner.scan_schema import ScanSchemaError, check_mapping
from offsetops.coordinator_core.loader import PartitionFold
from offsetops.coordinator_core.records.reader import Scan
from offsetops.coordinator_core.sources.logdir import (
    CLEANER_CHECKPOINT,
    LOG_START_CHECKPOINT,
    OFFSETS_TOPIC,
    REPLICATION_CHECKPOINT,
)
from offsetops.coordinator_core.untrusted import UntrustedFileError, read_regular_file
from offsetops.pipelines.source import NO_SEGMENT, LogDirListing, read_checkpoints
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StructField, StructType

__all__ = [
    "RELOAD_SCAN_FORMAT",
    "SCAN_BLOB_TABLE",
    "CleanerScanRequest",
    "ScanMerger",
    "ScanPlan",
    "SegmentScanner",
    "plan_scan",
    "read_reload_scan",
    "scan_identity",
    "scan_in_reload",
    "write_reload_scan",
]

RELOAD_SCAN_FORMAT = "offsetops-reload-scan/1"
#: the stage-2 blob "table" that carries a partition's audit (JSON); no table is expanded from it
SCAN_BLOB_TABLE = "_cleaner_scan"
#: the size limit of the file read back (the untrusted reader's limit for reports)
_KIND = "report"


@dataclass(frozen=True, slots=True)
class CleanerScanRequest:
    """A reload caller's ask for the cleaner scan: with what, for which run, and where to write it."""

    run_id: str
    config: CleanerConfig
    now_ms: int
    output: str | os.PathLike[str]
    verify_crc: bool = True


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """What every segment task and partition merge of the scan needs, worked out once on the driver."""

    config: CleanerConfig
    now_ms: int
    inputs: dict[int, ScanInputs]
    #: partition -> (cleaner checkpoint, log start checkpoint, high watermark)
    checkpoints: dict[int, tuple[int | None, int | None, int | None]] = field(default_factory=dict)

    def scanner(self, rb: pa.RecordBatch, i: int, file: str) -> SegmentScanner | None:
        """The scanner of stage 1's row ``i`` (a segment row of ``segment_rows``); None for a partition
        without segments."""
        inputs = self.inputs.get(rb.column("offsets_partition")[i].as_py())
        base = rb.column("base_offset")[i].as_py()
        if inputs is None or base == NO_SEGMENT:
            return None
        size, mtime = rb.column("length")[i].as_py(), rb.column("mtime_ms")[i].as_py()
        return SegmentScanner(inputs, file=file, base_offset=base, size=size, mtime_ms=mtime)


def scan_in_reload(
    spark: SparkSession, listing: LogDirListing, request: CleanerScanRequest
) -> tuple[ScanPlan, Callable[[DataFrame], None]]:
    """The plan the reload's stages scan with, and what writes the audits from its persisted blobs."""
    checkpoints, _notes = read_checkpoints(spark, listing)  # an unusable file: the audit notes it
    plan = plan_scan(listing, checkpoints, request)
    identity = scan_identity(
        request.run_id, listing, checkpoints, request.config, request.now_ms, request.verify_crc
    )

    def keep(blobs: DataFrame) -> None:
        rows = blobs.where(F.col("table") == SCAN_BLOB_TABLE).select("offsets_partition", "ipc").collect()
        write_reload_scan(request.output, identity, {r["offsets_partition"]: bytes(r["ipc"]) for r in rows})

    return plan, keep


def plan_scan(
    listing: LogDirListing, checkpoints: Mapping[str, Mapping[int, int]], request: CleanerScanRequest
) -> ScanPlan:
    """Each partition's :class:`ScanInputs` from the listing and the checkpoint files."""
    firsts: dict[int, int] = {}
    actives: dict[int, int] = {}
    for s in listing.segments:  # sorted by partition, then base offset
        firsts.setdefault(s.partition, s.base_offset)
        actives[s.partition] = s.base_offset
    inputs: dict[int, ScanInputs] = {}
    trio: dict[int, tuple[int | None, int | None, int | None]] = {}
    for p, first in firsts.items():
        ckpt = checkpoints[CLEANER_CHECKPOINT].get(p)
        start = checkpoints[LOG_START_CHECKPOINT].get(p)
        trio[p] = (ckpt, start, checkpoints[REPLICATION_CHECKPOINT].get(p))
        inputs[p] = ScanInputs(
            partition=p,
            dirty_from=dirty_from(ckpt, start, first),
            active_base=actives[p],
            verify_crc=request.verify_crc,
        )
    return ScanPlan(request.config, request.now_ms, inputs, trio)


def scan_identity(
    run_id: str,
    listing: LogDirListing,
    checkpoints: Mapping[str, Mapping[int, int]],
    config: CleanerConfig,
    now_ms: int,
    verify_crc: bool = True,
) -> dict[str, Any]:
    """What a reload's scan was computed from: the run, the partitions and their segment files (path,
    size, mtime), the checkpoints, the cleaner config and the clock. A scan belongs to an audit only
    when the audit, listing the same log dir itself, gets the same identity."""
    segments = [[s.partition, s.base_offset, s.size, s.mtime_ms, s.path] for s in listing.segments]
    ckpts = {name: sorted(values.items()) for name, values in sorted(checkpoints.items())}
    return {
        "run_id": run_id,
        "partitions": sorted({s.partition for s in listing.segments}),
        "segments": _digest(segments),
        "checkpoints": _digest(ckpts),
        "config": {k: v["value"] for k, v in config.to_json().items()},
        "now_ms": now_ms,
        "verify_crc": verify_crc,
    }


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


# -- stage 1: fold and scan one segment ------------------------------------------------------------------

SCAN_COLUMN = StructField("scan", BinaryType(), True)


def fold_schema(base: StructType) -> StructType:
    """Stage 1's output with the pickled scan of each segment beside its fold."""
    return StructType([*base.fields, SCAN_COLUMN])


class SegmentScanner:
    """The cleaner scan of one segment beside its fold: a local file is mapped once, by the fold
    (``PartitionFold.add_segment(also=...)``), and its mapping handed to :meth:`local`; remote bytes are
    scanned as they are."""

    def __init__(self, inputs: ScanInputs, *, file: str, base_offset: int, size: int, mtime_ms: int) -> None:
        self.inputs = inputs
        self.meta = {"file": file, "base_offset": base_offset, "size": size, "mtime_ms": mtime_ms}
        self.scan: PartitionScan | None = None

    def local(self, mapping: Any, walk: Scan) -> None:
        self.scan = scan_segment(mapping, self.inputs, scan=walk, **self.meta)

    def result(self, content: bytes | None, fold: PartitionFold) -> bytes:
        """The pickled scan (after the fold): of ``content``, of the mapping, or of nothing (an empty
        file, or one that could not be opened: the fold's ``io`` error says why, in the scan too)."""
        scan = self.scan
        if content is not None:
            scan = scan_segment(content, self.inputs, **self.meta)
        elif scan is None:
            scan = scan_segment(b"", self.inputs, **self.meta)
            scan.errors[:0] = [e for e in fold.stats.errors if e.kind == "io"]
        return pickle.dumps(scan, protocol=pickle.HIGHEST_PROTOCOL)


# -- stage 2: merge per partition, build the unjudged audit ------------------------------------------------


class ScanMerger:
    """The running scan of the partition a merge task is on; each partition's audit as a JSON blob."""

    def __init__(self, plan: ScanPlan) -> None:
        self.plan = plan
        self.partition: int | None = None
        self.running: PartitionScan | None = None

    def add(self, partition: int, blob: bytes | None) -> None:
        """The next segment's scan (in log order); None for a row without one."""
        if partition != self.partition:
            self.partition, self.running = partition, None
        if blob is None:
            return
        scan: PartitionScan = pickle.loads(blob)
        inputs = self.plan.inputs[partition]
        self.running = scan if self.running is None else self.running.merge(scan, inputs.dirty_from)

    def finish(self, partition: int) -> bytes | None:
        """The partition's audit entry (``partition_entry_json``), or None when it had no segment."""
        if partition != self.partition or self.running is None:
            return None
        entry = self.entry(partition, self.running)
        self.running = None
        return entry

    def entry(self, partition: int, scan: PartitionScan) -> bytes:
        """The partition's audit entry of ``scan`` (a whole partition's), as JSON."""
        doc = partition_entry_json(self.audit(partition, scan))
        return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()

    def audit(self, partition: int, scan: PartitionScan) -> PartitionAudit | PartitionFailure:
        """``audit_from_scan``; a failure is the partition's :class:`PartitionFailure`, never the job's."""
        ckpt, start, hw = self.plan.checkpoints[partition]
        try:
            return audit_from_scan(
                partition,
                scan,
                config=self.plan.config,
                now_ms=self.plan.now_ms,
                checkpoint=ckpt,
                log_start_checkpoint=start,
                high_watermark=hw,
            )
        except Exception as exc:  # reported per partition, as audit_partition_isolated does
            where = next((e.file for e in scan.errors if e.file), f"{OFFSETS_TOPIC}-{partition}")
            return PartitionFailure(partition, str(where), f"{type(exc).__name__}: {exc}")


# -- the file the cleaner audit reads ---------------------------------------------------------------------


def write_reload_scan(
    path: str | os.PathLike[str], identity: dict[str, Any], entries: dict[int, bytes]
) -> None:
    """Write the partitions' audits (JSON entries from :meth:`ScanMerger.finish`) atomically."""
    parts = ",".join(f'"{p}":{entries[p].decode()}' for p in sorted(entries))
    head = json.dumps({"format": RELOAD_SCAN_FORMAT, "identity": identity}, allow_nan=False)
    write_text_atomic(path, head[:-1] + ',"partitions":{' + parts + "}}")


def read_reload_scan(
    path: str | os.PathLike[str], identity: dict[str, Any]
) -> tuple[dict[int, PartitionAudit | PartitionFailure] | None, str]:
    """The audits a reload of this run wrote, checked field by field, or None; and why (the file is
    on a shared volume: it is read as untrusted input, and only trusted when its identity matches)."""
    try:
        doc = check_mapping(json.loads(read_regular_file(path, kind=_KIND)), "the document")
        if doc.get("format") != RELOAD_SCAN_FORMAT:
            return None, f"{path} is not a reload scan ({RELOAD_SCAN_FORMAT})"
        theirs = check_mapping(doc.get("identity"), "identity")
        differs = [k for k in identity if theirs.get(k) != identity[k]]
        if differs:
            return None, f"the reload scan in {path} was made with another {', '.join(differs)}"
        parts = check_mapping(doc.get("partitions"), "partitions")
        out = dict(partition_entry_from_json(k, v, str(path)) for k, v in parts.items())
    except FileNotFoundError:
        return None, f"no reload scan at {path}"
    except (OSError, UntrustedFileError, ValueError, RecursionError, ScanSchemaError) as exc:
        return None, f"the reload scan in {path} is unusable: {exc}"
    missing = sorted(set(identity["partitions"]) - set(out))
    if missing:
        return None, f"the reload scan in {path} lacks partitions {missing}"
    return out, f"from the reload of run {identity['run_id']}"
