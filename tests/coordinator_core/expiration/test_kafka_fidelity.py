"""Expiration rules around open transactions, ported from Kafka's sources and tests, checked through
``offsetops expire --json`` on real segment files.

Legacy: ``GroupMetadata.removeExpiredOffsets`` / ``hasOffsets`` and
``GroupMetadataManager.cleanupGroupMetadata`` (Kafka 3.9). Java (kip848):
``OffsetMetadataManager.cleanupExpiredOffsets`` / ``replay`` and
``GroupCoordinatorShard.cleanupGroupMetadata`` -> ``GroupMetadataManager.maybeDeleteGroup`` (Kafka 4.1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offsetops.cli import main
from tests.coordinator_core.expiration.scenario import DAY, ScenarioLog, group_in

NOW = 1_700_000_000_000
P = 11


def expire(capsys, path: Path, coordinator: str) -> dict:
    code = main(["expire", str(path), "--json", "--now", str(NOW), "--coordinator", coordinator])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def tombstones(doc: dict, group: str) -> list[tuple]:
    return [(t["kind"], t["topic"], t["partition"]) for t in doc["tombstones"] if t["group_id"] == group]


def dead(doc: dict) -> dict[str, int]:
    return {d["group_id"]: d["group_tombstones"] for d in doc["dead_groups"]}


@pytest.fixture()
def logdir(tmp_path: Path) -> Path:
    log = ScenarioLog(P)
    # An old committed offset and an open transaction on the same partition.
    log.commit(group_in(P, "open-txn"), "foo", 0, 100, NOW - 30 * DAY)
    log.txn_commit(10, group_in(P, "open-txn"), "foo", 0, 101, NOW - 29 * DAY)
    # Offsets only through a transaction that was aborted.
    log.txn_commit(20, group_in(P, "aborted"), "bar", 0, 5, NOW - 20 * DAY)
    log.marker(20, False, NOW - 20 * DAY)
    # Offsets only through a transaction that is still open.
    log.txn_commit(30, group_in(P, "pending-only"), "baz", 0, 7, NOW - 20 * DAY)
    log.write(tmp_path)
    return tmp_path


def test_legacy_expires_an_offset_with_a_pending_transactional_commit(logdir, capsys):
    """removeExpiredOffsets skips only ``pendingOffsetCommits`` (in-flight plain commits); the group stays
    because ``hasOffsets`` counts ``pendingTransactionalOffsetCommits``."""
    doc = expire(capsys, logdir, "legacy")
    g = group_in(P, "open-txn")
    assert tombstones(doc, g) == [("offset_commit", "foo", 0)]
    assert g not in dead(doc)


def test_java_keeps_an_offset_with_a_pending_transactional_commit(logdir, capsys):
    """OffsetMetadataManagerTest.testCleanupExpiredOffsetsWithPendingTransactionalOffsets."""
    doc = expire(capsys, logdir, "kip848")
    g = group_in(P, "open-txn")
    assert tombstones(doc, g) == [] and g not in dead(doc)


def test_group_created_by_an_aborted_transaction(logdir, capsys):
    """OffsetMetadataManager.replay creates the group; after the abort it has no offsets, so
    cleanupExpiredOffsets returns true and maybeDeleteGroup writes its GroupMetadata tombstone. The Scala
    loader never had the group (GroupMetadataManagerTest.testDoNotLoadAbortedTransactionalOffsetCommits)."""
    g = group_in(P, "aborted")
    java = expire(capsys, logdir, "kip848")
    assert tombstones(java, g) == [("group_metadata", None, None)] and dead(java)[g] == 1
    legacy = expire(capsys, logdir, "legacy")
    assert tombstones(legacy, g) == [] and g not in dead(legacy)


def test_group_whose_only_offsets_are_pending_is_kept(logdir, capsys):
    """Kafka 4.0.1+/4.1 (KAFKA-19163): cleanupExpiredOffsets returns false for a group with no committed
    offset while it has an open transaction (4.0.0 returned true and deleted it). Legacy: hasOffsets."""
    g = group_in(P, "pending-only")
    for coordinator in ("kip848", "legacy"):
        doc = expire(capsys, logdir, coordinator)
        assert tombstones(doc, g) == [] and g not in dead(doc), coordinator
