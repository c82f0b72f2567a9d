"""Peak resident memory of this process, measured so that nothing inherited can hide or fake it.

``ru_maxrss`` is the wrong gauge in a test suite: Linux carries the parent's high-water mark across
``fork``/``exec`` into a child, and a long pytest process keeps the peak of every earlier test. The
kernel's ``VmHWM`` belongs to the current address space and can be reset (``clear_refs`` value 5), so a
measurement starts at the current footprint and sees only what happens after it.
"""

from __future__ import annotations

from pathlib import Path

#: Python source to end a ``python -c`` program with (after ``import sys``): prints its own peak, in KiB.
PRINT_PEAK_KB = (
    "print('PEAK_RSS_KB', next(int(l.split()[1]) for l in open('/proc/self/status') "
    "if l.startswith('VmHWM:')), file=sys.stderr)\n"
)


def peak_rss_mb() -> float:
    """This process's peak resident set since its start or the last :func:`start_peak_rss`, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("/proc/self/status has no VmHWM line")


def start_peak_rss() -> float:
    """Reset the peak to the current resident set and return it (MiB): measure growth from here."""
    Path("/proc/self/clear_refs").write_text("5")
    return peak_rss_mb()
