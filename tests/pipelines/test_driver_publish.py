"""Publishing the reload tables from the driver's rows: one file per partition, swapped in atomically,
left alone while its rows do not change; the digest file is untrusted input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from offsetops.pipelines.driver_publish import (
    DIGEST_FILE,
    SPARK_ROW_METADATA,
    publish_rows,
    spark_row_metadata,
)
from offsetops.pipelines.schemas import TABLE_SCHEMAS

from tests.support.driver_rows import PARTITIONS, UNDECODABLE_GROUP, all_kinds_rows  # noqa: F401 (fixture)


def _locations(root: Path) -> dict[str, str]:
    return {t: str(root / t) for t in TABLE_SCHEMAS}


def _files(root: Path) -> dict[tuple[str, int], tuple[str, int, int]]:
    """(table, partition) -> (file name, inode, mtime_ns) of every published partition file."""
    out = {}
    for table in TABLE_SCHEMAS:
        for folder in sorted((root / table).glob("offsets_partition=*")):
            (file,) = [f for f in folder.iterdir() if not f.name.startswith((".", "_"))]
            st = file.stat()
            out[(table, int(folder.name.split("=")[1]))] = (file.name, st.st_ino, st.st_mtime_ns)
    return out


def _publish(root: Path, rows: dict[str, list[Any]]) -> Any:
    return publish_rows(_locations(root), rows, list(range(PARTITIONS)))


def test_each_partition_is_one_file_with_spark_s_schema_in_its_footer(all_kinds_rows, tmp_path) -> None:  # noqa: F811
    outcome = _publish(tmp_path, all_kinds_rows)
    assert sum(outcome.unchanged.values()) == 0 and not outcome.warnings
    files = _files(tmp_path)
    for (table, p), (name, _ino, _mtime) in files.items():
        path = tmp_path / table / f"offsets_partition={p}" / name
        meta = pq.read_metadata(path)
        row_schema = json.loads(meta.metadata[SPARK_ROW_METADATA.encode()])
        assert row_schema == json.loads(spark_row_metadata(TABLE_SCHEMAS[table]))
        assert [f["name"] for f in row_schema["fields"]] == TABLE_SCHEMAS[table].fieldNames()[1:]
        assert all(f["metadata"]["comment"] for f in row_schema["fields"])
        assert meta.row_group(0).column(0).compression == "SNAPPY"
        assert meta.num_rows == sum(1 for r in outcome.rows[table] if r[0] == p)
    # a table without rows in a partition has no directory for it, as Spark writes it
    for table, rows in outcome.rows.items():
        assert {p for p in range(PARTITIONS) if (table, p) in files} == {r[0] for r in rows}
    groups = pq.read_table(tmp_path / "groups").column("group_id").to_pylist()
    assert UNDECODABLE_GROUP.replace("\udcff", "\ufffd") in groups


def test_unchanged_partitions_are_not_rewritten_and_changed_ones_are(all_kinds_rows, tmp_path) -> None:  # noqa: F811
    _publish(tmp_path, all_kinds_rows)
    before = _files(tmp_path)
    again = _publish(tmp_path, all_kinds_rows)
    assert sum(again.written.values()) == 0 and _files(tmp_path) == before

    changed = {t: list(rows) for t, rows in all_kinds_rows.items()}
    first = next(i for i, r in enumerate(changed["offsets"]) if r[0] == 1)
    changed["offsets"][first] = (
        *changed["offsets"][first][:4],
        changed["offsets"][first][4] + 1,
        *changed["offsets"][first][5:],
    )
    changed["members"] = [r for r in changed["members"] if r[0] != 2]  # partition 2 loses its members
    outcome = _publish(tmp_path, changed)
    after = _files(tmp_path)
    assert outcome.written["offsets"] == 1 and outcome.unchanged["offsets"] == PARTITIONS - 1
    assert after[("offsets", 1)] != before[("offsets", 1)]
    assert ("members", 2) in before and ("members", 2) not in after
    kept = {k for k in before if k not in {("offsets", 1), ("members", 2)}}
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}
    offsets = pq.read_table(tmp_path / "offsets", filters=[("offsets_partition", "=", 1)])
    assert changed["offsets"][first][4] in offsets.column("offset").to_pylist()


@pytest.mark.parametrize(
    "content",
    [
        b'{"format": 1, "schema": "ab',  # torn
        b'{"format": 99, "schema": "x", "partitions": {}}',  # foreign format
        b'{"format": 1, "schema": "not this schema", "partitions": {}}',
        b"\xff\xfe not json",
    ],
)
def test_a_torn_or_foreign_digest_file_is_ignored_with_a_warning(all_kinds_rows, tmp_path, content) -> None:  # noqa: F811
    _publish(tmp_path, all_kinds_rows)
    before = _files(tmp_path)
    (tmp_path / "offsets" / DIGEST_FILE).write_bytes(content)
    outcome = _publish(tmp_path, all_kinds_rows)
    (warning,) = outcome.warnings
    assert str(tmp_path / "offsets" / DIGEST_FILE) in warning and "written again" in warning
    assert outcome.written["offsets"] == PARTITIONS
    after = _files(tmp_path)
    assert all(after[k] != before[k] for k in before if k[0] == "offsets")
    assert all(after[k] == before[k] for k in before if k[0] != "offsets")
    assert not _publish(tmp_path, all_kinds_rows).warnings  # the rewrite recorded a sound file


def test_a_digest_file_that_is_a_link_is_not_followed(all_kinds_rows, tmp_path) -> None:  # noqa: F811
    _publish(tmp_path, all_kinds_rows)
    digests = tmp_path / "groups" / DIGEST_FILE
    elsewhere = tmp_path / "elsewhere.json"
    os.replace(digests, elsewhere)
    digests.symlink_to(elsewhere)
    outcome = _publish(tmp_path, all_kinds_rows)
    assert len(outcome.warnings) == 1 and outcome.written["groups"] == PARTITIONS
    assert not digests.is_symlink()


def test_a_file_that_is_not_the_recorded_one_is_rewritten(all_kinds_rows, tmp_path) -> None:  # noqa: F811
    """A partition written by someone else since (Spark, a copy) is never taken as unchanged."""
    _publish(tmp_path, all_kinds_rows)
    folder = tmp_path / "load_stats" / "offsets_partition=0"
    (file,) = folder.iterdir()
    os.replace(file, folder / "part-00000-0123-spark.c000.snappy.parquet")
    outcome = _publish(tmp_path, all_kinds_rows)
    assert outcome.written["load_stats"] == 1 and not outcome.warnings
    assert [f.name for f in folder.iterdir()] == [_files(tmp_path)[("load_stats", 0)][0]]


def test_a_publish_interrupted_mid_swap_is_recovered(all_kinds_rows, tmp_path) -> None:  # noqa: F811
    """A crash after the old directory was set aside and before the new one came in: the next publish
    puts the old one back (its recorded file: not rewritten) and deletes the staged one."""
    _publish(tmp_path, all_kinds_rows)
    before = _files(tmp_path)
    table = tmp_path / "offsets"
    os.rename(table / "offsets_partition=1", table / f"_offsetops-old-1-{'a' * 32}")
    staged = table / f"_offsetops-new-1-{'b' * 32}"
    staged.mkdir()
    (staged / "part-00000-half.c000.snappy.parquet").write_bytes(b"PAR1 torn")
    outcome = _publish(tmp_path, all_kinds_rows)
    assert outcome.written["offsets"] == 0
    assert _files(tmp_path) == before
    assert sorted(p.name for p in table.iterdir() if p.name.startswith("_offsetops-")) == []


def test_rows_of_a_partition_outside_the_publish_are_refused(all_kinds_rows, tmp_path) -> None:  # noqa: F811
    with pytest.raises(ValueError, match="offsets partition 2"):
        publish_rows(_locations(tmp_path), all_kinds_rows, [0, 1])
