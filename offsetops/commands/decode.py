"""``offsetops decode``: decode one record from hex (e.g. bytes copied out of kcat)."""

from __future__ import annotations

import argparse

from offsetops.commands._common import EXIT_ERRORS, die, print_json
from offsetops.commands._run import with_settings
from offsetops.coordinator_core.schema import (
    SchemaError,
    UnknownKey,
    decode_key,
    decode_value,
    key_json,
    value_json,
)

MAX_KNOWN_RECORD_TYPE = 24  # CoordinatorRecordType up to Kafka 4.1 (streams groups)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "decode",
        description="Decode a record key (and value) as hex into JSON. Spaces and a 0x prefix are allowed.",
    )
    p.add_argument("--key", required=True, metavar="HEX")
    p.add_argument("--value", metavar="HEX", help="omit for a tombstone")
    p.set_defaults(func=run)


def _hex(text: str, what: str) -> bytes:
    cleaned = "".join(text.split()).removeprefix("0x").removeprefix("0X")
    try:
        return bytes.fromhex(cleaned)
    except ValueError as exc:
        raise ValueError(f"--{what} is not valid hex: {exc}") from None


def run(args: argparse.Namespace) -> int:
    try:
        key_bytes = _hex(args.key, "key")
        value_bytes = _hex(args.value, "value") if args.value is not None else None
    except ValueError as exc:
        return die(str(exc))
    try:
        key = decode_key(key_bytes)
    except SchemaError as exc:
        return die(f"key: {exc}")
    if isinstance(key, UnknownKey):
        print_json(
            with_settings({"key": {"type": str(key.record_type), "data": "unknown"}, "value": None}, args)
        )
        return die(
            f"key: record type {key.record_type} is not a __consumer_offsets record type "
            f"(known: 0 to {MAX_KNOWN_RECORD_TYPE})",
            EXIT_ERRORS,
        )
    doc = {"key": key_json(key), "value": None}
    if value_bytes is not None:
        try:
            doc["value"] = value_json(key.record_type, decode_value(key.record_type, value_bytes))
        except SchemaError as exc:
            print_json(with_settings({**doc, "error": str(exc)}, args))
            return die(f"value: {exc}", EXIT_ERRORS)
    print_json(with_settings(doc, args))
    return 0
