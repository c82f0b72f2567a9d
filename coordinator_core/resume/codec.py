"""The resume state's file format: a checked binary container, never pickle (the file is untrusted).

Layout (integers little-endian)::

    header  magic "OFOPSRES" | u16 format version | u16 0 | u64 body length | sha256 of the body
    body    u64 n + meta (UTF-8 JSON: the resume point, the fold's counters, errors and files)
            entries  latest            (key -> record offset, base offset, position, value or None)
            entries  open transactions (the same, with a producer id column)
            int map  created           (group part of an offset key -> offset)
            int map  tomb_max          (key -> offset of its latest tombstone)
            i64[]    invalid_values    (record offsets whose value failed validation)

Every count and length is checked against the bytes that remain before anything is allocated, the
whole file against :data:`MAX_STATE_BYTES`; any mismatch is one :class:`StateFormatError` with the
reason. A checksum only proves the file is whole: what it says is checked again by the caller.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from array import array
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "MAX_STATE_BYTES",
    "Cursor",
    "StateFormatError",
    "StateTables",
    "blob",
    "column",
    "decode_state",
    "encode_state",
    "meta_blob",
    "seal",
    "unseal",
]

MAGIC = b"OFOPSRES"
FORMAT_VERSION = 1
#: the largest state file read or written (the survivors of one partition, their values included)
MAX_STATE_BYTES = 2 << 30
_HEADER = struct.Struct("<8sHHQ32s")
_U64 = struct.Struct("<Q")
_ENTRY_COLUMNS = 4 + 8 + 8 + 8 + 4  # key length, offset, base offset, position, value length
_LITTLE = sys.byteorder == "little"

Entry = tuple[int, int, int, "bytes | None"]


class StateFormatError(ValueError):
    """A state file that is not one offsetops wrote in this format: ``code`` and a reason."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code


@dataclass(frozen=True, slots=True)
class StateTables:
    """What a state file holds besides its meta: the fold's containers (``loader.PartitionFold``)."""

    latest: dict[bytes, Entry]
    open_txns: dict[int, dict[bytes, Entry]]
    created: dict[bytes, int]
    tomb_max: dict[bytes, int]
    invalid_values: frozenset[int]


# -- writing -----------------------------------------------------------------------------------------


def column(code: str, values) -> bytes:
    """``values`` as a little-endian array of ``code`` items."""
    arr = array(code, values)
    if not _LITTLE:
        arr.byteswap()
    return arr.tobytes()


def blob(parts) -> bytes:
    """``parts`` joined, after their total length (u64)."""
    data = b"".join(parts)
    return _U64.pack(len(data)) + data


def meta_blob(meta: dict[str, Any]) -> bytes:
    """``meta`` as compact standard JSON (no NaN), in a :func:`blob`."""
    return blob([json.dumps(meta, separators=(",", ":"), allow_nan=False).encode()])


def _entries(items: list[tuple[bytes, Entry]], pids: list[int] | None) -> bytes:
    keys = [k for k, _ in items]
    ents = [e for _, e in items]
    values = [e[3] for e in ents]
    out = [_U64.pack(len(items))]
    if pids is not None:
        out.append(column("q", pids))
    out += [
        column("i", map(len, keys)),
        column("q", (e[0] for e in ents)),
        column("q", (e[1] for e in ents)),
        column("q", (e[2] for e in ents)),
        column("i", (-1 if v is None else len(v) for v in values)),
        blob(keys),
        blob(v for v in values if v is not None),
    ]
    return b"".join(out)


def _int_map(mapping: dict[bytes, int]) -> bytes:
    keys = list(mapping)
    return b"".join(
        [_U64.pack(len(keys)), column("i", map(len, keys)), column("q", mapping.values()), blob(keys)]
    )


def encode_state(meta: dict[str, Any], tables: StateTables) -> bytes:
    """The file for ``meta`` (JSON-serializable) and ``tables``; StateFormatError when over the limit."""
    txn_items = [(k, e) for pending in tables.open_txns.values() for k, e in pending.items()]
    txn_pids = [pid for pid, pending in tables.open_txns.items() for _ in pending]
    body = b"".join(
        [
            meta_blob(meta),
            _entries(list(tables.latest.items()), None),
            _entries(txn_items, txn_pids),
            _int_map(tables.created),
            _int_map(tables.tomb_max),
            _U64.pack(len(tables.invalid_values)) + column("q", sorted(tables.invalid_values)),
        ]
    )
    return seal(MAGIC, FORMAT_VERSION, body)


def seal(magic: bytes, version: int, body: bytes) -> bytes:
    """The checked container of ``body``: ``magic``, ``version``, length and SHA-256 before it
    (StateFormatError ``state_too_large`` over :data:`MAX_STATE_BYTES`)."""
    if len(body) + _HEADER.size > MAX_STATE_BYTES:
        raise StateFormatError("state_too_large", f"{len(body)} bytes, above {MAX_STATE_BYTES}")
    return _HEADER.pack(magic, version, 0, len(body), hashlib.sha256(body).digest()) + body


# -- reading -----------------------------------------------------------------------------------------


