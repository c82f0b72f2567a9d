"""Resumable fold state (``--state DIR``): the next run reads only what was appended.

The broker loads a ``__consumer_offsets`` partition once and then applies appends
(``GroupMetadataManager.doLoadGroupsAndOffsets``, ``CoordinatorLoaderImpl``). offsetops does the same
across runs: after a load, each partition's fold (survivors, open transactions, the groups commits
created, tombstones, type counts, counters and errors so far) is saved with its position and what the
position depends on; the next run checks those and folds only the bytes after it, or says why not.

The API (stable; other front ends build on it):

- ``StateStore.at(directory) -> StateStore``: the state files under ``directory``;
  ``.path(topic, partition) -> Path``, ``.lock(topic, partition)`` (a context yielding False when
  another run holds it), ``.read(topic, partition) -> (meta, StateTables) | Refusal``,
  ``.write(topic, partition, meta, tables) -> Path``.
- ``load_partition_dir_resumable(pdir, store, *, num_partitions, semantics, verify_crc,
  max_batch_bytes) -> CoordinatorCache``: one partition dir, resumed when its state holds; the cache's
  ``stats.resumed``, ``stats.resume_reason`` (a :data:`REASONS` code, None when resumed),
  ``stats.resume_detail``, ``stats.bytes_read`` and ``stats.state_error`` say what happened.
- ``load_live_partition_resumable(live, partition, store, *, num_partitions, semantics, verify_crc)
  -> CoordinatorCache``: the same for a partition of a live cluster (``LiveSource``), fetched from the
  saved next offset.
- ``plan_resume(point, pdir, now, settings) -> Plan | Refusal``: the check alone (``now`` from
  ``log_state(pdir)``); ``plan_live_resume(point, partition, now, settings) -> int | Refusal`` for a
  live partition (``now``: a ``LiveLog``).
- ``ResumePoint``, ``FoldSettings``, ``Refusal(code, detail)``, :data:`REASONS`.
- ``Source(state_dir=...)`` (``sources/source.py``) threads it through every whole-log read, of a log
  dir or a live cluster; ``--until`` (as-of) reads never use or write it (``resume_reason`` ``as_of``).

The file format is ``codec``'s (checked binary, never pickle); the fold's save and restore are
``snapshot``'s.
"""

from typing import TYPE_CHECKING

from offsetops.coordinator_core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # imported on first use at run time (see __getattr__)
    from offsetops.coordinator_core.resume.codec import FORMAT_VERSION, StateFormatError, StateTables
    from offsetops.coordinator_core.resume.live import (
        LiveLog,
        load_live_partition_resumable,
        plan_live_resume,
    )
    from offsetops.coordinator_core.resume.logdir import (
        LogState,
        Plan,
        load_partition_dir_resumable,
        log_state,
        plan_resume,
    )
    from offsetops.coordinator_core.resume.point import FoldSettings, Refusal, ResumePoint
    from offsetops.coordinator_core.resume.reasons import REASONS
    from offsetops.coordinator_core.resume.store import StateStore

__all__ = [
    "FORMAT_VERSION",
    "REASONS",
    "FoldSettings",
    "LiveLog",
    "LogState",
    "Plan",
    "Refusal",
    "ResumePoint",
    "StateFormatError",
    "StateStore",
    "StateTables",
    "load_live_partition_resumable",
    "load_partition_dir_resumable",
    "log_state",
    "plan_live_resume",
    "plan_resume",
]

#: Each name's module is imported when the name is first read: a run without ``--state`` imports none
#: of them, and a log dir's never imports the live ones (they pull in the Kafka client).
__getattr__ = lazy_exports(
    __name__,
    {
        "codec": ("FORMAT_VERSION", "StateFormatError", "StateTables"),
        "live": ("LiveLog", "load_live_partition_resumable", "plan_live_resume"),
        "logdir": ("LogState", "Plan", "load_partition_dir_resumable", "log_state", "plan_resume"),
        "point": ("FoldSettings", "Refusal", "ResumePoint"),
        "reasons": ("REASONS",),
        "store": ("StateStore",),
    },
)
