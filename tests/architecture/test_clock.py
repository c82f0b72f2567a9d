"""No core function reads the wall clock by itself: coordinator_core/clock.py is the one clock.

A rule evaluated at an instant takes that instant (the run model's clock: --now, the log dir's
declaration, else the wall clock the front end reads through ``clock``); a hidden ``time.time()``
fallback would evaluate a snapshot at today's date and fork the verdicts between surfaces.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "coordinator_core"
#: (module, attribute) calls that read the wall clock
WALL_READS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
}


def _wall_reads(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
            if (name, node.func.attr) in WALL_READS:
                found.append(f"{path.relative_to(CORE.parent)}:{node.lineno}: {name}.{node.func.attr}()")
    return found


def test_only_the_clock_module_reads_the_wall_clock() -> None:
    modules = [p for p in CORE.rglob("*.py") if p.name != "clock.py" or p.parent != CORE]
    reads = [hit for p in sorted(modules) for hit in _wall_reads(p)]
    assert not reads, "read the instant from the run's clock (coordinator_core/clock.py):\n" + "\n".join(
        reads
    )


def test_the_detector_sees_a_wall_read(tmp_path: Path) -> None:
    sample = CORE / "clock.py"
    assert _wall_reads(sample), "clock.py reads the wall clock; the detector must see it"


@pytest.mark.parametrize("name", ["audit_log_dir", "audit_log_dirs"])
def test_the_cleaner_audit_needs_its_instant(name: str, tmp_path: Path) -> None:
    from offsetops.coordinator_core.cleaner import audit

    with pytest.raises(TypeError, match="now_ms"):
        getattr(audit, name)(tmp_path)
