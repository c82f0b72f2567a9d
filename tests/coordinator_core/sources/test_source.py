"""One Source: every read of a log dir, several brokers' log dirs or a live cluster keeps its limits.

``--max-batch-bytes`` bounds a batch whatever the bytes say. It used to be dropped by ``reload --until``
(the cut read segments with the default bound) and by live reads; these tests hold each path to it.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from offsetops.coordinator_core.asof import Cut
from offsetops.coordinator_core.kafka_client import KafkaClientConfig
from offsetops.coordinator_core.records.builder import build_record_batch
from offsetops.coordinator_core.schema import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from offsetops.coordinator_core.sources.source import ReadLimits, Source

from offsetops.cli import main
from tests.support.broker import BrokerClient, TansuBroker

T0 = 1_700_000_000_000
LIMIT = 2048  # the big batch below is over it, the small ones far under


def _commit(offset: int, *, base: int, metadata: str = "") -> bytes:
    key = encode_key(OffsetCommitKey(group="g", topic="orders", partition=0))
    value = encode_value(
        OffsetCommitValue(version=3, offset=offset, leader_epoch=1, metadata=metadata, commit_timestamp=T0)
    )
    return build_record_batch([(key, value, T0)], base_offset=base)


BATCHES = [_commit(1, base=0), _commit(2, base=1, metadata="m" * 6000), _commit(3, base=2)]


def _errors(doc: dict) -> list[dict]:
    return [e for p in doc["partitions"] for e in p["stats"]["errors"]]


def _reload(capsys, *argv: str) -> dict:
    assert main(["reload", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    pdir = tmp_path / "__consumer_offsets-0"
    pdir.mkdir()
    (pdir / "00000000000000000000.log").write_bytes(b"".join(BATCHES))
    return tmp_path


def test_reload_until_keeps_max_batch_bytes(log_dir: Path, capsys) -> None:
    whole = _reload(capsys, str(log_dir), "--max-batch-bytes", str(LIMIT))
    cut = _reload(capsys, str(log_dir), "--until", "1000", "--max-batch-bytes", str(LIMIT))
    assert _errors(whole), "the whole reload refuses the big batch"
    assert [e["kind"] for e in _errors(cut)] == [e["kind"] for e in _errors(whole)]
    assert cut["settings"]["max_batch_bytes"] == {"value": LIMIT, "source": "flag --max-batch-bytes"}
    unbounded = _reload(capsys, str(log_dir), "--until", "1000")
    assert _errors(unbounded) == [] and unbounded["partitions"][0]["groups"][0]["offsets"][0]["offset"] == 3


def test_the_limit_comes_from_the_environment_too(log_dir: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("OFFSETOPS_MAX_BATCH_BYTES", str(LIMIT))
    cut = _reload(capsys, str(log_dir), "--until", "1000")
    assert _errors(cut) and cut["settings"]["max_batch_bytes"]["source"] == "env OFFSETOPS_MAX_BATCH_BYTES"


def test_source_reads_whole_and_cut_within_its_limits(log_dir: Path) -> None:
    source = Source(log_dir=str(log_dir), limits=ReadLimits(max_batch_bytes=LIMIT))
    [whole] = source.load_caches()
    [cut] = source.load_caches(cut=Cut(until_offset=1000))
    assert whole.stats.errors and len(cut.stats.errors) == len(whole.stats.errors)
    [empty] = source.load_or_empty([0, 7], num_partitions=50, semantics="java")[1:]
    assert empty.partition == 7 and empty.groups == {}


def test_a_source_is_exactly_one_thing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one of"):
        Source()
    with pytest.raises(ValueError, match="one of"):
        Source(log_dir=str(tmp_path), client=KafkaClientConfig(bootstrap_servers="127.0.0.1:9"))
    with pytest.raises(ValueError, match="not a live cluster"):
        Source(log_dir=str(tmp_path)).live()


@pytest.mark.broker
def test_live_reads_keep_max_batch_bytes(kafka_broker: TansuBroker, capsys) -> None:
    topic = f"limits-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic)
        for batch in BATCHES:
            bc.produce_raw(topic, 0, batch)
    live = ["--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--partition", "0"]
    assert _errors(_reload(capsys, *live)) == []
    bounded = _reload(capsys, *live, "--max-batch-bytes", str(LIMIT))
    assert _errors(bounded), "the live read refuses the big batch as the file read does"
    cut = _reload(capsys, *live, "--until", "1000", "--max-batch-bytes", str(LIMIT))
    assert [e["kind"] for e in _errors(cut)] == [e["kind"] for e in _errors(bounded)]
    source = Source(
        client=KafkaClientConfig(bootstrap_servers=kafka_broker.bootstrap), topic=topic, partitions=(0,),
        limits=ReadLimits(max_batch_bytes=LIMIT),
    )  # fmt: skip
    with source.live() as reader:
        assert reader.max_batch_bytes == LIMIT
