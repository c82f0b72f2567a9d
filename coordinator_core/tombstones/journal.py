"""The execution journal: the plan is on disk (fsynced) before anything is sent, then every item's
outcome is appended as a JSON line (fsynced per line).

Layout under the journal dir, one pair of files per plan id::

    plan-<id>.json            the plan: items (tombstones with their key bytes), executor and target
    plan-<id>.status.jsonl    {"item": N, "status": ..., "detail": ..., "ts": ...} per outcome, and
                              {"event": ...} lines (e.g. what an executor saw before its first write)

The plan id is a hash of the plan content (items, ``now``, retention, coordinator, executor and
target), so rerunning the same command resumes the same journal; ``--resume ID`` does so explicitly.
A line torn by a crash is ignored when reading; the next write starts on a fresh line.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.atomic import open_append, write_json_atomic
from offsetops.coordinator_core.clock import wall_clock_ms
from offsetops.coordinator_core.untrusted import read_regular_file

JOURNAL_FORMAT = 1

# Outcomes. An item whose last outcome is in APPLIED_STATUSES is skipped on a rerun.
APPLIED = "applied"
ALREADY_GONE = "already_gone"
APPLIED_VIA_DELETE_GROUPS = "applied_via_delete_groups"
APPLIED_STATUSES = frozenset({APPLIED, ALREADY_GONE, APPLIED_VIA_DELETE_GROUPS})
UNSUPPORTED = "unsupported_by_broker"
NON_EMPTY_GROUP = "non_empty_group"
SUBSCRIBED = "group_subscribed_to_topic"
CHANGED = "changed_since_plan"
BLOCKED = "blocked"
ERROR = "error"

#: Test hook: ``send:N`` SIGKILLs the process after the N-th item is written to its target but
#: before its outcome is journaled; ``journal:N`` after the N-th outcome is journaled.
FAULT_ENV = "OFFSETOPS_FAULT_KILL_AFTER"


class JournalError(Exception):
    """A journal that cannot be used (wrong plan under an id, unreadable file), with the path."""


def prepare_document(plan: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``plan`` with the journal format, item ids and the plan id filled in."""
    doc = dict(plan)
    doc["format"] = JOURNAL_FORMAT
    doc["items"] = [{**item, "item_id": i} for i, item in enumerate(plan["items"])]
    doc["plan_id"] = compute_plan_id(doc)
    return doc


