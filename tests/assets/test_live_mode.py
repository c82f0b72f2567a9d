"""Live mode in Dagster: the inventory and the reload read a cluster over the Kafka protocol (Tansu).

Tansu keeps ``__consumer_offsets`` internal, so real segment batches are replayed into a mirror topic
with the same 50 partitions, which is what ``OFFSETOPS_TOPIC`` is for (a mirrored offsets topic).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, materialize
from offsetops.checks.dagster_checks import plain_metadata
from offsetops.coordinator_core.loader import load_partition_dir
from offsetops.coordinator_core.records.reader import iter_segment_batches
from offsetops.coordinator_core.sources.logdir import open_log_dir

from tests.assets.conftest import java_available
from tests.support.broker import BrokerClient
from tests.support.shared import REAL_KAFKA_DIR

pytestmark = [pytest.mark.broker, pytest.mark.spark]

FIXTURE, PARTITION = "DanielMorales9__kafkafun", 39


def _metadata(result: Any, asset: str) -> dict[str, Any]:
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key == AssetKey(asset) and mat.partition == str(PARTITION):
            return plain_metadata(mat.metadata)
    raise AssertionError(f"no materialization of {asset} partition {PARTITION}")


def test_live_reload_asset_equals_the_file_reload(kafka_broker, tmp_path) -> None:
    root = REAL_KAFKA_DIR / FIXTURE
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    if not java_available():
        pytest.skip("Java is needed for a local SparkSession")
    from offsetops.assets.definitions import all_assets_and_checks
    from offsetops.assets.resources import OffsetsSourceResource, SlackResource, SparkResource, StateResource

    pdir = open_log_dir(root, partitions=[PARTITION]).partitions[0]
    expected = load_partition_dir(pdir)
    topic = f"offsets-mirror-{uuid.uuid4().hex[:8]}"
    with BrokerClient(kafka_broker.bootstrap) as bc:
        bc.create_topic(topic, partitions=50)
        for seg in pdir.segments:
            for batch in iter_segment_batches(seg.path, errors=[]):
                bc.produce_raw(topic, PARTITION, batch.raw())

    wanted = {AssetKey("raw_segments"), AssetKey("coordinator_cache")}
    assets = [a for a in all_assets_and_checks() if getattr(a, "keys", set()) & wanted]
    resources = {
        "offsets_source": OffsetsSourceResource(bootstrap_servers=kafka_broker.bootstrap, topic=topic),
        "spark": SparkResource(master="local[1]", app_name="offsetops-live-test"),
        "state": StateResource(output_dir=str(tmp_path / "out")),
        "slack": SlackResource(token=None),
    }
    with DagsterInstance.ephemeral() as instance:
        result = materialize(
            assets, resources=resources, instance=instance, partition_key=str(PARTITION), raise_on_error=False
        )
    assert result.success, [e.message for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    inventory = _metadata(result, "raw_segments")
    assert inventory["present"] is True
    cache = _metadata(result, "coordinator_cache")
    assert cache["errors"] == 0
    assert cache["groups"] == len(expected.groups) > 0
    assert cache["offsets"] == expected.offset_count
    assert cache["records"] == expected.stats.records
