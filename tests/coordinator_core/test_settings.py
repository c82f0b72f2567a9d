"""The core's parsers of operator-given text: plain values or a ValueError that says what is wrong."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.settings import parse_non_negative_int, parse_pairs, parse_positive_int


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
