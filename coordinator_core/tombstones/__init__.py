"""Emit an expiration plan's tombstones safely: a journal first, then one of three executors.

* :mod:`~offsetops.coordinator_core.tombstones.journal`: the plan, persisted and fsynced before anything is
  sent, and a per-item status log, so an interrupted run resumes without applying anything twice.
* :mod:`~offsetops.coordinator_core.tombstones.admin`: OffsetDelete / DeleteGroups through the coordinator.
* :mod:`~offsetops.coordinator_core.tombstones.produce`: raw tombstone records to a (mirror or sandbox) topic.
* :mod:`~offsetops.coordinator_core.tombstones.segment`: a new segment in a copy of a log dir (offline).
* :mod:`~offsetops.coordinator_core.tombstones.verify`: reload and report keys that are not gone.
* :mod:`~offsetops.coordinator_core.tombstones.runner`: ties them together.
"""
