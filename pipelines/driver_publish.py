"""The reload tables published from rows on the driver, with pyarrow instead of a Spark job.

A resumed read builds every partition's rows in the run process; handing them to Spark only to write
350 small files costs more than the read. This writes the same tables Spark's
``df.write.partitionBy("offsets_partition").parquet(location)`` writes, on a local disk:

- the same layout: ``<table>/offsets_partition=N/part-00000-<uuid>.c000.snappy.parquet``, no directory
  for a partition without rows, the partition column only in the directory name;
- the same columns and types (Spark's Arrow mapping of ``pipelines/schemas.py``), snappy-compressed,
  and Spark's schema, with the column comments, in the footer under
  ``org.apache.spark.sql.parquet.row.metadata`` (the JSON Spark writes there), so ``DESCRIBE`` and any
  Spark reader see the same schema; strings Spark cannot encode (lone surrogates of undecodable bytes)
  become U+FFFD, as Spark's own conversion makes them;
- atomic per partition: the new directory is written under a hidden name (``_``, which Spark's file
  index skips) and swapped in by two renames; a crash in between leaves the old directory aside, which
  the next publish puts back before anything else;
- a partition whose rows did not change since the last publish is left alone: a digest of its rows is
  kept in ``<table>/_offsetops_digests.json`` with the file it was written to. The file is read back as
  untrusted input: anything but a digest file this format wrote, for this schema, is ignored with a
  warning and every partition is written again, as is a partition whose file is not the one recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from offsetops.coordinator_core.atomic import fsync_dir, write_bytes_atomic, write_json_atomic
from offsetops.coordinator_core.untrusted import read_regular_file
from offsetops.pipelines.schemas import TABLE_SCHEMAS
from offsetops.pipelines.tables import Row, rows_to_arrow
from pyspark.sql.types import StructType

DIGEST_FILE = "_offsetops_digests.json"
#: the digest file's format; a file of another format is foreign
DIGEST_FORMAT = 1
#: the Parquet footer key under which Spark keeps the schema it wrote (ParquetReadSupport.SPARK_METADATA_KEY)
SPARK_ROW_METADATA = "org.apache.spark.sql.parquet.row.metadata"
PARTITION_COLUMN = "offsets_partition"
_PREFIX = "_offsetops-"  # hidden from Spark's file index (it skips names starting with "_")
_PART_FILE = re.compile(r"^part-00000-[0-9a-f]{32}\.c000\.snappy\.parquet$")
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_SURROGATES = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class PartitionFile:
    """What the digest file records of one published partition: the rows' digest and its file."""

    digest: str
    file: str | None  # None: the partition had no rows, so it has no directory
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class PublishOutcome:
    """Per table, the partitions written (or removed) and those left as they were; and the warnings."""

    written: dict[str, int]
    unchanged: dict[str, int]
    warnings: tuple[str, ...]
    rows: dict[str, list[Row]]  # the rows as the files hold them (what a reader gets back)


def spark_row_metadata(schema: StructType) -> str:
    """The footer's ``org.apache.spark.sql.parquet.row.metadata``: the data schema's JSON as Spark writes
    it (the partition column lives in the directory name, not in the file)."""
    data = StructType([f for f in schema.fields if f.name != PARTITION_COLUMN])
    return json.dumps(data.jsonValue(), separators=(",", ":"), ensure_ascii=False)


def _schema_id(schema: StructType) -> str:
    return hashlib.sha256(spark_row_metadata(schema).encode("utf-8")).hexdigest()


def as_stored(rows: Sequence[Row]) -> list[Row]:
    """``rows`` with every lone surrogate (a byte the decoder could not read as UTF-8, kept by
    ``surrogateescape``) as U+FFFD, which is what Spark stores for it; rows without one are kept as is."""

    def text(value: Any) -> Any:
        if isinstance(value, str):
            return _SURROGATES.sub("\ufffd", value)
        if isinstance(value, list | tuple):
            return type(value)(text(v) for v in value)
        if isinstance(value, dict):
            return {k: text(v) for k, v in value.items()}
        return value

    if "\\ud" not in repr(rows):  # repr writes every surrogate as an escape: none here (the usual case)
        return list(rows)
    return [tuple(text(v) for v in r) if _has_surrogate(r) else r for r in rows]


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return not value.isascii() and _SURROGATES.search(value) is not None
    if isinstance(value, list | tuple):
        return any(_has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_surrogate(v) for v in value.values())
    return False


