"""A broker log dir on any Hadoop-compatible path, read with Spark's own readers.

Segments are read with the ``binaryFile`` source; the listing and the checkpoint files go through the
Hadoop ``FileSystem`` of the path (local, ``s3a://``, ``hdfs://``, ``abfs://`` ...), so nothing here
touches the driver's local disk.

Spark's file index skips every path whose name starts with ``_`` or ``.`` (``_SUCCESS``,
``_temporary``), and ``__consumer_offsets-N`` starts with ``_``: loading the log dir with
``recursiveFileLookup`` finds no segment at all. So the driver lists ``__consumer_offsets-N/*.log``
itself (one ``globStatus``) and hands the explicit file paths to ``binaryFile``.

A local log dir (a plain path or ``file:``) is listed with ``offsetops.coordinator_core.sources.logdir``, the
listing the single-process reload uses, so both see the same segments in the same order and report
the same anomalies (symlink loops, unreadable dirs, leftovers, duplicates). Its segments are then read
on the executors straight from the file (memory-mapped, zero tails skipped without reading them)
instead of as whole ``binaryFile`` rows. Remote paths are listed with the same naming rules.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.sources.logdir import (
    CLEANER_CHECKPOINT,
    LOG_START_CHECKPOINT,
    OFFSETS_TOPIC,
    REPLICATION_CHECKPOINT,
    LogDirError,
    classify_segment_name,
    dedupe_segments,
    only_partitions,
    open_log_dir,
    read_offset_checkpoint,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

_PARTITION_DIR_RE = re.compile("^" + re.escape(OFFSETS_TOPIC) + r"-(\d+)$")


class InputPathError(Exception):
    """The input path does not exist or holds no ``__consumer_offsets`` segments (names the path)."""


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """One segment as listed by the driver."""

    path: str
    partition: int
    base_offset: int
    size: int
    mtime_ms: int


@dataclass(frozen=True, slots=True)
class LogDirListing:
    """The log dir root (where the checkpoint files live) and its segments, sorted."""

    root: str
    segments: tuple[SegmentFile, ...]
    # (partition, anomaly) found while listing, in listing order; a partition may have only these.
    anomalies: tuple[tuple[int, DecodeError], ...] = ()
    # True when the segments are local files the executors can open themselves.
    local: bool = False

    @property
    def partitions(self) -> list[int]:
        return sorted({s.partition for s in self.segments} | {p for p, _e in self.anomalies})

    def anomalies_of(self, partition: int) -> list[DecodeError]:
        return [e for p, e in self.anomalies if p == partition]

    def bytes_per_partition(self) -> dict[int, int]:
        """The bytes of each partition's segment files: what a job that reads them whole reads."""
        out = dict.fromkeys(self.partitions, 0)
        for s in self.segments:
            out[s.partition] += s.size
        return out


def local_file(path: str) -> str:
    """``file:/x/y.log`` -> ``/x/y.log``, so that error rows name the file as the local reload does.

    Remote paths (``s3a://``, ``hdfs://``) are kept as URIs.
    """
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return parsed.path
    return path


def hadoop_path(spark: SparkSession, path: str) -> Any:
    """``org.apache.hadoop.fs.Path(path)`` in the session's JVM (py4j objects are untyped)."""
    jvm: Any = spark.sparkContext._jvm
    return jvm.org.apache.hadoop.fs.Path(path)


