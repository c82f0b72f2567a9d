"""KIP-211 expiration rules against hand-computed expectations (format doc §3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from offsetops.coordinator_core.cache import (
    CoordinatorCache,
    GroupMetadata,
    LoadStats,
    MemberMetadata,
    OffsetAndMetadata,
)
from offsetops.coordinator_core.expiration import (
    DEFAULT_RETENTION_MS,
    KIP848,
    LEGACY,
    coordinator_for_broker_version,
    plan_expiration,
)
from offsetops.coordinator_core.loader import load_log_dir

from tests.coordinator_core.expiration.scenario import DAY, HOUR, ScenarioLog, group_key, offset_key

NOW = 1_700_000_000_000
RET = 7 * DAY
P = 7  # the offsets partition every scenario group lives in (the loader does not care)


def build_scenario(tmp_path: Path) -> Path:
    log = ScenarioLog(P)
    # Empty group, v3 value with currentStateTimestamp 8 d ago: recent commits expire from the state change.
    log.group("empty-state", generation=5, state_ts=NOW - 8 * DAY, ts=NOW - 8 * DAY)
    log.commit("empty-state", "orders", 0, 10, NOW - 1 * DAY)
    log.commit("empty-state", "orders", 1, 11, NOW - 1 * DAY)
    # Empty since 6 d: even 30-day-old commits are kept; they expire in exactly 1 d (forecast).
    log.group("empty-recent", generation=2, state_ts=NOW - 6 * DAY, ts=NOW - 6 * DAY)
    log.commit("empty-recent", "orders", 0, 5, NOW - 30 * DAY)
    # Empty group with a v1 value (no currentStateTimestamp): commit time counts.
    log.group("empty-v1", generation=4, version=1, ts=NOW - 20 * DAY)
    log.commit("empty-v1", "a", 0, 1, NOW - 8 * DAY)
    log.commit("empty-v1", "b", 0, 1, NOW - 2 * DAY)
    # Stable consumer group subscribed to "orders": only unsubscribed topics expire, from commit time.
    log.group(
        "stable", generation=9, members=[("m1", ["orders"]), ("m2", ["orders"])], state_ts=NOW - 40 * DAY
    )
    log.commit("stable", "orders", 0, 100, NOW - 30 * DAY)
    log.commit("stable", "old-topic", 0, 7, NOW - 10 * DAY)
    log.commit("stable", "old2", 0, 8, NOW - 3 * DAY)
    # A non-consumer protocol while active: no expiration at all.
    log.group("connect-stable", protocol_type="connect", generation=3, members=[("w1", [])])
    log.commit("connect-stable", "configs", 0, 1, NOW - 90 * DAY)
    # Standalone (offsets only): commit time; exactly at retention counts as expired (>=).
    log.commit("standalone", "s", 0, 1, NOW - 8 * DAY)
    log.commit("standalone", "s", 1, 1, NOW - RET)
    log.commit("standalone", "s", 2, 1, NOW - RET + 1)
    # Standalone, everything expired: Dead, generation 0.
    log.commit("standalone-dead", "s", 0, 1, NOW - 9 * DAY, key_type=0)
    # v1 expireTimestamp wins in both directions.
    log.commit("explicit", "e", 0, 1, NOW - 1 * DAY, expire_ts=NOW - 1)
    log.commit("explicit", "e", 1, 1, NOW - 30 * DAY, expire_ts=NOW + HOUR)
    # Pending transactional commit protects its partition, and keeps the group alive.
    log.commit("txn", "t", 0, 1, NOW - 30 * DAY)
    log.commit("txn", "t", 1, 1, NOW - 30 * DAY)
    log.txn_commit(4242, "txn", "t", 0, 2, NOW - 29 * DAY)
    # A committed transaction is an ordinary offset afterwards.
    log.txn_commit(4343, "txn-done", "u", 0, 5, NOW - 10 * DAY)
    log.marker(4343, True, NOW - 10 * DAY)
    # Generation-0 classic group (protocol type set, never rebalanced), all offsets expired.
    log.group("gen0", generation=0, state_ts=NOW - 10 * DAY)
    log.commit("gen0", "g", 0, 1, NOW - 10 * DAY)
    # Empty group with no offsets at all.
    log.group("no-offsets", generation=3, state_ts=NOW - 1 * HOUR)
    # A group tombstoned earlier stays gone; its later offsets make it a simple group.
    log.group("gone", generation=2, state_ts=NOW - 50 * DAY)
    log.tombstone(group_key("gone"), NOW - 40 * DAY)
    log.commit("gone", "x", 0, 1, NOW - 1 * DAY)
    log.write(tmp_path)
    return tmp_path


@pytest.fixture()
def scenario(tmp_path: Path) -> Path:
    return build_scenario(tmp_path)


def _plan(path: Path, coordinator: str, retention: int = RET, horizon: int = DAY):
    semantics = "scala" if coordinator == LEGACY else "java"
    caches = load_log_dir(path, semantics=semantics)
    return plan_expiration(
        caches, now_ms=NOW, retention_ms=retention, coordinator=coordinator, forecast_horizon_ms=horizon
    )


def _offsets(plan) -> dict[tuple[str, str, int], tuple[str, int, int]]:
    return {
        (t.group_id, t.topic, t.partition): (t.reason, t.base_timestamp, t.age_ms)
        for t in plan.tombstones
        if t.kind == "offset_commit"
    }


EXPECTED_OFFSETS = {
    ("empty-state", "orders", 0): ("empty_group_current_state_timestamp", NOW - 8 * DAY, 8 * DAY),
    ("empty-state", "orders", 1): ("empty_group_current_state_timestamp", NOW - 8 * DAY, 8 * DAY),
    ("empty-v1", "a", 0): ("empty_group_commit_timestamp", NOW - 8 * DAY, 8 * DAY),
    ("stable", "old-topic", 0): ("stable_consumer_group_unsubscribed_topic", NOW - 10 * DAY, 10 * DAY),
    ("standalone", "s", 0): ("no_protocol_type_commit_timestamp", NOW - 8 * DAY, 8 * DAY),
    ("standalone", "s", 1): ("no_protocol_type_commit_timestamp", NOW - RET, RET),
    ("standalone-dead", "s", 0): ("no_protocol_type_commit_timestamp", NOW - 9 * DAY, 9 * DAY),
    ("explicit", "e", 0): ("explicit_expire_timestamp", NOW - 1 * DAY, 1 * DAY),
    ("txn", "t", 1): ("no_protocol_type_commit_timestamp", NOW - 30 * DAY, 30 * DAY),
    ("txn-done", "u", 0): ("no_protocol_type_commit_timestamp", NOW - 10 * DAY, 10 * DAY),
    ("gen0", "g", 0): ("empty_group_current_state_timestamp", NOW - 10 * DAY, 10 * DAY),
}


# The legacy coordinator also expires an offset whose partition has a pending transactional commit
# (GroupMetadata.removeExpiredOffsets skips only in-flight plain commits); the Java one does not
# (OffsetMetadataManager.cleanupExpiredOffsets, hasPendingTransactionalOffsets).
EXPECTED_LEGACY_ONLY = {("txn", "t", 0): ("no_protocol_type_commit_timestamp", NOW - 30 * DAY, 30 * DAY)}


@pytest.mark.parametrize("coordinator", [LEGACY, KIP848])
def test_offset_tombstones_match_hand_computed_rules(scenario: Path, coordinator: str) -> None:
    plan = _plan(scenario, coordinator)
    expected = {**EXPECTED_OFFSETS, **EXPECTED_LEGACY_ONLY} if coordinator == LEGACY else EXPECTED_OFFSETS
    assert _offsets(plan) == expected
    for t in plan.tombstones:
        if t.kind == "offset_commit":
            assert (
                t.key_hex == offset_key(t.group_id, t.topic, t.partition).hex()
            )  # type-1 keys, as Kafka writes
            assert t.offsets_partition == P


def test_dead_groups_legacy_skips_generation_zero(scenario: Path) -> None:
    plan = _plan(scenario, LEGACY)
    dead = {d.group_id: d.tombstones for d in plan.dead_groups}
    assert dead == {"empty-state": 1, "standalone-dead": 0, "txn-done": 0, "gen0": 0, "no-offsets": 1}
    groups = [t.group_id for t in plan.tombstones if t.kind == "group_metadata"]
    assert groups == ["empty-state", "no-offsets"]
    g = next(t for t in plan.tombstones if t.group_id == "empty-state" and t.kind == "group_metadata")
    assert (g.topic, g.partition, g.key_hex, g.base_timestamp, g.age_ms) == (
        None,
        None,
        group_key("empty-state").hex(),
        NOW - 8 * DAY,
        8 * DAY,
    )


def test_dead_groups_kip848_tombstones_every_empty_classic_group(scenario: Path) -> None:
    plan = _plan(scenario, KIP848)
    dead = {d.group_id: d.tombstones for d in plan.dead_groups}
    assert dead == {"empty-state": 1, "standalone-dead": 1, "txn-done": 1, "gen0": 1, "no-offsets": 1}
    # Within a group the offset tombstones come first, then the group's own.
    kinds = [t.kind for t in plan.tombstones if t.group_id == "empty-state"]
    assert kinds == ["offset_commit", "offset_commit", "group_metadata"]


def test_forecast_lists_what_expires_within_the_horizon(scenario: Path) -> None:
    plan = _plan(scenario, LEGACY, horizon=DAY)
    got = [(f.group_id, f.topic, f.partition, f.reason, f.expires_in_ms) for f in plan.forecast]
    assert got == [
        ("standalone", "s", 2, "no_protocol_type_commit_timestamp", 1),
        ("explicit", "e", 1, "explicit_expire_timestamp", HOUR),
        ("empty-recent", "orders", 0, "empty_group_current_state_timestamp", DAY),
    ]
    # The tombstoned group came back as a simple group: its offset ages from its commit (1 d ago).
    week = _plan(scenario, LEGACY, horizon=7 * DAY)
    gone = [(f.reason, f.expires_in_ms) for f in week.forecast if f.group_id == "gone"]
    assert gone == [("no_protocol_type_commit_timestamp", 6 * DAY)]


def test_what_if_shorter_retention_expires_more(scenario: Path) -> None:
    short = _plan(scenario, KIP848, retention=2 * DAY)
    got = _offsets(short)
    # 2-day retention: the 3-day-old unsubscribed topic and the standalone partition 2 go too...
    assert ("stable", "old2", 0) in got and ("standalone", "s", 2) in got
    # ...but subscribed topics, pending transactions and explicit expire timestamps still do not.
    assert ("stable", "orders", 0) not in got
    assert ("txn", "t", 0) not in got
    assert ("explicit", "e", 1) not in got
    assert ("connect-stable", "configs", 0) not in got
    assert len(got) > len(EXPECTED_OFFSETS)


def test_default_retention_and_version_mapping() -> None:
    assert DEFAULT_RETENTION_MS == 7 * 24 * 60 * 60 * 1000
    assert coordinator_for_broker_version("3.9.1") == LEGACY
    assert coordinator_for_broker_version("2.8") == LEGACY
    assert coordinator_for_broker_version("4.0.0") == KIP848
    assert coordinator_for_broker_version(None) == KIP848
    with pytest.raises(ValueError):
        coordinator_for_broker_version("four")


def _kip848_cache(members: list[str], state: str, subscribed: list[str]) -> CoordinatorCache:
    g = GroupMetadata(
        group_id="kip848-g",
        state=state,
        protocol_type="consumer",
        generation=12,
        group_type="consumer",
        members=[
            MemberMetadata(m, None, "c", "h", None, 300000, list(subscribed), {}, member_epoch=12)
            for m in members
        ],
        offsets={
            ("in", 0): OffsetAndMetadata(1, None, "", NOW - 30 * DAY, None, 10),
            ("out", 0): OffsetAndMetadata(1, None, "", NOW - 30 * DAY, None, 11),
        },
    )
    return CoordinatorCache(partition=P, groups={"kip848-g": g}, stats=LoadStats())


def test_kip848_group_expires_unsubscribed_topics_even_when_not_stable() -> None:
    plan = plan_expiration(
        [_kip848_cache(["a"], "Reconciling", ["in"])], now_ms=NOW, retention_ms=RET, coordinator=KIP848
    )
    assert [(t.topic, t.reason) for t in plan.tombstones] == [("out", "consumer_group_unsubscribed_topic")]
    assert plan.dead_groups == []


def test_kip848_dead_group_tombstones_in_required_order() -> None:
    from offsetops.coordinator_core.schema import decode_key

    plan = plan_expiration([_kip848_cache([], "Empty", [])], now_ms=NOW, retention_ms=RET, coordinator=KIP848)
    types = [decode_key(t.key).record_type for t in plan.tombstones]
    # offsets first, then TargetAssignmentMetadata, PartitionMetadata, and the group epoch record last.
    assert types == [1, 1, 6, 4, 3]
    assert [t.kind for t in plan.tombstones[2:]] == ["group_metadata"] * 3
    assert all(decode_key(t.key).group_id == "kip848-g" for t in plan.tombstones)
    # Legacy (Scala) brokers skip KIP-848 records: an offsets-only group, no group tombstone.
    legacy = plan_expiration(
        [_kip848_cache([], "Empty", [])], now_ms=NOW, retention_ms=RET, coordinator=LEGACY
    )
    assert [decode_key(t.key).record_type for t in legacy.tombstones] == [1, 1]
    assert [d.tombstones for d in legacy.dead_groups] == [0]


def test_kip848_member_tombstones_precede_the_group_epoch() -> None:
    from offsetops.coordinator_core.expiration import _group_tombstone_keys
    from offsetops.coordinator_core.schema import decode_key

    g = _kip848_cache(["m2", "m1"], "Empty", []).groups["kip848-g"]
    order = [
        (decode_key(k).record_type, decode_key(k).fields.get("memberId"))
        for _t, k, _n in _group_tombstone_keys(g, KIP848)
    ]
    assert order == [
        (8, "m1"),
        (8, "m2"),
        (7, "m1"),
        (7, "m2"),
        (6, None),
        (5, "m1"),
        (5, "m2"),
        (4, None),
        (3, None),
    ]
