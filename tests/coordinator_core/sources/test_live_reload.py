"""A live reload over the Kafka protocol equals the file reload of the same batches (Tansu on loopback)."""

from __future__ import annotations

import json
import uuid

import pytest
from offsetops.coordinator_core.kafka_client import KafkaClientConfig
from offsetops.coordinator_core.loader import load_partition, load_partition_dir
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.live import LiveSource
from offsetops.coordinator_core.sources.logdir import open_log_dir

from offsetops.cli import main
from tests.support.broker import BrokerClient
from tests.support.shared import REAL_KAFKA_DIR

# Partitions of real Kafka 2.x log dirs (magic 2; Tansu does not accept magic 0/1 produce requests).
CASES = [("DanielMorales9__kafkafun", 39), ("DanielMorales9__kafkafun", 13), ("DonaldY__kafka-2.7.1", 39)]


def _replay(bootstrap: str, pdir) -> str:
    topic = f"offsets-replay-{uuid.uuid4().hex[:8]}"
    with BrokerClient(bootstrap) as bc:
        bc.create_topic(topic)
        for seg in pdir.segments:
            for batch in iter_segment_batches(seg.path, errors=[]):
                bc.produce_raw(topic, 0, batch.raw())
    return topic


def _view(cache) -> dict:
    return {gid: g.to_json() for gid, g in cache.groups.items()}


@pytest.mark.broker
@pytest.mark.parametrize(("logdir", "partition"), CASES)
def test_live_reload_equals_file_reload(kafka_broker, logdir, partition):
    root = REAL_KAFKA_DIR / logdir
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    pdir = open_log_dir(root, partitions=[partition]).partitions[0]
    from_files = load_partition_dir(pdir)
    assert from_files.groups or from_files.stats.tombstones
    topic = _replay(kafka_broker.bootstrap, pdir)
    errors: list = []
    with LiveSource(KafkaClientConfig(bootstrap_servers=kafka_broker.bootstrap), topic=topic) as source:
        live = load_partition(source.iter_batches(0, errors), partition=partition)
    assert errors == [] and live.stats.errors == []
    assert live.stats.records == from_files.stats.records
    # Compacted segments are replayed densely, so record offsets shift; compare everything else.
    for cache in (live, from_files):
        for g in cache.groups.values():
            g.offsets = {
                tp: o.__class__(**{**{f: getattr(o, f) for f in o.__slots__}, "record_offset": 0})
                for tp, o in g.offsets.items()
            }
            g.metadata_record_offset = None
    assert _view(live) == _view(from_files)


@pytest.mark.broker
def test_cli_reload_from_bootstrap(kafka_broker, capsys):
    root = REAL_KAFKA_DIR / "DanielMorales9__kafkafun"
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    pdir = open_log_dir(root, partitions=[39]).partitions[0]
    topic = _replay(kafka_broker.bootstrap, pdir)
    code = main(["reload", "--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    [part] = json.loads(out)["partitions"]
    file_groups = sorted(load_partition_dir(pdir).groups)
    assert part["partition"] == 0 and [g["group_id"] for g in part["groups"]] == file_groups


def test_cli_reload_unreachable_broker_is_a_clear_error(capsys):
    code = main(["reload", "--bootstrap", "127.0.0.1:1", "--json"])
    _, err = capsys.readouterr()
    assert code == 2 and "127.0.0.1:1" in err
