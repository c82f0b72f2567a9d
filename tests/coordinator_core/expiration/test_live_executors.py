"""The admin and produce executors against the Tansu Kafka-protocol broker on loopback.

Tansu lacks OffsetDelete and answers DeleteGroups with NONE even for a group with members, so the
GROUP_SUBSCRIBED_TO_TOPIC and NON_EMPTY_GROUP paths are checked through the error mapping with
kafka-python's own error classes; they are exercised for real only against Apache Kafka.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import kafka.errors as Errors
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata
from offsetops.coordinator_core.kafka_client import KafkaClientConfig
from offsetops.coordinator_core.tombstones.admin import outcome_for_error
from offsetops.coordinator_core.tombstones.journal import FAULT_ENV
from offsetops.coordinator_core.tombstones.produce import read_partitions

from offsetops.cli import main
from tests.coordinator_core.expiration.scenario import DAY, ScenarioLog
from tests.coordinator_core.expiration.test_rules import NOW, RET, P, build_scenario

pytestmark = pytest.mark.broker
REPO = Path(__file__).resolve().parents[3]


def _admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit offsets as a real consumer of ``group`` does (OffsetCommit through the coordinator)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(t, p) for t, p in offsets])
        consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})
    finally:
        consumer.close()


def _live(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = _admin(bootstrap)
    try:
        res = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {(tp.topic, tp.partition): om.offset for tp, om in res.items()}


def test_error_mapping_for_answers_tansu_cannot_give() -> None:
    assert outcome_for_error(Errors.GroupSubscribedToTopicError)[0] == "group_subscribed_to_topic"
    assert outcome_for_error(Errors.NonEmptyGroupError())[0] == "non_empty_group"
    assert outcome_for_error("NonEmptyGroupError")[0] == "non_empty_group"  # delete_groups gives names
    assert outcome_for_error("GroupIdNotFoundError")[0] == "already_gone"
    assert outcome_for_error("OK") == ("applied", None)
    assert outcome_for_error(Errors.NoError) == ("applied", None)
    assert outcome_for_error(Errors.UnsupportedVersionError)[0] == "unsupported_by_broker"
    status, detail = outcome_for_error(Errors.GroupAuthorizationFailedError)
    assert status == "error" and "GroupAuthorizationFailed" in detail


def test_admin_executor_against_tansu(kafka_broker, tmp_path: Path, capsys) -> None:
    bs = kafka_broker.bootstrap
    topic = f"exp-{uuid.uuid4().hex[:8]}"
    admin = _admin(bs)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bs)
    for i in range(10):
        producer.send(topic, value=b"x", partition=i % 2)
    producer.flush()
    producer.close()
    dead, changed = f"dead-{topic}", f"changed-{topic}"
    _commit(bs, dead, {(topic, 0): 5, (topic, 1): 3})
    _commit(bs, changed, {(topic, 0): 4})

    # The snapshot the plan is made from: both groups committed 9 days ago; since then `changed`
    # committed again on the cluster (offset 4, where the snapshot says 2).
    log = ScenarioLog(P)
    log.commit(dead, topic, 0, 5, NOW - 9 * DAY).commit(dead, topic, 1, 3, NOW - 9 * DAY)
    log.commit(changed, topic, 0, 2, NOW - 9 * DAY)
    log.write(tmp_path / "snap")
    argv = [
        "expire",
        str(tmp_path / "snap"),
        "--now",
        str(NOW),
        "--retention-ms",
        str(RET),
        "--coordinator",
        "kip848",
        "--execute",
        "--executor",
        "admin",
        "--bootstrap",
        bs,
        "--journal-dir",
        str(tmp_path / "journal"),
        "--json",
    ]
    code = main(argv)
    ex = json.loads(capsys.readouterr().out)["execution"]
    assert code == 1  # `changed` is reported as not gone
    st = {(i["group_id"], i["kind"], i["partition"]): i["status"] for i in ex["items"]}
    assert st == {
        # Tansu has no OffsetDelete; DeleteGroups then removed the group together with its offsets.
        (dead, "offset_commit", 0): "applied_via_delete_groups",
        (dead, "offset_commit", 1): "applied_via_delete_groups",
        (dead, "group_metadata", None): "applied",
        (changed, "offset_commit", 0): "changed_since_plan",
        (changed, "group_metadata", None): "blocked",
    }
    not_gone = {(r["group_id"], r["partition"]) for r in ex["verification"]["not_gone"]}
    assert not_gone == {(changed, 0), (changed, None)}
    assert _live(bs, dead) == {}
    assert _live(bs, changed) == {(topic, 0): 4}  # the newer commit survived

    # An OffsetDelete-only plan (the group stays alive): the real "unsupported" answer per item.
    log2 = ScenarioLog(P)
    keep = f"keep-{topic}"
    _commit(bs, keep, {(topic, 0): 1, (topic, 1): 1})
    log2.commit(keep, topic, 0, 1, NOW - 9 * DAY).commit(keep, topic, 1, 1, NOW - 1 * DAY)
    log2.write(tmp_path / "snap2")
    # The first plan is unfinished (`changed` was left alone), so a new plan on the same cluster is
    # refused until it is resumed, or --force-new-plan is given.
    argv2 = [a if a != str(tmp_path / "snap") else str(tmp_path / "snap2") for a in argv]
    assert main(argv2) == 2
    assert "--resume" in capsys.readouterr().err
    assert main([*argv2, "--force-new-plan"]) == 1
    ex2 = json.loads(capsys.readouterr().out)["execution"]
    assert [(i["partition"], i["status"]) for i in ex2["items"]] == [(0, "unsupported_by_broker")]
    assert "OffsetDeleteRequest" in ex2["items"][0]["detail"]
    assert _live(bs, keep) == {(topic, 0): 1, (topic, 1): 1}


def _mirror(bs: str) -> str:
    topic = f"mirror-{uuid.uuid4().hex[:8]}"
    admin = _admin(bs)
    admin.create_topics([NewTopic(topic, P + 1, 1)])
    admin.close()
    return topic


def _produce_argv(src: Path, bs: str, topic: str, journal: Path) -> list[str]:
    return [
        "expire",
        str(src),
        "--now",
        str(NOW),
        "--retention-ms",
        str(RET),
        "--coordinator",
        "legacy",
        "--execute",
        "--executor",
        "produce",
        "--bootstrap",
        bs,
        "--target-topic",
        topic,
        "--journal-dir",
        str(journal),
        "--json",
    ]


def test_produce_executor_writes_each_tombstone_once(kafka_broker, tmp_path: Path, capsys) -> None:
    bs = kafka_broker.bootstrap
    topic = _mirror(bs)
    src = build_scenario(tmp_path / "src")
    assert main(_produce_argv(src, bs, topic, tmp_path / "j")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["execution"]["complete"] and doc["execution"]["verification"]["not_gone"] == []
    records = read_partitions(KafkaClientConfig(bs), topic, None)
    assert {r[0] for r in records} == {P}
    assert [r[2].hex() for r in records] == [t["key_hex"] for t in doc["tombstones"]]
    assert all(r[3] is None for r in records)
    # A rerun of the same plan sends nothing.
    assert main(_produce_argv(src, bs, topic, tmp_path / "j")) == 0
    assert json.loads(capsys.readouterr().out)["execution"]["skipped_already_applied"] == len(records)
    assert len(read_partitions(KafkaClientConfig(bs), topic, None)) == len(records)


def test_produce_refuses_the_internal_topic(tmp_path: Path, capsys) -> None:
    src = build_scenario(tmp_path / "src")
    code = main(_produce_argv(src, "127.0.0.1:1", "__consumer_offsets", tmp_path / "j")[:-1])
    err = capsys.readouterr().err
    assert code == 2
    assert "--allow-internal-topic-write" in err and "bypass the group" in err
    assert not (tmp_path / "j").exists() or not list((tmp_path / "j").glob("plan-*.json"))


@pytest.mark.parametrize("fault", ["send:4", "journal:7"])
def test_interrupted_produce_run_resumes_without_duplicates(kafka_broker, tmp_path: Path, fault: str) -> None:
    bs = kafka_broker.bootstrap
    topic = _mirror(bs)
    src = build_scenario(tmp_path / "src")
    argv = _produce_argv(src, bs, topic, tmp_path / "j")
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    killed = subprocess.run(
        [sys.executable, "-m", "offsetops.cli", *argv],
        cwd=REPO,
        env={**env, FAULT_ENV: fault},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    partial = read_partitions(KafkaClientConfig(bs), topic, None)
    n = int(fault.split(":")[1])
    assert len(partial) == n  # stopped midway: n records acknowledged
    done = subprocess.run(
        [sys.executable, "-m", "offsetops.cli", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["execution"]["resumed"] and doc["execution"]["complete"]
    records = read_partitions(KafkaClientConfig(bs), topic, None)
    keys = [r[2].hex() for r in records]
    assert sorted(keys) == sorted(t["key_hex"] for t in doc["tombstones"])  # each exactly once


def test_interrupted_admin_run_resumes_and_finishes(kafka_broker, tmp_path: Path) -> None:
    """SIGKILL after the coordinator deleted a group but before the journal recorded it; rerun."""
    bs = kafka_broker.bootstrap
    topic = f"exp-{uuid.uuid4().hex[:8]}"
    admin = _admin(bs)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    groups = [f"dead-a-{topic}", f"dead-b-{topic}"]
    log = ScenarioLog(P)
    for g in groups:
        _commit(bs, g, {(topic, 0): 3})
        log.commit(g, topic, 0, 3, NOW - 9 * DAY)
    log.write(tmp_path / "snap")
    argv = [
        "expire", str(tmp_path / "snap"), "--now", str(NOW), "--retention-ms", str(RET),
        "--coordinator", "kip848", "--execute", "--executor", "admin", "--bootstrap", bs,
        "--journal-dir", str(tmp_path / "journal"), "--json",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}

    def cli(extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "offsetops.cli", *argv],
            cwd=REPO,
            env={**env, **extra_env},
            capture_output=True,
            text=True,
            timeout=180,
        )

    # The 2nd applied item is the first group's GroupMetadata tombstone: killed before its journal line.
    killed = cli({FAULT_ENV: "send:2"})
    assert killed.returncode == -9, killed.stderr
    assert _live(bs, groups[0]) == {} and _live(bs, groups[1]) == {(topic, 0): 3}

    done = cli({})
    assert done.returncode == 0, done.stderr
    ex = json.loads(done.stdout)["execution"]
    assert ex["resumed"] and ex["complete"] and ex["verification"]["not_gone"] == []
    assert all(_live(bs, g) == {} for g in groups)
    # Every planned item ends in exactly one terminal status; none is lost.
    status = {(i["group_id"], i["kind"]): i["status"] for i in ex["items"]}
    # The killed run's DeleteGroups had already removed the first group's offset: the rerun sees it
    # gone and sends nothing for it. (Re-sending DeleteGroups for that group is harmless: Tansu answers
    # NONE, Apache Kafka GROUP_ID_NOT_FOUND.)
    assert status[(groups[0], "offset_commit")] == "already_gone"
    assert status[(groups[1], "offset_commit")] == "applied_via_delete_groups"
    assert status[(groups[1], "group_metadata")] == "applied"
    assert len(status) == 4
