"""The core's parsers of operator-given text: plain values or a ValueError that says what is wrong."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.settings import (
    parse_bounded_regex,
    parse_epoch_time,
    parse_forecast_hours,
    parse_http_url,
    parse_non_negative_int,
    parse_offsets_partitions,
    parse_pairs,
    parse_positive_int,
)


def test_parse_positive_int() -> None:
    assert parse_positive_int("1") == 1
    assert parse_positive_int(" 33554432 ") == 33554432
    with pytest.raises(ValueError, match="must be at least 1, got 0"):
        parse_positive_int("0")
    with pytest.raises(ValueError, match="not an integer: '1e3'"):
        parse_positive_int("1e3")


def test_parse_non_negative_int() -> None:
    assert parse_non_negative_int("0") == 0
    with pytest.raises(ValueError, match="must not be negative, got -1"):
        parse_non_negative_int("-1")
    with pytest.raises(ValueError, match="not an integer: 'x'"):
        parse_non_negative_int("x")


def test_parse_pairs_last_key_wins_and_names_the_option() -> None:
    assert parse_pairs(["a=1", "b=2=3", "a=4"], option="--conf") == {"a": "4", "b": "2=3"}
    with pytest.raises(ValueError, match="--conf expects KEY=VALUE, got 'a'"):
        parse_pairs(["a"], option="--conf")


def test_ranges_refuse_absurd_but_parseable_values() -> None:
    with pytest.raises(ValueError, match="must be at most 9,223,372,036,854,775,807"):
        parse_positive_int(str(2**63))
    with pytest.raises(ValueError, match="must be at most 10,000, got 100,000"):
        parse_offsets_partitions("100000")
    with pytest.raises(ValueError, match="not an integer: '99999"):
        parse_positive_int("9" * 5000)  # more digits than int() converts: still a ValueError
    for text in ("nan", "inf", "0", "8785"):
        with pytest.raises(ValueError, match="finite number above 0 and at most 8784"):
            parse_forecast_hours(text)
    assert parse_forecast_hours("0.5") == 0.5


def test_times_regexes_and_urls_are_checked() -> None:
    assert parse_epoch_time("2024-05-01T00:00:00Z") == 1_714_521_600_000
    with pytest.raises(ValueError, match="after the year 9999"):
        parse_epoch_time(str(10**16))
    with pytest.raises(ValueError, match="repeats more than 1000 times"):
        parse_bounded_regex("a{99999999999}")
    assert parse_bounded_regex("app-[0-9]{1,3}").fullmatch("app-12")
    assert parse_http_url(" http://broker-2:9404/metrics ") == "http://broker-2:9404/metrics"
    with pytest.raises(ValueError, match="not a URL"):
        parse_http_url("http://host:99999/metrics")