def parquet_bytes(rows: Sequence[Row], schema: StructType) -> bytes:
    """One partition's rows (tuples in schema order) as the Parquet file Spark would write for it."""
    table = rows_to_arrow(rows, schema).drop_columns([PARTITION_COLUMN])
    table = table.replace_schema_metadata(None)
    sink = pa.BufferOutputStream()
    # Spark's schema only: no Arrow schema (Spark writes none), its key added after the data.
    with pq.ParquetWriter(sink, table.schema, compression="snappy", store_schema=False) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({SPARK_ROW_METADATA: spark_row_metadata(schema)})
    return sink.getvalue().to_pybytes()


def rows_digest(rows: Sequence[Row], schema: StructType) -> str:
    """A digest of one partition's rows and the schema they are written with."""
    h = hashlib.sha256(_schema_id(schema).encode("ascii"))
    h.update(repr(list(rows)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def publish_rows(
    locations: Mapping[str, str],
    rows: Mapping[str, Sequence[Row]],
    partitions: Sequence[int],
    *,
    schemas: Mapping[str, StructType] = TABLE_SCHEMAS,
) -> PublishOutcome:
    """Replace ``partitions`` of each table at ``locations`` (local directories) with ``rows``, leaving the
    partitions whose rows did not change and every other partition as they are."""
    written: dict[str, int] = {}
    unchanged: dict[str, int] = {}
    warnings: list[str] = []
    stored: dict[str, list[Row]] = {}
    for name, location in locations.items():
        schema = schemas[name]
        if schema.fields[0].name != PARTITION_COLUMN:
            raise ValueError(f"table {name}: the first column is not {PARTITION_COLUMN}")
        stored[name] = as_stored(rows.get(name, ()))
        n_written, n_kept = _publish_table(Path(location), stored[name], partitions, schema, warnings.append)
        written[name], unchanged[name] = n_written, n_kept
    return PublishOutcome(written, unchanged, tuple(warnings), stored)


def _publish_table(
    root: Path,
    rows: list[Row],
    partitions: Sequence[int],
    schema: StructType,
    warn: Callable[[str], None],
) -> tuple[int, int]:
    root.mkdir(parents=True, exist_ok=True)
    _recover(root)
    recorded = read_digests(root, schema, warn)
    by_partition: dict[int, list[Row]] = {int(p): [] for p in partitions}
    for r in rows:
        if r[0] not in by_partition:
            raise ValueError(f"{root}: a row of offsets partition {r[0]}, which this publish does not cover")
        by_partition[r[0]].append(r)
    entries = {p: e for p, e in recorded.items() if p not in by_partition}
    written = 0
    for p, part_rows in sorted(by_partition.items()):
        digest = rows_digest(part_rows, schema)
        old = recorded.get(p)
        if old is not None and old.digest == digest and _on_disk(root, p) == _file_of(old):
            entries[p] = old
            continue
        entries[p] = _replace_partition(root, p, part_rows, schema, digest)
        written += 1
    write_json_atomic(root / DIGEST_FILE, _digest_doc(schema, entries))
    return written, len(by_partition) - written


def _partition_dir(root: Path, p: int) -> Path:
    return root / f"{PARTITION_COLUMN}={p}"


def _file_of(entry: PartitionFile) -> tuple[str, int, int] | None:
    return None if entry.file is None else (entry.file, entry.size, entry.mtime_ns)


def _on_disk(root: Path, p: int) -> tuple[str, int, int] | bool | None:
    """The one file of partition ``p`` (name, size, mtime), None without a directory; False for anything
    else (several files, a link, a directory that is not one), which is never taken as unchanged."""
    folder = _partition_dir(root, p)
    if not os.path.lexists(folder):
        return None
    if folder.is_symlink() or not folder.is_dir():
        return False
    names = [n for n in os.listdir(folder) if not n.startswith((".", "_"))]
    if len(names) != 1:
        return False
    st = os.stat(folder / names[0], follow_symlinks=False)
    return (names[0], st.st_size, st.st_mtime_ns)


def _replace_partition(root: Path, p: int, rows: list[Row], schema: StructType, digest: str) -> PartitionFile:
    """Write partition ``p`` under a hidden name and swap it in; without rows, remove its directory."""
    target = _partition_dir(root, p)
    token = uuid.uuid4().hex
    if not rows:
        _swap(root, p, None, token)
        return PartitionFile(digest, None, 0, 0)
    staged = root / f"{_PREFIX}new-{p}-{token}"
    name = f"part-00000-{token}.c000.snappy.parquet"
    write_bytes_atomic(staged / name, parquet_bytes(rows, schema))
    _swap(root, p, staged, token)
    st = os.stat(target / name, follow_symlinks=False)
    return PartitionFile(digest, name, st.st_size, st.st_mtime_ns)


def _swap(root: Path, p: int, staged: Path | None, token: str) -> None:
    """The old directory of ``p`` aside, ``staged`` in its place (none: the partition has no rows), the
    old one deleted: a reader sees the old partition or the new one, never part of either."""
    target = _partition_dir(root, p)
    aside = root / f"{_PREFIX}old-{p}-{token}"
    if os.path.lexists(target):
        os.rename(target, aside)
    if staged is not None:
        os.rename(staged, target)
    fsync_dir(root)
    if os.path.lexists(aside):
        _remove(aside)


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)


_LEFTOVER = re.compile(r"^" + re.escape(_PREFIX) + r"(new|old)-(\d+)-[0-9a-f]{32}$")


def _recover(root: Path) -> None:
    """After a crash mid-publish: a partition set aside and not replaced is put back; staged and set-aside
    directories are deleted."""
    for name in sorted(os.listdir(root)):
        m = _LEFTOVER.match(name)
        if m is None:
            continue
        target = _partition_dir(root, int(m.group(2)))
        if m.group(1) == "old" and not os.path.lexists(target):
            os.rename(root / name, target)
        else:
            _remove(root / name)


def forget_digests(location: str) -> None:
    """Drop the digests of a table about to be written by Spark (its files are then not the recorded ones)."""
    with_digests = Path(location) / DIGEST_FILE
    if os.path.lexists(with_digests):
        with_digests.unlink()


def _digest_doc(schema: StructType, entries: Mapping[int, PartitionFile]) -> dict[str, Any]:
    return {
        "format": DIGEST_FORMAT,
        "schema": _schema_id(schema),
        "partitions": {
            str(p): {"digest": e.digest, "file": e.file, "size": e.size, "mtime_ns": e.mtime_ns}
            for p, e in sorted(entries.items())
        },
    }


def read_digests(root: Path, schema: StructType, warn: Callable[[str], None]) -> dict[int, PartitionFile]:
    """The digests recorded under ``root`` for ``schema``; none (with a warning) when the file is anything
    else than one this format wrote for this schema."""
    path = root / DIGEST_FILE
    if not os.path.lexists(path):
        return {}
    try:
        doc = json.loads(read_regular_file(path, kind="state"))
        return _parse_digests(doc, _schema_id(schema))
    except (OSError, ValueError) as exc:
        warn(f"{path}: ignored ({exc}); every partition of the table is written again")
        return {}


def _parse_digests(doc: Any, schema_id: str) -> dict[int, PartitionFile]:
    if not isinstance(doc, dict) or doc.get("format") != DIGEST_FORMAT:
        raise ValueError(f"not a digest file of format {DIGEST_FORMAT}")
    if doc.get("schema") != schema_id:
        raise ValueError("recorded for another schema of the table")
    parts = doc.get("partitions")
    if not isinstance(parts, dict):
        raise ValueError("no partitions object")
    out: dict[int, PartitionFile] = {}
    for key, e in parts.items():
        if not (isinstance(key, str) and key.isdigit() and len(key) <= 9 and isinstance(e, dict)):
            raise ValueError(f"bad partition entry {key!r}")
        digest, file, size, mtime = e.get("digest"), e.get("file"), e.get("size"), e.get("mtime_ns")
        if not (isinstance(digest, str) and _DIGEST.match(digest)):
            raise ValueError(f"partition {key}: bad digest")
        if not (file is None or (isinstance(file, str) and _PART_FILE.match(file))):
            raise ValueError(f"partition {key}: bad file name")
        if not (isinstance(size, int) and isinstance(mtime, int) and _count(size) and _count(mtime)):
            raise ValueError(f"partition {key}: bad size or mtime_ns")
        out[int(key)] = PartitionFile(digest, file, size, mtime)
    return out


def _count(value: object) -> bool:
    """A non-negative integer (not a bool) as JSON gives it."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
