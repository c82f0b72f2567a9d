"""One escaping policy per medium: every hostile character is neutralised, printable text is kept."""

from __future__ import annotations

import html
import re

import pytest
from offsetops.coordinator_core.escape import (
    for_html,
    for_log,
    for_markdown,
    for_prometheus_label,
    for_slack,
    for_terminal,
    markdown_code,
    prometheus_label_value,
    slack_code,
    visible,
)

#: group ids, directory names, scan strings and clock declarations an attacker can choose
HOSTILE = (
    "pay\nverdict: HEALTHY",  # a forged line of `audit` text
    "pay\r\nverdict: HEALTHY",
    "\x1b[2J\x1b[31mred",  # clear the screen, recolour
    "\x9b31m",  # C1 CSI, ESC's one-byte twin
    "evil\u202etxt.exe",  # right-to-left override
    "a\u2066b\u2069c\u200fd\u061ce",  # isolates and marks
    "line\u2028sep\u2029para",
    "nul\x00bell\x07del\x7f",
    "\ufeffbom",
    "<!channel> *bold* _it_ ~strike~ `code` http://evil.example <http://x|y> & \"q\" 'a'",
)
#: what no policy may let through raw
RAW = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize(
    "policy", [for_terminal, for_log, for_html, for_slack, for_markdown, for_prometheus_label]
)
def test_no_policy_lets_a_control_bidi_or_separator_through(policy, text: str) -> None:
    out = policy(text)
    assert not RAW.search(out), (policy.__name__, out)
    assert len(out.splitlines()) <= 1  # no data can start a new line


def test_printable_text_of_any_script_stays_readable() -> None:
    for text in ("payments", "Zahlungen-ü", "платежи", "支付", "group.with-dots_and:colons"):
        assert for_terminal(text) == text == visible(text)


def test_escapes_are_visible_and_say_which_character_it_was() -> None:
    assert for_terminal("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert for_terminal("\x1b[31m") == "\\x1b[31m"
    assert for_terminal("x\u202ey\u2028z") == "x\\u202ey\\u2028z"
    assert for_terminal(None) == ""


def test_every_unsafe_character_is_one_python_does_not_call_printable() -> None:
    """The explicit list only restates isprintable() for the characters that matter most."""
    for code in [*range(0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, 0x2028, 0x2029,
                 *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF]:  # fmt: skip
        assert not chr(code).isprintable()
        assert chr(code) not in visible(f"a{chr(code)}b")


def test_html_neutralises_markup_and_keeps_the_text() -> None:
    out = for_html('<script>alert("x")</script>\u202e')
    assert "<script>" not in out and "&lt;script&gt;" in out and "&quot;x&quot;" in out
    assert html.unescape(out) == '<script>alert("x")</script>\\u202e'


def test_slack_data_cannot_mention_link_or_format() -> None:
    out = for_slack("<!channel> <http://evil.example|login> & more")
    assert "<" not in out and ">" not in out and "&amp; more" in out
    span = slack_code("*bold* _it_ http://evil.example `tick`\n")
    assert span.startswith("`") and span.endswith("`") and span.count("`") == 2
    assert "\\x60tick\\x60" in span and "\\n" in span


def test_markdown_keeps_placeholders_and_drops_formatting() -> None:
    assert for_markdown("abort --broker-id <leader> *now*") == "abort --broker-id &lt;leader&gt; \\*now\\*"
    assert markdown_code("--bootstrap-server <broker>") == "`--bootstrap-server <broker>`"
    assert markdown_code("a`b") == "`a\\x60b`"


def test_prometheus_label_values_cannot_split_a_sample() -> None:
    value = 'g"} 1\nfake_metric{a="b'
    out = for_prometheus_label(value)
    assert "\n" not in out and '"' not in out.replace('\\"', "")
    line = f'offsetops_lag{{group_id="{out}"}} 5'
    assert re.fullmatch(r'offsetops_lag\{group_id="(?:[^"\\]|\\.)*"\} 5', line)
    # for clients that escape \, " and newlines themselves, only the invisible characters are made visible
    assert prometheus_label_value('a"b\x1b') == 'a"b\\x1b'
