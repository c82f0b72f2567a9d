"""A resume point: where a partition's fold stopped, and everything that position depends on.

Kafka's broker loads a coordinator partition once and then applies appends
(``CoordinatorLoaderImpl`` / ``GroupMetadataManager.doLoadGroupsAndOffsets``); a :class:`ResumePoint`
is the same idea across runs: the log it read (segment bases and sizes, the bytes just before the
position, the leader epochs and log start), the settings the fold was made with, and the position.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from offsetops.coordinator_core.resume.checked import flag, int_in, obj, opt_int, rows, text
from offsetops.coordinator_core.resume.codec import FORMAT_VERSION
from offsetops.coordinator_core.resume.reasons import REASONS

__all__ = ["REASONS", "FoldSettings", "Refusal", "ResumePoint"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a saved state was not used: a :data:`REASONS` code and a sentence naming what differed."""

    code: str
    detail: str


@dataclass(frozen=True, slots=True)
class FoldSettings:
    """The settings that shape a fold: a state saved under other ones is never resumed."""

    semantics: str
    num_partitions: int
    max_batch_bytes: int
    verify_crc: bool


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a fold of one partition stopped (``segment_base`` at byte ``position``) and what it read.

    ``segments``: ``(base offset, size)`` of every segment up to the position, the last one's size
    being ``position``; ``tail_crc``: CRC-32 of the ``tail_len`` bytes just before the position;
    ``leader_epochs``: ``leader-epoch-checkpoint`` as read (``(epoch, start offset)``);
    ``log_start_offset`` and ``cleaner_offset``: the log dir's checkpoints for the partition.
    ``source``: the real path of the partition dir, or ``cluster:<id>`` for a live cluster.
    """

    source: str
    topic: str
    partition: int
    settings: FoldSettings
    next_offset: int
    last_offset: int | None
    segment_base: int | None
    position: int
    segments: tuple[tuple[int, int], ...] = ()
    tail_crc: int = 0
    tail_len: int = 0
    leader_epochs: tuple[tuple[int, int], ...] = ()
    log_start_offset: int | None = None
    cleaner_offset: int | None = None
    version: int = FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["segments"] = [list(s) for s in self.segments]
        doc["leader_epochs"] = [list(e) for e in self.leader_epochs]
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> ResumePoint:
        """The point of a state file's meta, every field checked (StateFormatError otherwise)."""
        doc = obj(doc, "the resume point")
        s = obj(doc.get("settings"), "settings")
        settings = FoldSettings(
            semantics=text(s.get("semantics"), "settings.semantics"),
            num_partitions=int_in(s.get("num_partitions"), "settings.num_partitions"),
            max_batch_bytes=int_in(s.get("max_batch_bytes"), "settings.max_batch_bytes"),
            verify_crc=flag(s.get("verify_crc"), "settings.verify_crc"),
        )
        return cls(
            source=text(doc.get("source"), "source"),
            topic=text(doc.get("topic"), "topic"),
            partition=int_in(doc.get("partition"), "partition"),
            settings=settings,
            next_offset=int_in(doc.get("next_offset"), "next_offset"),
            last_offset=opt_int(doc.get("last_offset"), "last_offset"),
            segment_base=opt_int(doc.get("segment_base"), "segment_base"),
            position=int_in(doc.get("position"), "position"),
            segments=_pairs(doc.get("segments"), "segments"),
            tail_crc=int_in(doc.get("tail_crc"), "tail_crc"),
            tail_len=int_in(doc.get("tail_len"), "tail_len"),
            leader_epochs=_pairs(doc.get("leader_epochs"), "leader_epochs"),
            log_start_offset=opt_int(doc.get("log_start_offset"), "log_start_offset"),
            cleaner_offset=opt_int(doc.get("cleaner_offset"), "cleaner_offset"),
            version=int_in(doc.get("version"), "version"),
        )


def _pairs(value: Any, what: str) -> tuple[tuple[int, int], ...]:
    return tuple((int_in(a, what), int_in(b, what)) for a, b in rows(value, what, 2))