def hadoop_fs(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """``path`` as a Hadoop Path, and the FileSystem its scheme selects (local, s3a://, hdfs://)."""
    hpath = hadoop_path(spark, path)
    jsc: Any = spark.sparkContext._jsc
    return hpath, hpath.getFileSystem(jsc.hadoopConfiguration())


def path_exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` exists, through the path's own Hadoop FileSystem."""
    hpath, fs = hadoop_fs(spark, path)
    return bool(fs.exists(hpath))


def delete_path(spark: SparkSession, path: str) -> None:
    """Delete ``path`` recursively, if it exists, through its own Hadoop FileSystem."""
    hpath, fs = hadoop_fs(spark, path)
    if fs.exists(hpath):
        fs.delete(hpath, True)


def is_local(path: str) -> bool:
    """Whether ``path`` is on the local file system (no scheme, or ``file:``)."""
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and path[1:2] == ":")


def _list_local(path: str, partitions: list[int] | None) -> LogDirListing:
    try:
        logdir = open_log_dir(local_file(path), partitions=partitions)
    except LogDirError as exc:
        raise InputPathError(str(exc)) from None
    found = [
        SegmentFile(str(s.path), p.partition, s.base_offset, s.size, s.mtime_ms)
        for p in logdir.partitions
        for s in p.segments
    ]
    anomalies = tuple((p.partition, e) for p in logdir.partitions for e in p.anomalies)
    if not found and not anomalies:
        raise InputPathError(f"{path}: no {OFFSETS_TOPIC}-N/*.log segment files found")
    return LogDirListing(str(logdir.path), tuple(found), anomalies, local=True)


def list_log_dir(
    spark: SparkSession | None, path: str, *, partitions: list[int] | None = None
) -> LogDirListing:
    """List the segments of a broker log dir, or of one ``__consumer_offsets-N`` dir (a local one without
    a Spark session).

    Raises InputPathError naming ``path`` when it does not exist or holds no segment.
    """
    if is_local(path):
        return _list_local(path, partitions)
    session = _session_for(spark, path)
    hpath, fs = hadoop_fs(session, path)
    if not fs.exists(hpath):
        raise InputPathError(f"{path}: no such file or directory")
    if not fs.getFileStatus(hpath).isDirectory():
        raise InputPathError(
            f"{path}: not a directory (expected a broker log dir or a {OFFSETS_TOPIC}-N dir)"
        )
    qualified = fs.makeQualified(hpath)
    if _PARTITION_DIR_RE.match(qualified.getName()):
        pattern = qualified.toString() + "/*.log*"
        root = qualified.getParent().toString()
    else:
        pattern = qualified.toString() + f"/{OFFSETS_TOPIC}-*/*.log*"
        root = qualified.toString()
    statuses = fs.globStatus(hadoop_path(session, pattern)) or []
    candidates: list[SegmentFile] = []
    anomalies: list[tuple[int, DecodeError]] = []
    for st in statuses:
        p = st.getPath().toString()
        parent = _PARTITION_DIR_RE.match(st.getPath().getParent().getName())
        if parent is None:
            continue
        part = int(parent.group(1))
        kind, value = classify_segment_name(st.getPath().getName())
        if kind == "skip":
            continue
        if kind != "segment":
            anomalies.append((part, DecodeError(kind, str(value), p, part)))
            continue
        if not st.isFile():
            anomalies.append(
                (part, DecodeError("not_a_file", "segment name, but not a file (not read)", p, part))
            )
            continue
        assert isinstance(value, int)  # a segment's name gives its base offset
        candidates.append(SegmentFile(p, part, value, int(st.getLen()), int(st.getModificationTime())))
    found = []
    by_partition: dict[int, list[SegmentFile]] = {}
    for s in candidates:
        by_partition.setdefault(s.partition, []).append(s)
    for part, segs in sorted(by_partition.items()):
        kept, dupes = dedupe_segments(
            segs, key=lambda s: (s.base_offset, s.path.rsplit("/", 1)[-1]), partition=part
        )
        found.extend(kept)
        anomalies.extend((part, e) for e in dupes)
    if partitions is not None:
        found = only_partitions(found, partitions, where=path, topic=OFFSETS_TOPIC, error=InputPathError)
        wanted = set(partitions)
        anomalies = [(p, e) for p, e in anomalies if p in wanted]
    if not found and not anomalies:
        raise InputPathError(f"{path}: no {OFFSETS_TOPIC}-N/*.log segment files found")
    found.sort(key=lambda s: (s.partition, s.base_offset))
    return LogDirListing(root, tuple(found), tuple(anomalies))


SEGMENTS_SCHEMA = StructType(
    [
        StructField("offsets_partition", IntegerType(), True),
        StructField("base_offset", LongType(), True),
        StructField("file", StringType(), True),
        StructField("length", LongType(), True),
        StructField("mtime_ms", LongType(), True),
        StructField("content", BinaryType(), True),
    ]
)
"""What :func:`read_segments` returns: one row per segment file, whole."""


#: The ``base_offset`` of a row that stands for a partition with listing anomalies but no segment.
NO_SEGMENT = -1


def segment_rows(spark: SparkSession, listing: LogDirListing) -> DataFrame:
    """What the reload folds: ``read_segments`` for remote paths; for a local listing, one row per
    segment *without* its content (the executor maps the file itself, so memory stays bounded
    whatever the file holds, a zero tail included); plus a ``NO_SEGMENT`` row for each partition that
    has listing anomalies but no readable segment, so that its errors are reported too.
    """
    if listing.local:
        rows = [(s.partition, s.base_offset, s.path, s.size, s.mtime_ms, None) for s in listing.segments]
        segments = spark.createDataFrame(rows, SEGMENTS_SCHEMA)
    else:
        segments = read_segments(spark, listing)
    with_segments = {s.partition for s in listing.segments}
    bare = sorted({p for p, _e in listing.anomalies} - with_segments)
    if not bare:
        return segments
    marks = [(p, NO_SEGMENT, "", 0, 0, None) for p in bare]
    return segments.unionByName(spark.createDataFrame(marks, SEGMENTS_SCHEMA))


def read_segments(spark: SparkSession, listing: LogDirListing) -> DataFrame:
    """One row per segment: ``offsets_partition, base_offset, file, length, mtime_ms, content``.

    Read with the ``binaryFile`` source (each file is one row, whole; fine up to 2 GB, and
    ``__consumer_offsets`` rolls at 100 MiB). Partition and base offset come from the listing.
    """
    nonempty = [s.path for s in listing.segments if s.size > 0]
    empty = [s for s in listing.segments if s.size == 0]
    if nonempty:
        df = spark.read.format("binaryFile").load(nonempty)
        # Partition and base offset from the listing (names like 5.log parse as Kafka parses them).
        where = spark.createDataFrame(
            [(s.path, s.partition, s.base_offset) for s in listing.segments if s.size > 0],
            "lpath string, offsets_partition int, base_offset long",
        )
        df = df.join(F.broadcast(where), df["path"] == where["lpath"])
        segments = df.select(
            F.col("offsets_partition"),
            F.col("base_offset"),
            F.col("path").alias("file"),
            F.col("length"),
            (F.unix_millis(F.col("modificationTime"))).alias("mtime_ms"),
            F.col("content"),
        )
    else:
        segments = spark.createDataFrame([], SEGMENTS_SCHEMA)
    if not empty:
        return segments
    # Spark's file sources skip zero-length files, but an empty segment still counts: right after a
    # roll the active segment is empty and bounds the cleanable range, and a partition may hold nothing
    # else. They come from the driver's listing instead.
    rows = [(s.partition, s.base_offset, s.path, 0, s.mtime_ms, bytearray()) for s in empty]
    return segments.unionByName(spark.createDataFrame(rows, SEGMENTS_SCHEMA))


def read_checkpoint_text(spark: SparkSession, root: str, name: str) -> str | None:
    """The text of a checkpoint file in the log dir root (Spark's text reader), None when absent."""
    path = root.rstrip("/") + "/" + name
    if not path_exists(spark, path):
        return None
    lines = spark.read.text(path, wholetext=True).collect()
    return lines[0][0] if lines else ""


def parse_checkpoint(text: str | None, name: str) -> dict[tuple[str, int], int]:
    """Parse checkpoint text with the core reader (same rules, errors name the file)."""
    if text is None:
        return {}
    with tempfile.TemporaryDirectory(prefix="offsetops-ckpt-") as tmp:
        path = Path(tmp) / name
        path.write_text(text, encoding="utf-8")
        try:
            return read_offset_checkpoint(path)
        except LogDirError as exc:
            raise LogDirError(str(exc).replace(str(path), name)) from None


def _session_for(spark: SparkSession | None, path: str) -> SparkSession:
    """The session that reads ``path`` through Hadoop (only local files are read without one)."""
    if spark is None:
        raise ValueError(f"{path}: not on a local disk, and no Spark session to read it with")
    return spark


def read_checkpoints(
    spark: SparkSession | None, listing: LogDirListing
) -> tuple[dict[str, dict[int, int]], list[str]]:
    """``{checkpoint name: {partition: offset}}`` for our topic, plus notes for unusable files. A local log
    dir's files are read directly by the core reader (checked, size-bounded: the same rules and errors),
    others through Spark."""
    out: dict[str, dict[int, int]] = {}
    notes: list[str] = []
    for name in (CLEANER_CHECKPOINT, LOG_START_CHECKPOINT, REPLICATION_CHECKPOINT):
        try:
            if listing.local:
                entries = read_offset_checkpoint(Path(listing.root) / name)
            else:
                session = _session_for(spark, listing.root)
                entries = parse_checkpoint(read_checkpoint_text(session, listing.root, name), name)
        except LogDirError as exc:
            notes.append(str(exc) if listing.local else f"{listing.root}/{exc}")
            entries = {}
        out[name] = {p: off for (t, p), off in entries.items() if t == OFFSETS_TOPIC}
    return out, notes
