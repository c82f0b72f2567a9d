"""LogCleanerManager arithmetic against hand-computed values (cleanableOffsets, LogToClean, delays)."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.cleaner.config import CleanerConfig
from offsetops.coordinator_core.cleaner.manager import (
    SegmentInfo,
    calculate_cleanable_bytes,
    cleanable_offsets,
    log_to_clean,
    max_compaction_delay,
)
from offsetops.coordinator_core.cleaner.model import Thresholds
from offsetops.coordinator_core.timefmt import format_duration

NOW = 1_000_000_000
# segments [0,10) 100 B, [10,20) 300 B, [20,30) 200 B, active [30,35) 50 B
SEGS = [
    SegmentInfo(0, 100, largest_timestamp=NOW - 5000, first_batch_timestamp=NOW - 9000),
    SegmentInfo(10, 300, largest_timestamp=NOW - 4000, first_batch_timestamp=NOW - 4900),
    SegmentInfo(20, 200, largest_timestamp=NOW - 1000, first_batch_timestamp=NOW - 3900),
    SegmentInfo(30, 50, largest_timestamp=NOW - 10, first_batch_timestamp=NOW - 900),
]


def offsets(checkpoint: int | None, *, lso: int = 35, log_start: int = 0, lag: int = 0):
    return cleanable_offsets(
        SEGS, log_start_offset=log_start, log_end_offset=35, checkpoint=checkpoint,
        last_stable_offset=lso, min_compaction_lag_ms=lag, now_ms=NOW,
    )  # fmt: skip


def test_ratio_with_checkpoint_on_a_segment_boundary() -> None:
    otc = offsets(10)
    assert (otc.first_dirty_offset, otc.first_uncleanable_dirty_offset) == (10, 30)
    assert otc.bounds == {"last_stable_offset": 35, "active_segment": 30}
    ltc = log_to_clean(SEGS, otc.first_dirty_offset, otc.first_uncleanable_dirty_offset)
    # clean = 100; cleanable = 300 + 200 = 500; ratio = 500 / 600
    assert (ltc.clean_bytes, ltc.cleanable_bytes, ltc.first_uncleanable_offset) == (100, 500, 30)
    assert ltc.cleanable_ratio == pytest.approx(500 / 600)


def test_no_checkpoint_means_log_start_and_everything_but_the_active_segment_is_dirty() -> None:
    otc = offsets(None)
    assert otc.first_dirty_offset == 0 and not otc.force_update_checkpoint
    ltc = log_to_clean(SEGS, otc.first_dirty_offset, otc.first_uncleanable_dirty_offset)
    assert (ltc.clean_bytes, ltc.cleanable_bytes) == (0, 600)
    assert ltc.cleanable_ratio == 1.0


def test_checkpoint_inside_a_segment_counts_that_segment_as_both_clean_and_cleanable() -> None:
    # LogToClean: cleanBytes = segments with base < 15 (0 and 10); cleanable starts at floor(15) = 10
    ltc = log_to_clean(SEGS, 15, 30)
    assert (ltc.clean_bytes, ltc.cleanable_bytes) == (400, 500)
    assert ltc.cleanable_ratio == pytest.approx(500 / 900)


def test_lso_inside_a_segment_stops_cleanable_bytes_at_that_segment() -> None:
    otc = offsets(10, lso=25)
    assert otc.first_uncleanable_dirty_offset == 25
    assert calculate_cleanable_bytes(SEGS, 10, 25) == (20, 300)
    assert log_to_clean(SEGS, 10, 25).cleanable_ratio == pytest.approx(300 / 400)


def test_lso_below_the_checkpoint_is_clamped_to_the_first_dirty_offset() -> None:
    otc = offsets(20, lso=12)
    assert otc.first_uncleanable_dirty_offset == 20
    ltc = log_to_clean(SEGS, 20, 20)
    assert (ltc.clean_bytes, ltc.cleanable_bytes) == (400, 0)


def test_checkpoint_beyond_log_end_resets_to_log_start() -> None:
    otc = offsets(40)
    assert (otc.first_dirty_offset, otc.force_update_checkpoint, otc.checkpoint_reset) == (
        0,
        True,
        "above_log_end",
    )


def test_checkpoint_below_log_start_resets_to_log_start() -> None:
    otc = offsets(5, log_start=10)
    assert (otc.first_dirty_offset, otc.checkpoint_reset) == (10, "below_log_start")
    ltc = log_to_clean(SEGS, 10, otc.first_uncleanable_dirty_offset)
    assert (ltc.clean_bytes, ltc.cleanable_bytes) == (100, 500)


def test_min_compaction_lag_stops_at_the_first_segment_with_recent_data() -> None:
    # segment 20's largest timestamp is NOW-1000, inside a 2000 ms lag; segment 10's (NOW-4000) is not
    otc = offsets(10, lag=2000)
    assert otc.bounds["min_compaction_lag"] == 20
    assert otc.first_uncleanable_dirty_offset == 20
    assert log_to_clean(SEGS, 10, 20).cleanable_ratio == pytest.approx(300 / 400)
    assert "min_compaction_lag" not in offsets(10, lag=500).bounds


def test_max_compaction_delay_uses_the_earliest_first_batch_timestamp_of_dirty_non_active_segments() -> None:
    # dirty non-active from 10: first-batch stamps NOW-4900 and NOW-3900; lag 4000 -> 900 ms overdue
    assert max_compaction_delay(SEGS, 10, 4000, NOW) == 900
    assert max_compaction_delay(SEGS, 10, 5000, NOW) == 0
    assert max_compaction_delay(SEGS, 30, 0, NOW) == 0  # only the active segment is dirty


def test_dedupe_capacity_is_buffer_over_threads_over_24_bytes_times_load_factor() -> None:
    assert CleanerConfig().dedupe_capacity == int((134_217_728 // 24) * 0.9)
    cfg = CleanerConfig().with_values({"log.cleaner.dedupe.buffer.size": "2400", "log.cleaner.threads": "2"},
                                      source="user")  # fmt: skip
    assert cfg.dedupe_capacity == 45  # 1200 B per thread / 24 = 50 slots * 0.9


def test_topic_value_beats_broker_default_and_sources_are_recorded() -> None:
    cfg = CleanerConfig().with_values(
        {"log.cleaner.min.cleanable.ratio": "0.3", "min.cleanable.dirty.ratio": "0.2",
         "log.cleaner.delete.retention.ms": "1000"}, source="live",
    )  # fmt: skip
    assert cfg.min_cleanable_dirty_ratio == 0.2 and cfg.delete_retention_ms == 1000
    assert (
        cfg.source_of("min_cleanable_dirty_ratio") == "live" and cfg.source_of("segment_bytes") == "default"
    )


def test_thresholds_overrides_and_unknown_names() -> None:
    th = Thresholds().with_overrides({"hanging_transaction_ms": "600000", "dedupe_tight_ratio": "0.5"})
    assert th.hanging_transaction_ms == 600_000 and th.dedupe_tight_ratio == 0.5
    with pytest.raises(ValueError, match="unknown threshold"):
        Thresholds().with_overrides({"nope": "1"})


@pytest.mark.parametrize(
    ("ms", "text"),
    [(12_000, "12 s"), (7 * 60_000, "7 min"), (5 * 3_600_000 + 12 * 60_000, "5 h 12 min"),
     (26 * 3_600_000, "26 h"), ((3 * 24 + 4) * 3_600_000, "3 d 4 h")],
)  # fmt: skip
def test_format_duration(ms: int, text: str) -> None:
    assert format_duration(ms) == text
