"""A broker log dir on any Hadoop-compatible path, read with Spark's own readers.

Segments are read with the ``binaryFile`` source; the listing and the checkpoint files go through the
Hadoop ``FileSystem`` of the path (local, ``s3a://``, ``hdfs://``, ``abfs://`` ...), so nothing here
touches the driver's local disk.

Spark's file index skips every path whose name starts with ``_`` or ``.`` (``_SUCCESS``,
``_temporary``), and ``__consumer_offsets-N`` starts with ``_``: loading the log dir with
``recursiveFileLookup`` finds no segment at all. So the driver lists ``__consumer_offsets-N/*.log``
itself (one ``globStatus``) and hands the explicit file paths to ``binaryFile``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from coordinator_core.sources.logdir import OFFSETS_TOPIC

SEGMENT_PATH_RE = r"^(.*/)?" + re.escape(OFFSETS_TOPIC) + r"-(\d+)/(\d{20})\.log$"
_SEGMENT_RE = re.compile(SEGMENT_PATH_RE)
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

    @property
    def partitions(self) -> list[int]:
        return sorted({s.partition for s in self.segments})


def local_file(path: str) -> str:
    """``file:/x/y.log`` -> ``/x/y.log``, so that error rows name the file as the local reload does.

    Remote paths (``s3a://``, ``hdfs://``) are kept as URIs.
    """
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return parsed.path
    return path


def _fs(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath, hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def path_exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` exists, through the path's own Hadoop FileSystem."""
    hpath, fs = _fs(spark, path)
    return bool(fs.exists(hpath))


def list_log_dir(spark: SparkSession, path: str, *, partitions: list[int] | None = None) -> LogDirListing:
    """List the segments of a broker log dir, or of one ``__consumer_offsets-N`` dir.

    Raises InputPathError naming ``path`` when it does not exist or holds no segment.
    """
    hpath, fs = _fs(spark, path)
    if not fs.exists(hpath):
        raise InputPathError(f"{path}: no such file or directory")
    if not fs.getFileStatus(hpath).isDirectory():
        raise InputPathError(
            f"{path}: not a directory (expected a broker log dir or a {OFFSETS_TOPIC}-N dir)"
        )
    qualified = fs.makeQualified(hpath)
    if _PARTITION_DIR_RE.match(qualified.getName()):
        pattern = qualified.toString() + "/*.log"
        root = qualified.getParent().toString()
    else:
        pattern = qualified.toString() + f"/{OFFSETS_TOPIC}-*/*.log"
        root = qualified.toString()
    jvm = spark.sparkContext._jvm
    statuses = fs.globStatus(jvm.org.apache.hadoop.fs.Path(pattern)) or []
    found = []
    for st in statuses:
        if not st.isFile():
            continue
        p = st.getPath().toString()
        m = _SEGMENT_RE.match(p)
        if m is None:
            continue
        found.append(
            SegmentFile(p, int(m.group(2)), int(m.group(3)), int(st.getLen()), int(st.getModificationTime()))
        )
    if partitions is not None:
        wanted = set(partitions)
        missing = wanted - {s.partition for s in found}
        if missing:
            raise InputPathError(f"{path}: partition(s) {sorted(missing)} of {OFFSETS_TOPIC} not found")
        found = [s for s in found if s.partition in wanted]
    if not found:
        raise InputPathError(f"{path}: no {OFFSETS_TOPIC}-N/*.log segment files found")
    found.sort(key=lambda s: (s.partition, s.base_offset))
    return LogDirListing(root, tuple(found))


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


def read_segments(spark: SparkSession, listing: LogDirListing) -> DataFrame:
    """One row per segment: ``offsets_partition, base_offset, file, length, mtime_ms, content``.

    Read with the ``binaryFile`` source (each file is one row, whole; fine up to 2 GB, and
    ``__consumer_offsets`` rolls at 100 MiB). Partition and base offset come from the path.
    """
    nonempty = [s.path for s in listing.segments if s.size > 0]
    empty = [s for s in listing.segments if s.size == 0]
    if nonempty:
        df = spark.read.format("binaryFile").load(nonempty)
        segments = df.select(
            F.regexp_extract("path", SEGMENT_PATH_RE, 2).cast("int").alias("offsets_partition"),
            F.regexp_extract("path", SEGMENT_PATH_RE, 3).cast("long").alias("base_offset"),
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
