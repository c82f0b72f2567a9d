"""A live read with a resume state fetches only what was appended since, and equals a fresh live read
(Tansu on loopback)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from offsetops.coordinator_core.kafka_client import KafkaClientConfig
from offsetops.coordinator_core.sources.source import Source

from tests.coordinator_core.resume.logs import History, view
from tests.support.broker import BrokerClient

pytestmark = pytest.mark.broker


def _load(bootstrap: str, topic: str, state: Path | None):
    source = Source(
        client=KafkaClientConfig(bootstrap_servers=bootstrap), topic=topic, partitions=(0,),
        state_dir=None if state is None else str(state),
    )  # fmt: skip
    return source.load_caches(num_partitions=4)[0]


def test_a_live_read_resumes_from_the_saved_offset(kafka_broker, tmp_path: Path) -> None:
    history = History().play([("commit", i % 4, i % 3, i) for i in range(12)] + [("txn", 1, 0, 5)])
    topic = f"offsets-resume-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic)
        for batch in history.batches[:6]:
            bc.produce_raw(topic, 0, batch.data)
        first = _load(kafka_broker.bootstrap, topic, tmp_path / "state")
        assert (first.stats.resumed, first.stats.resume_reason) == (False, "no_state")
        for batch in history.batches[6:]:
            bc.produce_raw(topic, 0, batch.data)
    second = _load(kafka_broker.bootstrap, topic, tmp_path / "state")
    fresh = _load(kafka_broker.bootstrap, topic, None)
    assert view(second) == view(fresh)
    assert second.stats.resumed, second.stats.resume_detail
    assert second.stats.bytes_read == sum(len(b.data) for b in history.batches[6:])
    assert _load(kafka_broker.bootstrap, topic, tmp_path / "state").stats.bytes_read == 0


def test_another_cluster_or_topic_is_read_fresh(kafka_broker, tmp_path: Path) -> None:
    history = History().play([("commit", i % 4, i % 3, i) for i in range(4)])
    topics = [f"offsets-resume-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    with BrokerClient(kafka_broker.bootstrap) as bc:
        for topic in topics:
            bc.create_topic(topic)
            for batch in history.batches:
                bc.produce_raw(topic, 0, batch.data)
    _load(kafka_broker.bootstrap, topics[0], tmp_path / "state")
    other = _load(kafka_broker.bootstrap, topics[1], tmp_path / "state")
    assert other.stats.resume_reason in ("no_state", "source_changed")


def test_a_live_check_refuses_what_it_cannot_prove() -> None:
    from offsetops.coordinator_core.resume import FoldSettings, LiveLog, ResumePoint, plan_live_resume

    settings = FoldSettings("java", 4, 1 << 20, True)
    point = ResumePoint("cluster:c1/t", "t", 0, settings, 50, 49, None, 0, leader_epochs=((3, 0),),
                        log_start_offset=0)  # fmt: skip
    assert plan_live_resume(point, 0, LiveLog("cluster:c1/t", 0, 80, 3), settings) == 50

    def code(now: LiveLog) -> str:
        refusal = plan_live_resume(point, 0, now, settings)
        assert not isinstance(refusal, int)
        return refusal.code

    assert code(LiveLog("cluster:c2/t", 0, 80, 3)) == "source_changed"
    assert code(LiveLog("cluster:c1/t", 10, 80, 3)) == "log_start_moved"
    assert code(LiveLog("cluster:c1/t", 0, 40, 3)) == "truncated"
    assert code(LiveLog("cluster:c1/t", 0, 80, 4)) == "leader_epoch_changed"
    assert code(LiveLog("cluster:c1/t", 0, 80, -1)) == "unverifiable"