def compute_plan_id(doc: dict[str, Any]) -> str:
    """A content hash over what defines the run: ``now``, retention, coordinator, target and items."""
    material = {
        k: doc.get(k) for k in ("now_ms", "retention_ms", "coordinator", "executor", "target", "items")
    }
    blob = json.dumps(material, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


@dataclass
class Journal:
    """One plan's journal files; see the module docstring for the layout."""

    directory: Path
    plan_id: str
    plan: dict[str, Any]
    #: told how many item outcomes were just journaled (a progress display); never part of the journal
    on_record: Callable[[int], None] | None = field(default=None, compare=False, repr=False)

    @property
    def plan_path(self) -> Path:
        return self.directory / f"plan-{self.plan_id}.json"

    @property
    def status_path(self) -> Path:
        return self.directory / f"plan-{self.plan_id}.status.jsonl"

    @property
    def items(self) -> list[dict[str, Any]]:
        return self.plan["items"]

    # -- creating and opening ---------------------------------------------------------------------

    @classmethod
    def create(cls, directory: str | os.PathLike[str], plan: dict[str, Any]) -> tuple[Journal, bool]:
        """Persist ``plan`` (without ``plan_id``) and return ``(journal, resumed)``.

        When a journal with the same id already exists, it is reused (``resumed`` is True) after
        checking that it holds the same items.
        """
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        doc = prepare_document(plan)
        plan_id = doc["plan_id"]
        path = d / f"plan-{plan_id}.json"
        if path.exists():
            existing = cls.open(d, plan_id)
            if existing.plan.get("items") != doc["items"]:
                raise JournalError(f"{path}: holds a different plan under id {plan_id}")
            return existing, True
        doc.setdefault("created_ms", wall_clock_ms())
        write_json_atomic(path, doc, sort_keys=True)
        journal = cls(d, plan_id, doc)
        journal.event("created", items=len(doc["items"]))
        return journal, False

    @classmethod
    def open(cls, directory: str | os.PathLike[str], plan_id: str) -> Journal:
        d = Path(directory)
        path = d / f"plan-{plan_id}.json"
        try:
            doc = json.loads(read_regular_file(path, kind="state"))
        except FileNotFoundError as exc:
            raise JournalError(f"{path}: no journal for plan {plan_id}") from exc
        except (OSError, ValueError) as exc:
            raise JournalError(f"{path}: unreadable journal: {exc}") from exc
        if doc.get("format") != JOURNAL_FORMAT or doc.get("plan_id") != plan_id:
            raise JournalError(f"{path}: not an offsetops journal of format {JOURNAL_FORMAT}")
        return cls(d, plan_id, doc)

    # -- the status log ---------------------------------------------------------------------------

    def _append(self, lines: Iterable[dict[str, Any]]) -> None:
        path = self.status_path
        with open_append(path, read=True) as fh:
            end = fh.seek(0, os.SEEK_END)
            if end > 0:
                fh.seek(end - 1)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")  # a crash tore the last line; start a fresh one
            for line in lines:
                fh.write(
                    json.dumps(line, sort_keys=True, separators=(",", ":"), allow_nan=False).encode() + b"\n"
                )
                fh.flush()
                os.fsync(fh.fileno())

    def record(self, item_ids: Iterable[int], status: str, detail: str | None = None) -> None:
        """Append one outcome line per item (each fsynced before the next is written)."""
        now = wall_clock_ms()
        for i in item_ids:
            self._append([{"item": i, "status": status, "detail": detail, "ts": now}])
            fault_point("journal")
            if self.on_record is not None:
                self.on_record(1)

    def event(self, name: str, **data: Any) -> None:
        """Append a non-item line, e.g. what the executor saw before its first write."""
        self._append([{"event": name, "ts": wall_clock_ms(), **data}])

    def lines(self) -> list[dict[str, Any]]:
        try:
            raw = read_regular_file(self.status_path, kind="state")
        except FileNotFoundError:
            return []
        out = []
        for chunk in raw.split(b"\n"):
            if not chunk.strip():
                continue
            try:
                out.append(json.loads(chunk))
            except ValueError:
                continue  # a line torn by a crash: its item was never confirmed
        return out

    def events(self, name: str) -> list[dict[str, Any]]:
        return [ln for ln in self.lines() if ln.get("event") == name]

    def statuses(self) -> dict[int, dict[str, Any]]:
        """The last outcome line of each item that has one."""
        last: dict[int, dict[str, Any]] = {}
        for ln in self.lines():
            if "item" in ln:
                last[ln["item"]] = ln
        return last

    def history(self, item_id: int) -> list[str]:
        return [ln["status"] for ln in self.lines() if ln.get("item") == item_id]

    def applied_ids(self) -> set[int]:
        return {i for i, ln in self.statuses().items() if ln["status"] in APPLIED_STATUSES}

    def is_complete(self) -> bool:
        return len(self.applied_ids()) == len(self.items)


def list_journals(directory: str | os.PathLike[str]) -> list[Journal]:
    """Every readable journal in ``directory``, oldest first."""
    d = Path(directory)
    if not d.is_dir():
        return []
    out = []
    for path in sorted(d.glob("plan-*.json")):
        plan_id = path.name[len("plan-") : -len(".json")]
        try:
            out.append(Journal.open(d, plan_id))
        except JournalError:
            continue
    out.sort(key=lambda j: j.plan.get("created_ms", 0))
    return out


_fault_counts: dict[str, int] = {}


def fault_point(stage: str) -> None:
    """Count one item at ``stage`` and SIGKILL this process when ``$OFFSETOPS_FAULT_KILL_AFTER`` says so.

    Used by the interrupted-run tests; a no-op unless the variable is set.
    """
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    want_stage, _, n = spec.partition(":")
    if want_stage != stage:
        return
    _fault_counts[stage] = _fault_counts.get(stage, 0) + 1
    if _fault_counts[stage] >= int(n):
        os.kill(os.getpid(), signal.SIGKILL)
