"""A partition's cache whose load met an error storm: one example, a summary of six repeats, a notice."""

from __future__ import annotations

from offsetops.coordinator_core.cache import CoordinatorCache, LoadStats
from offsetops.coordinator_core.errors import DecodeError


def error_storm_cache(partition: int) -> CoordinatorCache:
    """No groups; decode errors standing for seven problems (one row summarises six) and one notice."""
    stats = LoadStats()
    stats.errors.extend(
        [
            DecodeError("corrupt_record", "no key", "00.log", partition, 120, 40),
            DecodeError(
                "corrupt_record", "no key (and 6 more in this batch)", "00.log", partition, 120, 41, count=6
            ),
            DecodeError("zero_tail", "zeros to the end", "00.log", partition, 900, None),
        ]
    )
    return CoordinatorCache(partition=partition, groups={}, stats=stats, num_partitions=50)
