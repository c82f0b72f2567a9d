"""Broker log parsing for the cleaner audit: ``log-cleaner.log`` and ``server.log`` (log4j text).

What is recognised (message texts from ``LogCleaner``/``LogCleanerManager``/``ShutdownableThread``):

- ``Log cleaner thread N cleaned log T-P (dirty section = [A, B])`` plus the statistics block that follows
  (``Start size``, ``End size``, ``% size reduction``) -> a :class:`CleanerRun`;
- ``Cleaner N: Beginning cleaning of log T-P`` -> the thread is alive;
- ``[kafka-log-cleaner-thread-N]: Error due to`` -> the thread died (before 2.2 any exception did this);
- ``... Marking its partition (T-P) as uncleanable`` (KAFKA-7215, 2.2+) -> the partition is uncleanable;
- ``Resetting first dirty offset of T-P to log start offset S since the checkpointed offset C is invalid``.

A log4j entry starts with ``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL``; following lines without that header
(stack traces, the statistics block) belong to it. Timestamps carry no zone and are read as UTC.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from offsetops.coordinator_core.untrusted import iter_lines

_HEADER = re.compile(r"^\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:[,.](\d{1,3}))?\]\s+([A-Z]+)\s?(.*)$")
_THREAD = re.compile(r"kafka-log-cleaner-thread-(\d+)")
_CLEANED = re.compile(r"Log cleaner thread (\d+) cleaned log (\S+) \(dirty section = \[(-?\d+), (-?\d+)\]\)")
_START = re.compile(r"Start size: ([\d,.]+) MB \(([\d,]+) messages\)")
_END = re.compile(r"End size: ([\d,.]+) MB \(([\d,]+) messages\)")
_PROCESSED = re.compile(r"([\d,.]+) MB of log processed in ([\d,.]+) seconds")
_BEGIN = re.compile(r"Cleaner (\d+): Beginning cleaning of log (\S+?)\.?$")
_UNCLEANABLE = re.compile(r"Marking its partition \((\S+)\) as uncleanable")
_RESET = re.compile(
    r"Resetting first dirty offset of (\S+) to log start offset (-?\d+) since the checkpointed offset (-?\d+)"
)


@dataclass(frozen=True, slots=True)
class CleanerRun:
    """One finished clean, from the statistics block ``LogCleaner.recordStats`` prints."""

    timestamp_ms: int | None
    thread: int
    topic_partition: str
    dirty_start: int
    dirty_end: int
    seconds: float | None
    start_messages: int | None
    end_messages: int | None
    start_mb: float | None
    end_mb: float | None


@dataclass(frozen=True, slots=True)
class CleanerEvent:
    """A notable log line: ``thread_died``, ``uncleanable``, ``checkpoint_reset`` or ``cleaning_started``."""

    kind: str
    timestamp_ms: int | None
    thread: int | None
    topic_partition: str | None
    message: str


@dataclass
class BrokerLogReport:
    """Everything the parser found, in file order."""

    runs: list[CleanerRun] = field(default_factory=list)
    events: list[CleanerEvent] = field(default_factory=list)
    lines: int = 0
    sources: list[str] = field(default_factory=list)

    def uncleanable_partitions(self, topic: str = "__consumer_offsets") -> dict[int, CleanerEvent]:
        """Partition -> the latest "marking as uncleanable" event. Marks are in-memory in the broker,
        so a later successful run of the same partition clears it here too."""
        marks: dict[int, CleanerEvent] = {}
        for item in self._timeline():
            tp = item.topic_partition
            if tp is None or not tp.startswith(topic + "-"):
                continue
            part = _partition_of(tp)
            if part is None:
                continue
            if isinstance(item, CleanerEvent) and item.kind == "uncleanable":
                marks[part] = item
            elif isinstance(item, CleanerRun):
                marks.pop(part, None)
        return marks

    def cleaning_in_progress(self, topic: str = "__consumer_offsets") -> set[int]:
        """Partitions a cleaner thread began cleaning and has not finished (``LogCleaningInProgress``):
        a start with no later run, mark or death of that thread, and no later start on it."""
        current: dict[int, int] = {}  # thread -> partition being cleaned
        for item in self._timeline():
            if item.thread is None:
                continue
            if isinstance(item, CleanerEvent) and item.kind == "cleaning_started":
                tp = item.topic_partition or ""
                part = _partition_of(tp) if tp.startswith(topic + "-") else None
                if part is None:
                    current.pop(item.thread, None)
                else:
                    current[item.thread] = part
            elif isinstance(item, CleanerRun) or item.kind in ("thread_died", "uncleanable"):
                current.pop(item.thread, None)
        return set(current.values())

    def dead_threads(self) -> dict[int, CleanerEvent]:
        """Thread id -> "Error due to" event, for threads with no sign of life after their death."""
        dead: dict[int, CleanerEvent] = {}
        for item in self._timeline():
            if isinstance(item, CleanerRun):
                dead.pop(item.thread, None)
            elif item.thread is None:
                continue
            elif item.kind == "thread_died":
                dead[item.thread] = item
            elif item.kind == "cleaning_started":
                dead.pop(item.thread, None)
        return dead

    def last_run(self, topic_partition: str) -> CleanerRun | None:
        found = [r for r in self.runs if r.topic_partition == topic_partition]
        return found[-1] if found else None

    def _timeline(self) -> list[CleanerRun | CleanerEvent]:
        items: list[CleanerRun | CleanerEvent] = [*self.runs, *self.events]
        # stable: entries without a timestamp keep their file order relative to each other
        return sorted(items, key=lambda i: i.timestamp_ms if i.timestamp_ms is not None else -1)

    def to_json(self, topic: str = "__consumer_offsets") -> dict[str, Any]:
        return {
            "sources": list(self.sources),
            "lines": self.lines,
            "cleaner_runs": len(self.runs),
            "last_run_ms": max(
                (r.timestamp_ms for r in self.runs if r.timestamp_ms is not None), default=None
            ),
            "dead_threads": sorted(self.dead_threads()),
            "uncleanable_partitions": sorted(self.uncleanable_partitions(topic)),
            "errors": [e.message for e in self.events if e.kind == "thread_died"][-5:],
        }


def _partition_of(topic_partition: str) -> int | None:
    _, _, tail = topic_partition.rpartition("-")
    return int(tail) if tail.isdigit() else None


def _ts_ms(date: str, millis: str | None) -> int | None:
    try:
        dt = datetime.strptime(date.replace("T", " "), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(dt.timestamp() * 1000) + (int(millis.ljust(3, "0")) if millis else 0)


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _entries(lines: Iterable[str]) -> Iterator[tuple[int | None, str, str]]:
    """Group raw lines into log4j entries: (timestamp ms, level, full text with continuation lines)."""
    ts: int | None = None
    level = ""
    buf: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        m = _HEADER.match(line)
        if m:
            if buf:
                yield ts, level, "\n".join(buf)
            ts, level, buf = _ts_ms(m.group(1), m.group(2)), m.group(3), [m.group(4)]
        elif buf:
            buf.append(line)
    if buf:
        yield ts, level, "\n".join(buf)


def parse_broker_log(
    lines: Iterable[str], *, source: str | None = None, report: BrokerLogReport | None = None
) -> BrokerLogReport:
    """Parse log4j lines from ``log-cleaner.log`` or ``server.log`` into a :class:`BrokerLogReport`."""
    rep = report if report is not None else BrokerLogReport()
    if source:
        rep.sources.append(source)
    counted: list[int] = [0]

    def counting(it: Iterable[str]) -> Iterator[str]:
        for line in it:
            counted[0] += 1
            yield line

    for ts, _level, text in _entries(counting(lines)):
        first_line = text.split("\n", 1)[0]
        thread_m = _THREAD.search(first_line)
        thread = int(thread_m.group(1)) if thread_m else None
        cleaned = _CLEANED.search(text)
        if cleaned:
            start, end, processed = _START.search(text), _END.search(text), _PROCESSED.search(text)
            rep.runs.append(
                CleanerRun(
                    timestamp_ms=ts,
                    thread=int(cleaned.group(1)),
                    topic_partition=cleaned.group(2),
                    dirty_start=int(cleaned.group(3)),
                    dirty_end=int(cleaned.group(4)),
                    seconds=_num(processed.group(2)) if processed else None,
                    start_messages=int(_num(start.group(2))) if start else None,
                    end_messages=int(_num(end.group(2))) if end else None,
                    start_mb=_num(start.group(1)) if start else None,
                    end_mb=_num(end.group(1)) if end else None,
                )
            )
            continue
        unclean = _UNCLEANABLE.search(first_line)
        if unclean:
            rep.events.append(CleanerEvent("uncleanable", ts, thread, unclean.group(1), _summary(text)))
            continue
        if thread is not None and "Error due to" in first_line:
            rep.events.append(CleanerEvent("thread_died", ts, thread, None, _summary(text)))
            continue
        reset = _RESET.search(first_line)
        if reset:
            rep.events.append(
                CleanerEvent("checkpoint_reset", ts, thread, reset.group(1), first_line.strip())
            )
            continue
        begin = _BEGIN.search(first_line.split(" (kafka.", 1)[0].strip())
        if begin:
            rep.events.append(
                CleanerEvent("cleaning_started", ts, int(begin.group(1)), begin.group(2), first_line.strip())
            )
    rep.lines += counted[0]
    return rep


def _summary(text: str) -> str:
    """The first line plus the exception line of a stack trace, which is what an operator needs."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    head = lines[0] if lines else ""
    exc = next((ln for ln in lines[1:] if not ln.startswith("at ") and not ln.startswith("...")), None)
    return f"{head} | {exc}" if exc else head


def read_broker_logs(paths: Iterable[str | os.PathLike[str]]) -> BrokerLogReport:
    """Parse several log files into one report (OSError propagates with the path in it)."""
    rep = BrokerLogReport()
    for path in paths:
        parse_broker_log(iter_lines(path, kind="broker log"), source=str(path), report=rep)
    return rep
