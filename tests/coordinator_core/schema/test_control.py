from __future__ import annotations

import pytest
from offsetops.coordinator_core.schema import (
    ControlKey,
    ControlRecordType,
    EndTxnMarker,
    SchemaError,
    decode_control_key,
    decode_end_txn_marker,
    encode_control_key,
    encode_end_txn_marker,
)


@pytest.mark.parametrize(
    ("type_", "expected"),
    [
        (0, ControlRecordType.ABORT),
        (1, ControlRecordType.COMMIT),
        (2, ControlRecordType.LEADER_CHANGE),
        (6, ControlRecordType.KRAFT_VOTERS),
        (7, ControlRecordType.UNKNOWN),
        (-3, ControlRecordType.UNKNOWN),
    ],
)
def test_control_key_types(type_: int, expected: ControlRecordType) -> None:
    key = decode_control_key(encode_control_key(type_))
    assert key == ControlKey(0, type_)
    assert key.record_type is expected


def test_newer_control_key_version_is_read_as_v0() -> None:
    key = decode_control_key(bytes.fromhex("00050001ffff"))
    assert key.version == 5
    assert key.is_commit


@pytest.mark.parametrize("data", [b"", b"\x00\x00\x00", bytes.fromhex("ffff0001")])
def test_corrupt_control_key(data: bytes) -> None:
    with pytest.raises(SchemaError) as e:
        decode_control_key(data)
    assert e.value.kind == "corrupt_key"


def test_end_txn_marker() -> None:
    raw = encode_end_txn_marker(17)
    assert raw == bytes.fromhex("000000000011")
    assert decode_end_txn_marker(raw) == EndTxnMarker(0, 17)
    with pytest.raises(SchemaError):
        decode_end_txn_marker(raw[:5])
    with pytest.raises(SchemaError):
        decode_end_txn_marker(bytes.fromhex("ffff00000011"))
