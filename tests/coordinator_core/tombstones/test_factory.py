"""The one tombstone-executor factory: which executor a request gets, what it lacks, and a plan applied and
resumed through it (the segment executor on a copy of a log dir; the cluster executors' runs are in
tests/coordinator_core/expiration/test_live_executors.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from offsetops.coordinator_core.expiration import plan_expiration
from offsetops.coordinator_core.kafka_client import KafkaClientConfig
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.tombstones.admin import AdminExecutor
from offsetops.coordinator_core.tombstones.factory import (
    ExecutorRequest,
    MissingInput,
    apply_plan,
    executor_for,
    resume_plan,
)
from offsetops.coordinator_core.tombstones.produce import ProduceExecutor
from offsetops.coordinator_core.tombstones.runner import ExecutorRefused
from offsetops.coordinator_core.tombstones.segment import SegmentExecutor

from tests.coordinator_core.expiration.test_rules import NOW, RET, build_scenario

CLUSTER = KafkaClientConfig.resolve("127.0.0.1:1", None, {})


def _never(_bootstrap):
    raise AssertionError("a cluster was resolved for an executor that writes to none")


def test_each_method_gets_its_executor_on_its_destination(tmp_path: Path) -> None:
    admin = executor_for(ExecutorRequest("admin", cluster=CLUSTER))
    assert isinstance(admin, AdminExecutor) and admin.target() == {"bootstrap": "127.0.0.1:1"}
    produce = executor_for(
        ExecutorRequest("produce", cluster=CLUSTER, target_topic="mirror", partitioning="key")
    )
    assert isinstance(produce, ProduceExecutor)
    assert produce.target() == {"bootstrap": "127.0.0.1:1", "topic": "mirror", "partitioning": "key"}
    segment = executor_for(
        ExecutorRequest(
            "segment", log_dir=str(tmp_path / "in"), output_dir=str(tmp_path / "out"), cluster=_never
        )
    )
    assert isinstance(segment, SegmentExecutor)
    assert segment.target() == {"source": str(tmp_path / "in"), "output_dir": str(tmp_path / "out")}


@pytest.mark.parametrize(
    ("request_", "missing"),
    [
        (ExecutorRequest("admin"), "cluster"),
        (ExecutorRequest("admin", cluster=lambda _b: None), "cluster"),
        (ExecutorRequest("produce", cluster=CLUSTER), "target_topic"),
        (ExecutorRequest("segment", output_dir="/x"), "log_dir"),
        (ExecutorRequest("segment", log_dir="/x"), "output_dir"),
    ],
)
def test_what_a_request_lacks_is_named(request_: ExecutorRequest, missing: str) -> None:
    with pytest.raises(MissingInput) as info:
        executor_for(request_)
    assert info.value.missing == missing and info.value.method == request_.method


def test_an_unknown_method_and_an_internal_topic_are_refused() -> None:
    with pytest.raises(ExecutorRefused, match="no executor 'delete-all'"):
        executor_for(ExecutorRequest("delete-all"))
    with pytest.raises(ExecutorRefused):
        executor_for(ExecutorRequest("produce", cluster=CLUSTER, target_topic="__consumer_offsets"))


def test_a_resumed_request_keeps_the_journaled_destination() -> None:
    asked = []
    request = ExecutorRequest("produce", cluster=lambda b: asked.append(b) or CLUSTER, partitioning="same")
    resumed = request.resuming({"bootstrap": "broker:9092", "topic": "mirror", "partitioning": "key"})
    assert (resumed.target_topic, resumed.partitioning, resumed.bootstrap) == ("mirror", "key", "broker:9092")
    executor_for(resumed)
    assert asked == ["broker:9092"]
    given = ExecutorRequest("segment", log_dir="/a", output_dir="/b").resuming(
        {"source": "/c", "output_dir": "/d"}
    )
    assert (given.log_dir, given.output_dir) == ("/a", "/b")


def test_a_plan_is_applied_journaled_verified_and_resumed(tmp_path: Path) -> None:
    logdir = build_scenario(tmp_path / "logs")
    plan = plan_expiration(load_log_dir(logdir), now_ms=NOW, retention_ms=RET, coordinator="legacy")
    assert plan.tombstones
    request = ExecutorRequest("segment", log_dir=str(logdir), output_dir=str(tmp_path / "copy"))
    started = []
    report = apply_plan(
        plan,
        request,
        journal_dir=tmp_path / "journal",
        source=str(logdir),
        on_start=lambda j, resumed, ex: started.append((j.plan_id, resumed, ex.name)),
    )
    assert report.complete and not report.not_gone and len(report.verification) == len(plan.tombstones)
    assert started == [(report.plan_id, False, "segment")]
    # the same plan again resumes its journal and applies nothing twice
    again = resume_plan(tmp_path / "journal", report.plan_id, ExecutorRequest(""))
    assert again.resumed and again.skipped_already_applied == len(plan.tombstones) and again.complete
    with pytest.raises(ValueError, match="made for --executor segment"):
        resume_plan(tmp_path / "journal", report.plan_id, ExecutorRequest("admin", cluster=CLUSTER))
