"""Bad input at the command line: one-line errors with the documented exit codes, never a traceback;
data strings escaped in text output; --strict counts every error the output shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from offsetops.coordinator_core.records import build_record_batch
from offsetops.coordinator_core.schema import GroupMetadataKey, GroupMetadataValue, encode_key, encode_value

from offsetops.cli import main
from tests.support.mutation import copy_partition, real_partition

REPO = Path(__file__).resolve().parents[2]
REAL = "DanielMorales9__kafkafun/__consumer_offsets-39"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    src = real_partition(REAL)
    if not src.is_dir():
        pytest.skip("real Kafka fixtures not found")
    copy_partition(src, tmp_path / "logs")
    return tmp_path / "logs"


@pytest.mark.parametrize(
    "argv",
    [
        ["reload", "{d}", "--num-partitions", "0"],
        ["expire", "{d}", "--num-partitions", "0"],
        ["expire", "{d}", "--retention-ms", "-5"],
        ["expire", "{d}", "--forecast-hours", "-1"],
        ["expire", "{d}", "--broker-version", "5"],
        ["audit", "{d}", "--config", "min.cleanable.dirty.ratio=2"],
        ["audit", "{d}", "--now", "-1"],
        ["reload", "{d}", "--max-batch-bytes", "0"],
    ],
)
def test_nonsensical_values_are_usage_errors(logdir: Path, capsys, argv: list[str]) -> None:
    argv = [a.format(d=logdir) for a in argv]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert "error:" in err


def test_decode_unknown_record_type_says_why(capsys) -> None:
    code, out, err = run(capsys, "decode", "--key", "0063000161")
    assert code == 1
    assert "record type 99 is not a __consumer_offsets record type" in err
    assert '"type":"99"' in out


@pytest.mark.parametrize("command", ["reload", "dump", "audit", "expire"])
def test_symlink_loops_never_give_a_traceback(logdir: Path, capsys, command: str) -> None:
    pdir = logdir / "__consumer_offsets-39"
    os.symlink("loop.log", pdir / "00000000000000099999.log")
    os.symlink("00000000000000099999.log", pdir / "loop.log")
    os.symlink("__consumer_offsets-3", logdir / "__consumer_offsets-3")
    code, _out, err = run(capsys, command, str(logdir))
    assert "Traceback" not in err
    assert code in (0, 1, 2)
    if command in ("reload", "dump"):
        assert "unreadable" in err and "Too many levels of symbolic links" in err


def test_unusable_root_is_exit_2(tmp_path: Path, capsys) -> None:
    os.symlink("root", tmp_path / "root")
    code, _out, err = run(capsys, "reload", str(tmp_path / "root"))
    assert code == 2
    assert "symbolic links" in err


def _write(pdir: Path, batches: list[bytes]) -> None:
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"".join(batches))


def test_dump_strict_fails_on_key_and_value_errors(tmp_path: Path, capsys) -> None:
    good_key = encode_key(GroupMetadataKey(group="g"))
    batches = [
        build_record_batch([(b"\x00\x01\x00\x30ab", b"\x00\x03", 0)], base_offset=0),  # corrupt key
        build_record_batch([(good_key, b"\x00\x09zz", 0)], base_offset=1),  # unknown value version
    ]
    _write(tmp_path / "__consumer_offsets-0", batches)
    code, out, err = run(capsys, "dump", str(tmp_path), "--strict")
    assert code == 1
    assert "corrupt_key" in err and "unknown_value_version" in err
    assert "key: Error:" in out
    code, _out, _err = run(capsys, "dump", str(tmp_path))
    assert code == 0  # without --strict the errors are listed, not fatal


def test_dump_control_key_error_is_shown_and_counted(tmp_path: Path, capsys) -> None:
    bad_control = build_record_batch(
        [(b"\x00", b"\x00\x00\x00\x00\x00\x01", 0)], base_offset=0, is_control=True
    )
    _write(tmp_path / "__consumer_offsets-0", [bad_control])
    code, out, _err = run(capsys, "dump", str(tmp_path), "--strict", "--json")
    assert code == 1
    assert '"type": "error"' in out and "control record key" in out


def _hostile_group(tmp_path: Path, group: str) -> Path:
    value = encode_value(
        GroupMetadataValue(
            version=3, protocol_type="consumer\x1b[2J", generation=1, protocol="range", leader=None,
            current_state_timestamp=0, members=(),
        )
    )  # fmt: skip
    key = encode_key(GroupMetadataKey(group=group))
    _write(tmp_path / "__consumer_offsets-0", [build_record_batch([(key, value, 0)], base_offset=0)])
    return tmp_path


def test_reload_text_escapes_group_ids(tmp_path: Path, capsys) -> None:
    root = _hostile_group(tmp_path, "evil\ngroup\x1b[31m")
    code, out, _err = run(capsys, "reload", str(root), "--num-partitions", "1")
    assert code == 0
    assert "\x1b" not in out
    assert "'evil\\ngroup\\x1b[31m'" in out
    assert all(not line.startswith("group") for line in out.splitlines())


def test_invalid_utf8_group_id_under_a_strict_ascii_stdout(tmp_path: Path) -> None:
    key = b"\x00\x02\x00\x04\xff\xfe\xc3\xa9"  # a group id that is not UTF-8, then an e-acute
    value = encode_value(
        GroupMetadataValue(
            version=3, protocol_type="consumer", generation=1, protocol="range", leader=None,
            current_state_timestamp=0, members=(),
        )
    )  # fmt: skip
    _write(tmp_path / "__consumer_offsets-0", [build_record_batch([(key, value, 0)], base_offset=0)])
    env = {**os.environ, "PYTHONIOENCODING": "ascii:strict"}
    for command in ("reload", "dump"):
        out = subprocess.run(
            [sys.executable, "-m", "offsetops.cli", command, str(tmp_path)],
            capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
        assert "\\udcff" in out.stdout or "\\xff" in out.stdout or "\\\\xff" in out.stdout
