"""Each partition's check evaluation targets that partition's newest materialization, found in a fixed
number of queries on a real (ephemeral) Dagster instance, whatever the number of partitions."""

from __future__ import annotations

from typing import Any

import pytest
from dagster import AssetKey, AssetMaterialization, AssetRecordsFilter, DagsterInstance
from offsetops.checks.dagster_checks import latest_materializations

KEY = AssetKey("cleaner_audit")


def _materialize(instance: DagsterInstance, key: AssetKey, partition: str, round_: int) -> None:
    instance.report_runless_asset_event(
        AssetMaterialization(asset_key=key, partition=partition, metadata={"round": round_})
    )


def _one_query_each(instance: DagsterInstance, partition: str) -> Any:
    """The newest record of one partition, asked on its own (what each evaluation must target)."""
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=KEY, asset_partitions=[partition]), limit=1
    ).records
    return records[0] if records else None


def test_each_partition_gets_its_newest_materialization_in_one_records_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    partitions = [str(p) for p in range(12)]
    with DagsterInstance.ephemeral() as instance:
        for round_ in range(3):
            for p in partitions[:-1]:  # the last partition is never materialized
                _materialize(instance, KEY, p, round_)
        _materialize(instance, KEY, "4", 9)  # restated last: the worst partition of the run
        _materialize(instance, AssetKey("expiration_plan"), "4", 10)  # another asset's newer event
        expected = {p: _one_query_each(instance, p) for p in partitions}

        asked: list[Any] = []
        fetch = instance.fetch_materializations

        def counted(*args: Any, **kwargs: Any) -> Any:
            asked.append(args)
            return fetch(*args, **kwargs)

        monkeypatch.setattr(instance, "fetch_materializations", counted)
        latest = latest_materializations(instance, KEY, partitions)

    assert len(asked) == 1, "one records query for every partition, not one per partition"
    assert set(latest) == set(partitions[:-1]), "a partition never materialized has no target"
    for p, record in latest.items():
        assert record.storage_id == expected[p].storage_id, p
        assert record.run_id == expected[p].run_id and record.timestamp == expected[p].timestamp
    restated = latest["4"].asset_materialization
    assert restated is not None and restated.metadata["round"].value == 9


def test_no_partitions_asks_nothing() -> None:
    with DagsterInstance.ephemeral() as instance:
        assert latest_materializations(instance, KEY, []) == {}
