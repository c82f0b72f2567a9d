"""The partitionFor expectation: Spark expression == partition_for, and it works as a GX expectation."""

from __future__ import annotations

import random
from typing import Any

import pytest
from offsetops.checks.expectations import GROUP_STATES, TABLE_SCHEMAS, build_checks
from offsetops.checks.kafka_expectations import (
    ExpectColumnPairValuesToMatchKafkaPartitionFor,
    partition_for_column,
)
from offsetops.coordinator_core.partitioner import java_string_hashcode, partition_for

from tests.checks.conftest import NOW_MS

EDGE_IDS = [
    "",
    "a",
    "polygenelubricants",  # hashCode == Integer.MIN_VALUE, Utils.abs gives 0
    "console-consumer-48213",
    "日本語グループ",
    "emoji-\U0001f600-group",  # a surrogate pair in UTF-16
    "\uffff" * 9,
]


def _random_ids(n: int) -> list[str]:
    rnd = random.Random(20240611)
    alphabet = "abcXYZ-_.0123456789éß日\U0001f600"
    return ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40))) for _ in range(n)]


def test_edge_case_is_min_value() -> None:
    assert java_string_hashcode("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants") == 0


@pytest.mark.spark
@pytest.mark.parametrize("num_partitions", [1, 7, 50, 200])
def test_spark_expression_matches_partition_for(spark: Any, num_partitions: int) -> None:
    from pyspark.sql import functions as F

    ids = EDGE_IDS + _random_ids(1500)
    df = spark.createDataFrame([(g,) for g in ids], "group_id string")
    rows = df.select("group_id", partition_for_column(F.col("group_id"), num_partitions).alias("p")).collect()
    assert len(rows) == len(ids)
    mismatches = [(r.group_id, r.p) for r in rows if r.p != partition_for(r.group_id, num_partitions)]
    assert mismatches == []


def test_custom_expectation_on_pandas() -> None:
    """The same expectation class runs on GX's pandas engine, through a real context."""
    import great_expectations as gx
    import pandas as pd

    ids = ["payments-consumer", "polygenelubricants", "connect-s3-sink", "日本語グループ"]
    frame = pd.DataFrame({"group_id": ids, "offsets_partition": [partition_for(g) for g in ids]})
    frame.loc[2, "offsets_partition"] = (frame.loc[2, "offsets_partition"] + 1) % 50
    context = gx.get_context(mode="ephemeral")
    batch = (
        context.data_sources.add_pandas("pandas")
        .add_dataframe_asset("groups")
        .add_batch_definition_whole_dataframe("whole dataframe")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    result = batch.validate(
        ExpectColumnPairValuesToMatchKafkaPartitionFor(column_A="group_id", column_B="offsets_partition"),
        result_format={"result_format": "SUMMARY"},
    )
    assert not result.success
    assert result.result["unexpected_count"] == 1
    assert result.result["partial_unexpected_list"][0][0] == "connect-s3-sink"


def test_custom_expectation_rejects_bad_partition_count() -> None:
    with pytest.raises(ValueError, match="positive"):
        ExpectColumnPairValuesToMatchKafkaPartitionFor(
            column_A="group_id", column_B="offsets_partition", num_partitions=0
        )


def test_checks_are_well_formed() -> None:
    specs = build_checks(now_ms=NOW_MS, num_partitions=50, skew_ms=60_000)
    ids = [s.check_id for s in specs]
    assert len(ids) == len(set(ids))
    for spec in specs:
        assert spec.table in TABLE_SCHEMAS
        assert spec.severity in ("error", "warning")
        assert spec.expectation.severity.value == ("critical" if spec.severity == "error" else "warning")
        assert spec.expectation.meta == {
            "check_id": spec.check_id,
            "table": spec.table,
            "severity": spec.severity,
        }
        assert spec.expectation.description
        columns = set(TABLE_SCHEMAS[spec.table].fieldNames())
        for key in ("column", "column_A", "column_B"):
            if hasattr(spec.expectation, key):
                assert getattr(spec.expectation, key) in columns, spec.check_id
        for column in getattr(spec.expectation, "column_list", None) or []:
            assert column in columns, spec.check_id
    by_id = {s.check_id: s for s in specs}
    assert by_id["offsets.commit_timestamp_sane"].expectation.max_value == NOW_MS + 60_000
    assert by_id["offsets.commit_timestamp_sane"].expectation.min_value == 1_293_840_000_000
    assert set(by_id["groups.state_known"].expectation.value_set) == set(GROUP_STATES)
    assert by_id["members.assignment_within_subscription"].severity == "warning"
    assert by_id["decode_errors.empty"].severity == "error"
