"""describe with --bootstrap: the cache over Fetch, log start/end over ListOffsets (Tansu on loopback)."""

from __future__ import annotations

import json
import uuid

import pytest

from offsetops.cli import main
from tests.support.broker import BrokerClient, kafka_python_batch
from tests.support.forensics_log import GROUP, forensics_batches


@pytest.mark.broker
def test_describe_live_uses_list_offsets(kafka_broker, capsys):
    offsets_topic = f"offsets-{uuid.uuid4().hex[:8]}"
    data_topic = f"t-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(offsets_topic)
        bc.create_topic(data_topic, partitions=2)
        for batch in forensics_batches(data_topic):
            bc.produce_raw(offsets_topic, 0, batch)
        for i in range(12):  # 12 records on partition 1: its log end is 12
            bc.produce_raw(data_topic, 1, kafka_python_batch([(b"k", str(i).encode())]))
    code = main(
        [
            "describe",
            GROUP,
            "--bootstrap",
            kafka_broker.bootstrap,
            "--topic-name",
            offsets_topic,
            "--partition",
            "0",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["log_offsets_from"] == "ListOffsets on the cluster"
    (group,) = doc["groups"]
    # The forensics log ends with t-0 tombstoned and t-1 at 7 (committed while nobody owned it).
    (row,) = group["rows"]
    assert (row["topic"], row["partition"], row["committed_offset"]) == (data_topic, 1, 7)
    assert (row["log_start_offset"], row["log_end_offset"], row["lag"], row["status"]) == (0, 12, 5, "ok")
    assert row["offsets_source"] == "list_offsets"


@pytest.mark.broker
def test_describe_live_names_a_missing_data_topic(kafka_broker, capsys):
    offsets_topic = f"offsets-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(offsets_topic)
        for batch in forensics_batches("never-created-topic"):
            bc.produce_raw(offsets_topic, 0, batch)
    code = main(
        [
            "describe",
            GROUP,
            "--bootstrap",
            kafka_broker.bootstrap,
            "--topic-name",
            offsets_topic,
            "--partition",
            "0",
            "--json",
        ]
    )
    out, _err = capsys.readouterr()
    assert code == 0
    (row,) = json.loads(out)["groups"][0]["rows"]
    assert row["status"] == "log_unknown" and "never-created-topic" in row["offsets_note"]


@pytest.mark.broker
def test_history_live(kafka_broker, capsys):
    offsets_topic = f"offsets-{uuid.uuid4().hex[:8]}"
    data_topic = f"t-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(offsets_topic)
        bc.create_topic(data_topic, partitions=2)
        for batch in forensics_batches(data_topic):
            bc.produce_raw(offsets_topic, 0, batch)
        # t-0 log end 200. One record per batch: Tansu's ListOffsets LATEST answers one past the last
        # batch's base offset, not its last offset, so multi-record batches would understate it.
        for i in range(200):
            bc.produce_raw(data_topic, 0, kafka_python_batch([(b"k", str(i).encode())]))
    code = main(
        [
            "history",
            "--bootstrap",
            kafka_broker.bootstrap,
            "--topic-name",
            offsets_topic,
            "--num-partitions",
            "1",
            "--group",
            GROUP,
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    flags = [(c["partition"], c["offset"], c["flags"]) for c in doc["commits"]]
    assert flags == [
        (0, 100, []),
        (0, 150, []),
        (1, 7, ["past_log_end", "not_assigned"]),
        (0, 20, ["rewind"]),
        (0, 500, []),
        (0, 30, []),
        (0, 5000, ["past_log_end"]),
        (0, 6000, []),
        (0, None, ["tombstone"]),
    ]
    assert doc["commits"][4]["outcome"] == "aborted"
