"""Read what Kafka reads, in Kafka's order (``LogLoader``), and report every anomaly of a log dir."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.sources.logdir import open_log_dir, segment_base_offset

from tests.support.mutation import copy_partition, real_partition, segments

PART = "DanielMorales9__kafkafun/__consumer_offsets-39"  # 1241 records, group values and commits


@pytest.fixture
def pdir(tmp_path: Path) -> Path:
    src = real_partition(PART)
    if not src.is_dir():
        pytest.skip("real Kafka fixtures not found")
    return copy_partition(src, tmp_path / "logs")


def _load(pdir: Path):
    [cache] = load_log_dir(pdir.parent)
    return cache


def _kinds(cache) -> list[tuple[str, str]]:
    return [(e.kind, Path(e.file).name) for e in cache.stats.errors]


def test_kafka_parses_any_digit_count() -> None:
    assert segment_base_offset("00000000000000000042.log") == 42
    assert segment_base_offset("42.log") == 42
    assert segment_base_offset("42.log.swap") is None
    assert segment_base_offset("x42.log") is None


def test_short_segment_name_is_loaded_like_kafka(pdir: Path) -> None:
    clean = _load(pdir)
    seg = segments(pdir)[0]
    seg.rename(pdir / f"{int(seg.stem)}.log")
    cache = _load(pdir)
    assert cache.stats.errors == []
    assert cache.stats.records == clean.stats.records


def test_symlink_loops_and_dangling_links_are_reported(pdir: Path) -> None:
    os.symlink("b.log", pdir / "00000000000000099999.log")
    os.symlink("00000000000000099999.log", pdir / "b.log")
    os.symlink("gone", pdir / "00000000000000088888.log")
    os.symlink("__consumer_offsets-7", pdir.parent / "__consumer_offsets-7")  # a looping partition dir
    caches = load_log_dir(pdir.parent)
    by_part = {c.partition: c for c in caches}
    assert sorted(_kinds(by_part[39])) == [
        ("bad_segment_name", "b.log"),
        ("dangling_segment", "00000000000000088888.log"),
        ("unreadable", "00000000000000099999.log"),
    ]
    assert [e.kind for e in by_part[7].stats.errors] == ["unreadable"]
    assert "symbolic links" in by_part[7].stats.errors[0].reason


def test_directory_and_leftovers_are_reported_not_read(pdir: Path) -> None:
    clean = _load(pdir)
    (pdir / "00000000000000077777.log").mkdir()
    seg = segments(pdir)[0]
    for suffix in (".swap", ".cleaned", ".deleted"):
        shutil.copy(seg, pdir / f"{seg.name}{suffix}")
    cache = _load(pdir)
    assert sorted(_kinds(cache)) == [
        ("leftover_file", f"{seg.name}.cleaned"),
        ("leftover_file", f"{seg.name}.deleted"),
        ("leftover_file", f"{seg.name}.swap"),
        ("not_a_file", "00000000000000077777.log"),
    ]
    assert cache.stats.records == clean.stats.records


def test_duplicate_base_offset_reads_the_canonical_name(pdir: Path) -> None:
    seg = segments(pdir)[0]
    shutil.copy(seg, pdir / f"{int(seg.stem)}.log")
    cache = _load(pdir)
    assert _kinds(cache) == [("duplicate_segment", f"{int(seg.stem)}.log")]
    assert open_log_dir(pdir).partitions[0].segments[0].path.name == seg.name


def test_stale_copy_named_after_the_log_cannot_win_silently(pdir: Path) -> None:
    """An old segment renamed past the end would replay old commits last: overlap is reported."""
    seg = segments(pdir)[0]
    shutil.copy(seg, pdir / "00000000000000100000.log")
    cache = _load(pdir)
    kinds = [e.kind for e in cache.stats.errors]
    assert kinds == ["segment_offset_mismatch", "overlapping_segments"]
    assert cache.stats.errors[0].offset == 0


def test_unreadable_partition_dir_is_reported(pdir: Path) -> None:
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("root without setpriv cannot drop its file permissions")
    import subprocess
    import sys

    pdir.chmod(0)
    try:
        code = (
            "from offsetops.coordinator_core.loader import load_log_dir;"
            f"[c] = load_log_dir({str(pdir.parent)!r});"
            "print([(e.kind, e.reason) for e in c.stats.errors])"
        )
        cmd = [sys.executable, "-c", code]
        if os.geteuid() == 0:
            cmd = ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).parents[3], timeout=60)
    finally:
        pdir.chmod(0o755)
    assert out.returncode == 0, out.stderr
    assert "('unreadable', 'cannot list the partition dir: Permission denied')" in out.stdout


def test_a_partition_asked_for_but_absent_is_an_error_naming_it(pdir: Path) -> None:
    from offsetops.coordinator_core.sources.logdir import LogDirError

    root = pdir.parent
    assert [p.partition for p in open_log_dir(root, partitions=[39]).partitions] == [39]
    with pytest.raises(LogDirError, match=r"partition\(s\) \[7, 40\] of __consumer_offsets not found"):
        open_log_dir(root, partitions=[40, 39, 7])
