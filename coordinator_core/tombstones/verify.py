"""After execution, reload the target and check every planned key is gone or tombstoned.

Keys are compared as the coordinator's cache sees them: a type-0 (legacy) offset key and a type-1 key
for the same group/topic/partition are one entry, so a type-1 tombstone removes a type-0 commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.sources.logdir import PartitionDir
from offsetops.coordinator_core.tombstones.runner import VerifyResult

_LEGACY_PREFIX = b"\x00\x00"
_OFFSET_PREFIX = b"\x00\x01"


def cache_key(key: bytes) -> bytes:
    """The key under which the loader tracks ``key`` (type 0 folds into type 1)."""
    return _OFFSET_PREFIX + key[2:] if key[:2] == _LEGACY_PREFIX else key


def classify(items: Iterable[dict[str, Any]], latest: dict[bytes, bytes | None]) -> list[VerifyResult]:
    """Per item: ``gone`` (key absent), ``tombstoned`` (latest value null) or ``present``."""
    out = []
    for item in items:
        key = cache_key(bytes.fromhex(item["key_hex"]))
        if key not in latest:
            state, detail = "gone", None
        elif latest[key] is None:
            state, detail = "tombstoned", None
        else:
            state, detail = "present", "the latest record for this key still has a value"
        out.append(
            VerifyResult(
                item["item_id"],
                item["key_hex"],
                item["group_id"],
                item["topic"],
                item["partition"],
                state,
                detail,
            )
        )
    return out


def latest_values(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[bytes, bytes | None]:
    """Fold ``(key, value)`` pairs in log order into the latest value per cache key."""
    latest: dict[bytes, bytes | None] = {}
    for key, value in records:
        if key is not None:
            latest[cache_key(key)] = value
    return latest


def verify_partition_dir(
    pdir: PartitionDir, items: list[dict[str, Any]], *, semantics: str = "java"
) -> tuple[list[VerifyResult], list[DecodeError]]:
    """Reload one partition dir with the loader's fold and classify ``items`` against it.

    Returns the results and the decode errors the reload met (a clean reload has none).
    """
    from offsetops.coordinator_core.loader import PartitionFold

    fold = PartitionFold(partition=pdir.partition, semantics=semantics)
    fold.add_batches(pdir.iter_batches(fold.stats.errors))
    latest = {k: entry[3] for k, entry in fold.latest.items()}
    return classify(items, latest), list(fold.stats.errors)
