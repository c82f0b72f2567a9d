"""A partition's cleaner scan as a file, beside the fold's resume state: checked binary, never pickle.

The container is the resume state's (:func:`~offsetops.coordinator_core.resume.codec.seal`: magic
``OFOPSSCN``, a format version, the length and a SHA-256 of the body); the body is a JSON meta (the point
and inputs the scan was saved at, its counters, segments, open transactions, errors and markers) and the
key table as columns::

    u64 n | key ids (n x 8 bytes) | last offset q | share d | first dirty q | first offset q
          | tombstone kind b | tombstone value q | tombstone segment q

A tombstone kind of -1 is a value; the others are :mod:`.scan`'s raw facts. Every count, kind and number
is checked before use; a file that fails a check is a ``StateFormatError`` with the reason, never trusted.
"""

from __future__ import annotations

import math
from typing import Any

from offsetops.coordinator_core.cleaner.manager import SegmentInfo
from offsetops.coordinator_core.cleaner.scan import COUNTS, PartitionScan, tombstone_columns, tombstone_of
from offsetops.coordinator_core.resume.checked import bad, finite, flag, int_in, obj, opt_int, rows
from offsetops.coordinator_core.resume.codec import (
    Cursor,
    StateFormatError,
    column,
    meta_blob,
    seal,
    unseal,
)
from offsetops.coordinator_core.resume.snapshot import error_of_row, error_row

__all__ = ["SCAN_MAGIC", "SCAN_VERSION", "decode_scan", "encode_scan"]

SCAN_MAGIC = b"OFOPSSCN"
SCAN_VERSION = 1
_KEY_ID = 8  # key_id's digest size
_ROW = _KEY_ID + 8 * 4 + 1 + 8 * 2
_LO = -(1 << 63)


def encode_scan(scan: PartitionScan, head: dict[str, Any], errors: list[Any]) -> bytes:
    """The file of ``scan`` with ``head`` (what it was saved at) and ``errors`` (the ones to keep)."""
    meta = {
        "head": head,
        "counters": {name: getattr(scan, name) for name in COUNTS},
        "reclaimable_bytes": scan.reclaimable_bytes,
        "active_reclaimable_bytes": scan.active_reclaimable_bytes,
        "active_base": scan.active_base,
        "top_reclaimed": scan.top_reclaimed,
        "segments": [
            [s.base_offset, raw, s.first_batch_timestamp, s.next_offset]
            for s, raw in zip(scan.segments, scan.largest_read, strict=True)
        ],
        "open_txns": [
            [
                pid,
                t[0],
                t[1],
                t[2],
                t[4],
                [[h.hex(), off, share, *tombstone_columns(tomb)] for h, off, share, tomb in t[3]],
            ]
            for pid, t in scan.open_txns.items()
        ],
        "errors": [error_row(e) for e in errors],
        "first_markers": [[pid, aborted] for pid, aborted in scan.first_markers],
        "marked": sorted(scan.marked),
    }
    ids = list(scan.keys)
    ents = list(scan.keys.values())
    tombs = [tombstone_columns(e[2]) for e in ents]
    body = b"".join(
        [
            meta_blob(meta),
            len(ids).to_bytes(8, "little"),
            b"".join(ids),
            column("q", (e[0] for e in ents)),
            column("d", (e[1] for e in ents)),
            column("q", (e[3] for e in ents)),
            column("q", (e[4] for e in ents)),
            column("b", (t[0] for t in tombs)),
            column("q", (t[1] for t in tombs)),
            column("q", (t[2] for t in tombs)),
        ]
    )
    return seal(SCAN_MAGIC, SCAN_VERSION, body)


