"""One escaping policy per output medium, for every string that comes from the data.

Group ids, topic names, member and client ids, directory and file names, broker-scan strings and the
clock file's ``declared_by`` are untrusted: any of them may hold a newline, an ANSI escape, a bidi
override (U+202E) or a line separator (U+2028). Every renderer passes them through the policy of its
medium, so no data string can start a line, recolour a terminal, reorder what a reader sees, ping a
Slack channel or split a Prometheus sample:

=====================  =======================================================================
medium                 policy
=====================  =======================================================================
terminal, log lines    :func:`for_terminal` / :func:`for_log`: every control character (C0 with
                       CR/LF/TAB, DEL, C1 with ESC's CSI twin), bidi control and line or paragraph
                       separator, and anything else Python does not call printable, shown as a
                       visible ``\\n`` / ``\\xNN`` / ``\\uNNNN`` escape (as Python's repr writes
                       them); printable non-ASCII stays readable
HTML                   :func:`for_html`: the same characters made visible, then ``& < > " '`` as
                       entities (text and attribute values alike)
Slack mrkdwn           :func:`for_slack`: the same characters made visible, ``& < >`` as entities;
                       :func:`slack_code` puts a data value in an inline code span, where Slack
                       applies no ``*bold*`` / ``_italic_`` and links no URL (a backtick in the data
                       is shown as ``\\x60`` so it cannot close the span)
Markdown (Dagster      :func:`for_markdown`: the same characters made visible, ``& < >`` as entities
descriptions)          and Markdown's punctuation backslash-escaped; :func:`markdown_code` a code span
Prometheus labels      :func:`for_prometheus_label`: the same characters made visible, then the
                       exposition format's ``\\\\``, ``\\"`` and ``\\n`` escapes;
                       :func:`prometheus_label_value` only the first half, for clients
                       (``prometheus_client``) that apply the exposition escapes themselves
=====================  =======================================================================
"""

from __future__ import annotations

import html
import re

__all__ = [
    "for_html",
    "for_log",
    "for_markdown",
    "for_prometheus_label",
    "for_slack",
    "for_terminal",
    "markdown_code",
    "prometheus_label_value",
    "slack_code",
    "visible",
]

# Bidi controls are format characters (Cf) and the separators are Zl/Zp, so str.isprintable() is False for
# them, as for every C0/C1 control and DEL; this pattern names the ones every policy must catch explicitly
# (a test pins it against isprintable()).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    n = ord(c)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def visible(text: object) -> str:
    """``text`` with every character that is not printable shown as a ``\\xNN``-style escape.

    The one rule under every policy: no data character can start a new line, move the cursor, switch
    colours or reverse the display order; printable characters (any script) stay as they are.
    """
    s = "" if text is None else str(text)
    if s.isprintable() and not _UNSAFE.search(s):
        return s
    return "".join(c if c.isprintable() and not _UNSAFE.match(c) else _escape_char(c) for c in s)


def for_terminal(text: object) -> str:
    """A data string for CLI text output (one line, nothing the terminal would interpret)."""
    return visible(text)


def for_log(text: object) -> str:
    """A data string for a log line (Python logging, Dagster's context log): as on a terminal."""
    return visible(text)


def for_html(text: object) -> str:
    """A data string for HTML text or a quoted attribute value."""
    return html.escape(visible(text), quote=True)


def for_slack(text: object) -> str:
    """A data string for Slack ``mrkdwn`` or ``plain_text`` (``& < >`` are Slack's control characters:
    ``<!channel>`` and ``<http://x|y>`` become harmless text)."""
    return visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_code(text: object) -> str:
    """A data value as a Slack inline code span: no formatting, no mention, no link from the data."""
    return "`" + for_slack(text).replace("`", "\\x60") + "`"


def prometheus_label_value(text: object) -> str:
    """A label value for a client that escapes ``\\``, ``"`` and newlines itself (prometheus_client)."""
    return visible(text)


def for_prometheus_label(text: object) -> str:
    """A label value written by hand into the text exposition format (between the double quotes)."""
    return visible(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def for_markdown(text: object) -> str:
    """A data string for Markdown text (Dagster check and asset descriptions): no emphasis, link,
    heading or HTML tag from the data; ``<broker>`` stays visible."""
    s = visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", s)


def markdown_code(text: object) -> str:
    """A data value as a Markdown code span (kept verbatim: ``<broker>`` survives)."""
    return "`" + visible(text).replace("`", "\\x60") + "`"
