"""``offsetops dump``: print batches and records like ``kafka-dump-log --offsets-decoder`` (Kafka 3.8+)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from offsetops.commands._common import (
    die,
    escape,
    report_errors,
    strict_exit,
)
from offsetops.coordinator_core.embedded import group_findings
from offsetops.coordinator_core.errors import DecodeError, OffsetsDecodeException
from offsetops.coordinator_core.records.batch import RecordBatch
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    SchemaError,
    UnknownKey,
    decode_control_key,
    decode_end_txn_marker,
    decode_key,
    decode_value,
    key_json,
    value_json,
)
from offsetops.coordinator_core.sources.logdir import LogDirError, open_log_dir
from offsetops.pipelines.cli_args import add_max_batch_bytes, add_partition_filter
from offsetops.progress import Progress, is_terminal

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dump",
        description="Dump segment files batch by batch. PATH is a .log file, a partition dir or a log dir.",
    )
    p.add_argument("path")
    add_partition_filter(p)
    p.add_argument("--json", action="store_true", help="JSON lines: one object per batch and per record")
    p.add_argument("--strict", action="store_true", help="exit non-zero if any record had an error")
    add_max_batch_bytes(p, default=None)
    p.set_defaults(func=run)


def _files(
    path: Path, partitions: list[int] | None
) -> Iterator[tuple[Path | None, int | None, tuple[DecodeError, ...]]]:
    """``(segment, partition, listing anomalies)``; the anomalies come with a partition's first entry,
    and a partition with anomalies but no segment is one entry without a segment."""
    if path.is_file():
        part = None
        with contextlib.suppress(IndexError, ValueError):
            part = int(path.parent.name.rsplit("-", 1)[1])
        yield path, part, ()
        return
    logdir = open_log_dir(path, partitions=partitions)
    for pdir in logdir.partitions:
        if not pdir.segments:
            yield None, pdir.partition, pdir.anomalies
        for i, seg in enumerate(pdir.segments):
            yield seg.path, pdir.partition, pdir.anomalies if i == 0 else ()


def _decode(key: bytes | None, value: bytes | None) -> tuple[Any, Any, tuple[str, str] | None, list]:
    """The key and payload columns (JSON objects, or Kafka's words for what it could not decode), the
    ``(kind, reason)`` of a decode error, if any, and the findings on the members' consumer-protocol bytes
    (``embedded``)."""
    if key is None:
        return "Error: record has no key", None, ("missing_key", "record has no key"), []
    try:
        k = decode_key(key)
    except SchemaError as exc:
        return f"Error: {exc}", None, (exc.kind, f"record key: {exc}"), []
    if isinstance(k, UnknownKey):
        return f"Unknown record type {k.record_type}", None, None, []
    if value is None:
        return key_json(k), "<DELETE>", None, []
    try:
        v = decode_value(k.record_type, value)
    except SchemaError as exc:
        return key_json(k), f"Error: {exc}", (exc.kind, f"record type {k.record_type} value: {exc}"), []
    found = (
        group_findings(k.group, v)
        if isinstance(k, GroupMetadataKey) and isinstance(v, GroupMetadataValue)
        else []
    )
    return key_json(k), value_json(k.record_type, v), None, found


def _batch_line(b: RecordBatch) -> str:
    if b.magic < 2:
        return (
            f"offset: {b.last_offset} position: {b.position} "
            f"{'CreateTime' if b.timestamp_type == 0 else 'LogAppendTime'}: {b.max_timestamp} "
            f"isvalid: true size: {b.size} magic: {b.magic} compresscodec: {CODECS.get(b.compression)} "
            f"crc: {b.crc}"
        )
    last_seq = -1 if b.base_sequence < 0 else b.base_sequence + (b.last_offset - b.base_offset)
    horizon = (
        f"OptionalLong[{b.delete_horizon_ms}]" if b.delete_horizon_ms is not None else "OptionalLong.empty"
    )
    return (
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
        f"baseSequence: {b.base_sequence} lastSequence: {last_seq} producerId: {b.producer_id} "
        f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
        f"isTransactional: {str(b.is_transactional).lower()} isControl: {str(b.is_control).lower()} "
        f"deleteHorizonMs: {horizon} position: {b.position} "
        f"{'CreateTime' if b.timestamp_type == 0 else 'LogAppendTime'}: {b.max_timestamp} size: {b.size} "
        f"magic: 2 compresscodec: {CODECS.get(b.compression)} crc: {b.crc} isvalid: true"
    )


def _batch_json(b: RecordBatch, file: Path) -> dict[str, Any]:
    return {
        "type": "batch",
        "file": str(file),
        "position": b.position,
        "base_offset": b.base_offset,
        "last_offset": b.last_offset,
        "count": b.record_count,
        "magic": b.magic,
        "compression": CODECS.get(b.compression),
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "partition_leader_epoch": b.partition_leader_epoch,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
        "delete_horizon_ms": b.delete_horizon_ms,
        "max_timestamp": b.max_timestamp,
        "size": b.size,
        "crc": b.crc,
    }


def _control(key: bytes | None, value: bytes | None) -> tuple[str, dict[str, Any], str | None]:
    try:
        ctype = decode_control_key(key or b"").type
    except SchemaError as exc:
        return f" control: Error: {exc}", {"control_error": str(exc)}, f"control record key: {exc}"
    if ctype not in CONTROL_TYPES:
        # LEADER_CHANGE and KRaft markers carry other values; only transaction markers are decoded.
        return f" control: type {ctype}", {"control_type": ctype}, None
    try:
        epoch = decode_end_txn_marker(value or b"").coordinator_epoch
    except SchemaError as exc:
        return f" control: Error: {exc}", {"control_error": str(exc)}, f"end transaction marker: {exc}"
    name = CONTROL_TYPES.get(ctype, f"type {ctype}")
    return (
        f" endTxnMarker: {name} coordinatorEpoch: {epoch}",
        {"end_txn_marker": name, "coordinator_epoch": epoch},
        None,
    )


def _show_errors(out, errors: list[DecodeError], shown: int, as_json: bool) -> int:
    """Print the errors found since the last call where they happened in the dump; returns the count."""
    for err in errors[shown:]:
        if as_json:
            out.write(json.dumps({"type": "error", **err.to_dict()}, allow_nan=False) + "\n")
        else:
            out.write(f"{'Notice' if err.is_notice else 'Error'}: {escape(err)}\n")
    return len(errors)


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    errors: list[DecodeError] = []
    try:
        files = list(_files(path, args.partition))
    except LogDirError as exc:
        return die(str(exc))
    if not path.exists():
        return die(f"{path}: no such file or directory")
    # On a terminal the dump itself scrolls by; progress shows only while stdout goes to a file or pipe.
    segments = sum(f is not None for f, _, _ in files)
    quiet = is_terminal(sys.stdout)
    with Progress("dumping", total=segments, unit="segments", enabled=not quiet) as progress:
        _dump_files(files, errors, args, progress)
    if errors:
        report_errors(errors)
    return strict_exit(errors, args.strict)


def _dump_files(
    files: list[tuple[Path | None, int | None, tuple[DecodeError, ...]]],
    errors: list[DecodeError],
    args: argparse.Namespace,
    progress: Progress,
) -> int:
    out = sys.stdout
    shown = 0
    if args.json:  # the stream's first line: what shaped it (the batch bound) and where it came from
        out.write(json.dumps({"type": "settings", "settings": args.run.to_json()}) + "\n")
    for file, part, anomalies in files:
        errors.extend(anomalies)
        shown = _show_errors(out, errors, shown, args.json)
        if file is None:
            continue
        if not args.json:
            out.write(f"Dumping {escape(file)}\n")
            with contextlib.suppress(ValueError):
                out.write(f"Log starting offset: {int(file.stem)}\n")
        for batch in iter_segment_batches(
            file, partition=part, errors=errors, max_batch_bytes=args.max_batch_bytes
        ):
            shown = _show_errors(out, errors, shown, args.json)
            progress.advance(0, batch.size, what=escape(file.name))
            if args.json:
                out.write(json.dumps(_batch_json(batch, file), allow_nan=False) + "\n")
            else:
                out.write(_batch_line(batch) + "\n")
            try:
                for offset, ts, key, value in batch.iter_records():
                    seq = (
                        -1 if batch.base_sequence < 0 else batch.base_sequence + (offset - batch.base_offset)
                    )
                    if batch.is_control:
                        text, extra, problem = _control(key, value)
                        k = p = None
                        failed = None if problem is None else ("corrupt_record", problem)
                    else:
                        k, p, failed, found = _decode(key, value)
                        text, extra = "", {}
                    if failed is not None:
                        # Counted (--strict fails on it) and listed at the end; shown inline on the record.
                        errors.append(DecodeError(*failed, str(file), part, batch.position, offset))
                        shown = len(errors) if not args.json else shown
                    out.write(_record_out(batch, offset, ts, key, value, seq, k, p, text, extra, args.json))
                    if not batch.is_control:  # shown after their record (errors counted, notices not)
                        errors.extend(
                            DecodeError(f.kind, f.reason, str(file), part, batch.position, offset)
                            for f in found
                        )
                        shown = _show_errors(out, errors, shown, args.json)
            except OffsetsDecodeException as exc:
                errors.append(exc.error)
            shown = _show_errors(out, errors, shown, args.json)
        shown = _show_errors(out, errors, shown, args.json)
        progress.advance(1)
    return shown


def _record_out(
    batch: Any,
    offset: int,
    ts: int,
    key: bytes | None,
    value: bytes | None,
    seq: int,
    k: Any,
    p: Any,
    text: str,
    extra: dict[str, Any],
    as_json: bool,
) -> str:
    """One record's line: a JSON document, or kafka-dump-log's ``| offset: ...`` line."""
    if as_json:
        rec = {
            "type": "record",
            "offset": offset,
            "timestamp": ts,
            "key_size": -1 if key is None else len(key),
            "value_size": -1 if value is None else len(value),
            "sequence": seq,
            **extra,
        }
        if not batch.is_control:
            rec["key"], rec["payload"] = k, p
        return json.dumps(rec, allow_nan=False) + "\n"
    line = (
        f"| offset: {offset} CreateTime: {ts} keySize: {-1 if key is None else len(key)} "
        f"valueSize: {-1 if value is None else len(value)} sequence: {seq} headerKeys: []"
    )
    if batch.is_control:
        return line + text + "\n"
    ktxt = k if isinstance(k, str) else json.dumps(k, separators=(",", ":"))
    ptxt = p if isinstance(p, str) or p is None else json.dumps(p, separators=(",", ":"))
    line += f" key: {ktxt}"
    if ptxt is not None:
        line += f" payload: {ptxt}"
    return line + "\n"
