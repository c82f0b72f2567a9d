"""Compare a reloaded cache with a simulator's ``truth.json``, order-insensitively."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.untrusted import read_regular_file


def load_truth(path: str | Path) -> dict[str, Any]:
    """Read ``truth.json`` (a file, or the log dir holding it)."""
    p = Path(path)
    if p.is_dir():
        p = p / "truth.json"
    return json.loads(read_regular_file(p, kind="ground truth"))


def _canon(value: Any) -> Any:
    """A form where list order does not matter but content does (members, offsets, partitions)."""
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_canon(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return value


def normalize_groups(groups: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """``GroupMetadata.to_json`` documents keyed by group id, lists sorted."""
    return {g["group_id"]: _canon(g) for g in groups}


def diff_truth(truth: dict[str, Any], caches_json: Iterable[dict[str, Any]], limit: int = 20) -> list[str]:
    """Differences between ``truth`` and reloaded partitions (``CoordinatorCache.to_json()`` each).

    An empty list means the reload equals the truth. Each entry names the partition, group and field.
    """
    diffs: list[str] = []
    loaded = {c["partition"]: normalize_groups(c["groups"]) for c in caches_json}
    for part in truth["partitions"]:
        p = part["partition"]
        want = normalize_groups(part["groups"])
        got = loaded.pop(p, None)
        if got is None:
            if want:
                diffs.append(f"partition {p}: not reloaded, truth has {len(want)} groups")
            continue
        for gid in sorted(set(want) | set(got)):
            if gid not in got:
                diffs.append(f"partition {p}: group {gid!r} missing from the reload")
            elif gid not in want:
                diffs.append(f"partition {p}: unexpected group {gid!r} in the reload")
            else:
                for k in sorted(set(want[gid]) | set(got[gid])):
                    if want[gid].get(k) != got[gid].get(k):
                        diffs.append(
                            f"partition {p}: group {gid!r} field {k}: truth {want[gid].get(k)!r} "
                            f"!= reload {got[gid].get(k)!r}"
                        )
            if len(diffs) >= limit:
                return diffs
    for p in sorted(loaded):
        if loaded[p]:
            diffs.append(f"partition {p}: reloaded but absent from the truth")
    return diffs[:limit]