class Cursor:
    """Bounded reads over the body: every take is checked against what remains."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or n > len(self.data) - self.pos:
            raise StateFormatError("state_corrupt", f"{what}: {n} bytes, {len(self.data) - self.pos} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def count(self, width: int, what: str) -> int:
        """A u64 count of items of ``width`` bytes each, checked against the bytes left."""
        n = _U64.unpack(self.take(8, what))[0]
        if n * width > len(self.data) - self.pos:
            raise StateFormatError("state_corrupt", f"{what}: {n} items cannot fit in the bytes left")
        return n

    def column(self, code: str, n: int, what: str) -> array:
        arr = array(code)
        arr.frombytes(self.take(n * arr.itemsize, what))
        if not _LITTLE:
            arr.byteswap()
        return arr

    def blob(self, what: str) -> bytes:
        return self.take(self.count(1, what), what)

    def meta(self) -> dict[str, Any]:
        """A :func:`meta_blob`: a JSON object (its values are checked by the caller)."""
        try:
            meta = json.loads(self.blob("meta").decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise StateFormatError("state_corrupt", f"meta: {exc}") from None
        if not isinstance(meta, dict):
            raise StateFormatError("state_corrupt", "meta is not an object")
        return meta

    def end(self) -> None:
        """Nothing may follow the last section."""
        if self.pos != len(self.data):
            raise StateFormatError(
                "state_corrupt", f"{len(self.data) - self.pos} bytes after the last section"
            )


def _split(blob: bytes, lengths, what: str) -> list[bytes]:
    if min(lengths, default=0) < 0 or sum(lengths) != len(blob):
        raise StateFormatError("state_corrupt", f"{what}: lengths do not add up to the {len(blob)} bytes")
    ends = list(accumulate(lengths))
    return [blob[e - n : e] for n, e in zip(lengths, ends, strict=True)]


def _read_entries(cur: Cursor, with_pid: bool, what: str) -> tuple[list, list[bytes], list[Entry]]:
    n = cur.count(_ENTRY_COLUMNS + 8 * with_pid, what)
    pids = cur.column("q", n, what) if with_pid else []
    key_lens = cur.column("i", n, what)
    offs, bases, poss = (cur.column("q", n, what) for _ in range(3))
    val_lens = cur.column("i", n, what)
    keys = _split(cur.blob(what), key_lens, f"{what} keys")
    if min(val_lens, default=0) < -1:
        raise StateFormatError("state_corrupt", f"{what}: a value length below -1")
    present = [v for v in val_lens if v >= 0]
    values = iter(_split(cur.blob(what), present, f"{what} values"))
    if min(offs, default=0) < 0 or min(poss, default=0) < 0:
        raise StateFormatError("state_corrupt", f"{what}: a negative offset or position")
    ents = [
        (o, b, p, None if v < 0 else next(values))
        for o, b, p, v in zip(offs, bases, poss, val_lens, strict=True)
    ]
    return list(pids), keys, ents


def _read_int_map(cur: Cursor, what: str) -> dict[bytes, int]:
    n = cur.count(12, what)
    key_lens = cur.column("i", n, what)
    vals = cur.column("q", n, what)
    keys = _split(cur.blob(what), key_lens, what)
    out = dict(zip(keys, vals, strict=True))
    if len(out) != n:
        raise StateFormatError("state_corrupt", f"{what}: a key appears twice")
    return out


def unseal(data: bytes, magic: bytes, version: int, what: str) -> bytes:
    """The body of a :func:`seal` container of ``magic`` and ``version``, or StateFormatError
    (``state_corrupt``, ``state_foreign``, ``state_version``) with the reason."""
    if len(data) < _HEADER.size:
        raise StateFormatError("state_corrupt", f"{len(data)} bytes, shorter than the header")
    found, found_version, _zero, length, digest = _HEADER.unpack_from(data)
    if found != magic:
        raise StateFormatError("state_foreign", f"not {what} (wrong magic)")
    if found_version != version:
        raise StateFormatError(
            "state_version", f"format version {found_version}; this offsetops reads version {version}"
        )
    body = data[_HEADER.size :]
    if length != len(body):
        raise StateFormatError("state_corrupt", f"header says {length} body bytes, the file has {len(body)}")
    if hashlib.sha256(body).digest() != digest:
        raise StateFormatError("state_corrupt", "the body's checksum does not match")
    return body


def decode_state(data: bytes) -> tuple[dict[str, Any], StateTables]:
    """``(meta, tables)`` of a state file's bytes, or StateFormatError (``state_corrupt``,
    ``state_foreign``, ``state_version``) with the reason."""
    body = unseal(data, MAGIC, FORMAT_VERSION, "an offsetops resume state")
    cur = Cursor(body)
    meta = cur.meta()
    _, keys, ents = _read_entries(cur, False, "latest")
    latest = dict(zip(keys, ents, strict=True))
    pids, tkeys, tents = _read_entries(cur, True, "open transactions")
    open_txns: dict[int, dict[bytes, Entry]] = {}
    for pid, key, ent in zip(pids, tkeys, tents, strict=True):
        open_txns.setdefault(pid, {})[key] = ent
    created = _read_int_map(cur, "created")
    tomb_max = _read_int_map(cur, "tomb_max")
    invalid = cur.column("q", cur.count(8, "invalid values"), "invalid values")
    cur.end()
    if len(latest) != len(keys):
        raise StateFormatError("state_corrupt", "latest: a key appears twice")
    return meta, StateTables(latest, open_txns, created, tomb_max, frozenset(invalid))
