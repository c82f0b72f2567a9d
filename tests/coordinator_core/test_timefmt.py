"""Human time: ISO-8601 and ages beside epoch ms, and the forms every time option accepts."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.timefmt import (
    ago,
    describe_time,
    format_duration,
    iso_utc,
    parse_duration,
    parse_time,
)

NOW = 1_700_000_000_000  # 2023-11-14T22:13:20Z


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (12_000, "12 s"),
        (7 * 60_000, "7 min"),
        (5 * 3_600_000 + 12 * 60_000, "5 h 12 min"),
        (26 * 3_600_000, "26 h"),
        (3 * 86_400_000 + 4 * 3_600_000, "3 d 4 h"),
        (2 * 86_400_000, "2 d"),
    ],
)
def test_format_duration(ms, text):
    assert format_duration(ms) == text


def test_iso_and_age_beside_epoch_ms():
    assert iso_utc(NOW) == "2023-11-14T22:13:20.000Z"
    assert iso_utc(None) is None
    three_d_4_h = NOW - (3 * 86_400_000 + 4 * 3_600_000)
    assert ago(three_d_4_h, NOW) == "3 d 4 h ago"
    assert ago(NOW + 7_200_000, NOW) == "in 2 h"
    assert describe_time(three_d_4_h, NOW) == f"{three_d_4_h} (2023-11-11T18:13:20.000Z, 3 d 4 h ago)"
    # A corrupt timestamp far outside datetime's range still prints, as the number it is.
    assert describe_time(2**62, NOW) == str(2**62)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        ("1700000000000", NOW),
        ("1700000000000ms", NOW),
        ("2023-11-14T22:13:20Z", NOW),
        ("2023-11-14T22:13:20+00:00", NOW),
        ("2023-11-14 22:13:20", NOW),  # no zone: UTC, as Kafka's tools print
        ("2023-11-15T00:13:20+02:00", NOW),
        ("2023-11-14", NOW - (22 * 3600 + 13 * 60 + 20) * 1000),
        ("-2h", NOW - 7_200_000),
        ("-3d4h", NOW - (3 * 86_400_000 + 4 * 3_600_000)),
        ("+30min", NOW + 1_800_000),
        ("-1.5h", NOW - 5_400_000),
    ],
)
def test_parse_time_forms(text, expected):
    assert parse_time(text, now=NOW) == expected


@pytest.mark.parametrize("bad", ["yesterday", "-2 parsecs", "2023-13-45", "", "--2h"])
def test_parse_time_rejects_with_the_accepted_forms(bad):
    with pytest.raises(ValueError, match="ISO-8601"):
        parse_time(bad, now=NOW)


def test_parse_duration():
    assert parse_duration("90min") == 5_400_000
    assert parse_duration("1w") == 7 * 86_400_000
    with pytest.raises(ValueError):
        parse_duration("soon")
