"""The CRC-32C the Python reader checks every magic-2 batch with."""

from __future__ import annotations

import builtins
import subprocess
import sys

import pytest
from offsetops.coordinator_core.records.crc import crc32c


def test_the_checksum_is_crc32c_and_continues_from_a_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the catalogued check value of CRC-32C (Castagnoli)
    assert crc32c(b"56789", crc32c(b"1234")) == 0xE3069283


def test_the_package_is_imported_once_not_once_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk of 90,000 one-record batches checks 90,000 checksums: the import is paid on the first."""
    crc32c(b"first")
    asked: list[str] = []
    real = builtins.__import__

    def counting(name: str, *args: object, **kwargs: object) -> object:
        if name == "crc32c":
            asked.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", counting)
    for i in range(100):
        crc32c(i.to_bytes(4, "big"))
    assert asked == []


def test_the_reader_does_not_import_the_package_until_a_checksum_is_asked() -> None:
    code = (
        "import sys; import offsetops.coordinator_core.records.reader; "
        "assert 'crc32c' not in sys.modules, 'imported at start-up'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
