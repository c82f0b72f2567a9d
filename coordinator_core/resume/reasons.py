"""Why a partition was read from the start instead of resumed: the codes every read reports.

A module of its own because every reload reports one (``not_requested`` without ``--state``), and a run
without a resume state should not import the state's reader and store to say so.
"""

from __future__ import annotations

#: ``LoadStats.resume_reason`` codes: why a run read from the start instead of resuming
REASONS: dict[str, str] = {
    "not_requested": "no --state DIR was given",
    "as_of": "--until reads never use or write the resume state",
    "no_state": "no resume state for this partition yet",
    "state_locked": "another run holds this partition's state; read fresh, state left to it",
    "state_unreadable": "the state file cannot be read",
    "state_corrupt": "the state file is corrupt or truncated",
    "state_foreign": "the file is not an offsetops resume state",
    "state_version": "the state file has another format version",
    "settings_changed": "the settings that shape the fold changed",
    "source_changed": "the state was saved for another source",
    "leader_epoch_changed": "a leader epoch began below the position (the log may have been truncated)",
    "truncated": "the log no longer holds the bytes before the position as read",
    "log_start_moved": "the log start moved (segments removed) past offsets the state holds",
    "compacted_created_groups": "compaction may have removed the records that alone created groups",
    "unverifiable": "the log could not be checked against the state",
}
