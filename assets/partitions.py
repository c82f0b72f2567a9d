"""The ``__consumer_offsets`` partitions as Dagster partitions, and which of them a run covers."""

from __future__ import annotations

from typing import Any

from dagster import StaticPartitionsDefinition
from offsetops.assets.resources.deployment import num_partitions_from_env

# Dagster's run tags for one partition, or for one run over a range of them (a single-run backfill);
# the documented tag names, spelled here because Dagster exports them only from a private module.
PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"
PARTITION_TAG = "dagster/partition"


def offsets_partitions_def(num_partitions: int) -> StaticPartitionsDefinition:
    """One Dagster partition per ``__consumer_offsets`` partition: ``"0"`` .. ``"N-1"``."""
    return StaticPartitionsDefinition([str(p) for p in range(num_partitions)])


NUM_PARTITIONS = num_partitions_from_env()
OFFSETS_PARTITIONS = offsets_partitions_def(NUM_PARTITIONS)
"""The partitions every offsetops asset shares, fixed when the code location loads."""


def run_partitions(context: Any) -> list[int]:
    """The ``__consumer_offsets`` partitions this run covers (one, a range, or all of a backfill)."""
    return sorted(int(k) for k in context.partition_keys)


def all_partitions_tags(num_partitions: int | None = None) -> dict[str, str]:
    """Run tags that make one run cover every offsets partition (one Spark job, not N runs)."""
    last = (NUM_PARTITIONS if num_partitions is None else num_partitions) - 1
    return {PARTITION_RANGE_START_TAG: "0", PARTITION_RANGE_END_TAG: str(last)}


def partitions_label(partitions: list[int]) -> str:
    """``0-49`` for a contiguous range, ``3,7,9`` otherwise (for file names and metadata)."""
    if not partitions:
        return "none"
    if partitions == list(range(partitions[0], partitions[-1] + 1)) and len(partitions) > 1:
        return f"{partitions[0]}-{partitions[-1]}"
    return ",".join(str(p) for p in partitions)


def scope_metadata(partition: int) -> dict[str, str]:
    """The first metadata key of every per-partition materialization: whose numbers these are, so a
    default asset page (which shows one partition's materialization) never reads as the topic's."""
    return {
        "scope": f"partition {partition} of __consumer_offsets only; the topic's verdict and its worst "
        "partitions are on offsets_topic_summary"
    }
