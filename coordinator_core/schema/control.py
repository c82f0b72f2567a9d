"""Control records: the key (``ControlRecordType``) and the end-transaction marker value
(``EndTransactionMarker``), from ``clients/src/main/java/org/apache/kafka/common/record``."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from .types import SchemaError

_HH = struct.Struct(">hh")
_HI = struct.Struct(">hi")

CURRENT_CONTROL_KEY_VERSION = 0
CURRENT_END_TXN_MARKER_VERSION = 0


class ControlRecordType(IntEnum):
    """``ControlRecordType``; any other id is ``UNKNOWN``."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class ControlKey:
    """A control record key. ``type`` is the raw int16; :attr:`record_type` maps it to the enum."""

    version: int
    type: int

    @property
    def record_type(self) -> ControlRecordType:
        try:
            return ControlRecordType(self.type)
        except ValueError:
            return ControlRecordType.UNKNOWN

    @property
    def is_commit(self) -> bool:
        return self.type == ControlRecordType.COMMIT

    @property
    def is_abort(self) -> bool:
        return self.type == ControlRecordType.ABORT


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    version: int
    coordinator_epoch: int


def decode_control_key(data: bytes | bytearray | memoryview) -> ControlKey:
    """``ControlRecordType.parse``: at least 4 bytes; a negative version is corruption, any other version
    is read as v0. Raises :class:`SchemaError` kind ``corrupt_key``."""
    if len(data) < 4:
        raise SchemaError("corrupt_key", f"control key needs at least 4 bytes, got {len(data)}")
    version, type_ = _HH.unpack_from(data, 0)
    if version < 0:
        raise SchemaError("corrupt_key", f"invalid control key version {version}")
    return ControlKey(version, type_)


def encode_control_key(key: ControlKey | ControlRecordType | int, version: int = 0) -> bytes:
    if isinstance(key, ControlKey):
        return _HH.pack(key.version, key.type)
    return _HH.pack(version, int(key))


def decode_end_txn_marker(data: bytes | bytearray | memoryview) -> EndTxnMarker:
    """``EndTransactionMarker.deserializeValue``: int16 version (negative = corrupt; newer read as v0),
    int32 coordinator epoch. Raises :class:`SchemaError` kind ``corrupt_value``."""
    if len(data) < 6:
        raise SchemaError("corrupt_value", f"end transaction marker needs 6 bytes, got {len(data)}")
    version, epoch = _HI.unpack_from(data, 0)
    if version < 0:
        raise SchemaError("corrupt_value", f"invalid end transaction marker version {version}")
    return EndTxnMarker(version, epoch)


def encode_end_txn_marker(coordinator_epoch: int, version: int = CURRENT_END_TXN_MARKER_VERSION) -> bytes:
    return _HI.pack(version, coordinator_epoch)
