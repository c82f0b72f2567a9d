"""Every real broker log dir (Kafka 0.10 to 4.1) reloads with zero errors, each group in its own partition."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.partitioner import partition_for

from tests.support.shared import real_kafka_logdirs

LOGDIRS = real_kafka_logdirs()


@pytest.mark.skipif(not LOGDIRS, reason="../shared/fixtures/real-kafka not present")
@pytest.mark.parametrize("logdir", LOGDIRS, ids=lambda p: p.name)
def test_real_log_dir_reloads_cleanly(logdir):
    caches = load_log_dir(logdir)
    assert caches, f"no partitions found in {logdir}"
    for cache in caches:
        assert cache.stats.errors == [], [str(e) for e in cache.stats.errors]
        assert cache.stats.records > 0
        assert cache.misplaced_groups == []
        for gid in cache.groups:
            assert partition_for(gid) == cache.partition


def _cache(name: str, partition: int):
    [cache] = load_log_dir(LOGDIRS[[p.name for p in LOGDIRS].index(name)], partitions=[partition])
    return cache


@pytest.mark.skipif(not LOGDIRS, reason="../shared/fixtures/real-kafka not present")
def test_known_contents_of_real_fixtures():
    # Kafka 0.10.1, magic 1, offset value v1 with an expire timestamp.
    bull = _cache("xpxwo100__bullShit", 40)
    assert bull.stats.records == 860
    group = bull.groups["GroupA"]
    assert group.protocol_type == "consumer" and group.protocol == "range"
    assert all(o.expire_timestamp is not None for o in group.offsets.values())
    assert {t for t, _ in group.offsets} == {"foo"}

    # Flink: offsets only, no GroupMetadata record -> Empty with no protocol type.
    flink = _cache("iechenyb__data", 36).groups["flink-group"]
    assert (flink.state, flink.protocol_type, flink.members) == ("Empty", None, [])
    assert {t for t, _ in flink.offsets} == {"test-0921"}

    # Kafka 4.1: offset value v4 (flexible) next to group value v3.
    rupia = load_log_dir(LOGDIRS[[p.name for p in LOGDIRS].index("ronem123__rupia-transaction-service")])
    assert sum(c.stats.records_by_type.get(1, 0) for c in rupia) > 0

    # A non-Java client (KafkaJS) wrote these member bytes; the group still decodes.
    spec = _cache("specmatic-demo__shipping-service", 9)
    assert any(g.protocol == "RoundRobinAssigner" for g in spec.groups.values())