def decode_scan(data: bytes, listed: list[tuple[int, int]]) -> tuple[dict[str, Any], PartitionScan]:
    """``(head, scan)`` of a scan file's bytes, or StateFormatError. ``listed``: (size, mtime) of the
    segments as listed now, for the saved ones (a segment's size and mtime are read when judged)."""
    cur = Cursor(unseal(data, SCAN_MAGIC, SCAN_VERSION, "an offsetops cleaner scan state"))
    meta = cur.meta()
    scan = PartitionScan(
        active_base=int_in(meta.get("active_base"), "active_base"),
        reclaimable_bytes=finite(meta.get("reclaimable_bytes"), "reclaimable_bytes"),
        active_reclaimable_bytes=finite(meta.get("active_reclaimable_bytes"), "active_reclaimable_bytes"),
        top_reclaimed=int_in(meta.get("top_reclaimed"), "top_reclaimed", lo=_LO),
    )
    counters = obj(meta.get("counters"), "counters")
    for name in COUNTS:
        setattr(scan, name, int_in(counters.get(name), name))
    _segments(scan, rows(meta.get("segments"), "segments", 4), listed)
    for pid, first, ts, epoch, seg, pending in rows(meta.get("open_txns"), "open_txns", 6):
        scan.open_txns[int_in(pid, "producer id")] = [
            int_in(first, "transaction offset", lo=_LO),
            int_in(ts, "transaction timestamp", lo=-1),
            int_in(epoch, "producer epoch", lo=-(1 << 15)),
            [_pending(row) for row in rows(pending, "pending records", 6)],
            int_in(seg, "transaction segment", lo=_LO),
        ]
    scan.errors = [error_of_row(row) for row in rows(meta.get("errors"), "errors", 8)]
    markers = rows(meta.get("first_markers"), "first_markers", 2)
    scan.first_markers = [(int_in(p, "producer id"), flag(a, "aborted")) for p, a in markers]
    marked = meta.get("marked")
    if type(marked) is not list:
        raise bad("marked is not a list")
    scan.marked = {int_in(p, "producer id") for p in marked}
    _key_table(cur, scan)
    cur.end()
    return obj(meta.get("head"), "head"), scan


def _segments(scan: PartitionScan, saved: list[list[Any]], listed: list[tuple[int, int]]) -> None:
    if len(saved) > len(listed):
        raise bad(f"{len(saved)} segments saved, {len(listed)} listed")
    for (base, raw, first_ts, next_offset), (size, mtime) in zip(saved, listed, strict=False):
        largest = int_in(raw, "largest timestamp", lo=_LO)
        scan.largest_read.append(largest)
        scan.segments.append(
            SegmentInfo(
                base_offset=int_in(base, "segment base offset"),
                size=size,
                largest_timestamp=largest if largest >= 0 else mtime,
                first_batch_timestamp=int_in(first_ts, "first batch timestamp", lo=_LO),
                mtime_ms=mtime,
                next_offset=opt_int(next_offset, "next offset", lo=_LO),
            )
        )


def _pending(row: list[Any]) -> tuple[bytes, int, float, Any]:
    h, off, share, kind, value, seg = row
    if type(h) is not str or len(h) != 2 * _KEY_ID:
        raise bad("a pending record's key id is not 16 hex digits")
    try:
        key = bytes.fromhex(h)
    except ValueError:
        raise bad("a pending record's key id is not hex") from None
    tomb = _tomb(int_in(kind, "tombstone kind", lo=-1), int_in(value, "tombstone value", lo=_LO),
                 int_in(seg, "tombstone segment", lo=_LO))  # fmt: skip
    return key, int_in(off, "pending offset", lo=_LO), finite(share, "share"), tomb


def _tomb(kind: int, value: int, segment: int) -> Any:
    try:
        return tombstone_of(kind, value, segment)
    except ValueError as exc:
        raise bad(str(exc)) from None


def _key_table(cur: Cursor, scan: PartitionScan) -> None:
    n = cur.count(_ROW, "key table")
    blob = cur.take(n * _KEY_ID, "key ids")
    last, shares, dirty, first = (
        cur.column("q", n, "key table"),
        cur.column("d", n, "key table"),
        cur.column("q", n, "key table"),
        cur.column("q", n, "key table"),
    )
    kinds, values, segs = (
        cur.column("b", n, "key table"),
        cur.column("q", n, "key table"),
        cur.column("q", n, "key table"),
    )
    if n and not all(math.isfinite(s) and s >= 0 for s in shares):
        raise StateFormatError("state_corrupt", "key table: a share that is not a finite number from 0")
    if n and min(dirty) < -1:
        raise StateFormatError("state_corrupt", "key table: a first dirty offset below -1")
    keys = scan.keys
    for i in range(n):
        keys[blob[i * _KEY_ID : (i + 1) * _KEY_ID]] = [
            last[i], shares[i], _tomb(kinds[i], values[i], segs[i]), dirty[i], first[i]
        ]  # fmt: skip
    if len(keys) != n:
        raise StateFormatError("state_corrupt", "key table: a key id appears twice")
