"""A resumed ``coordinator_cache`` makes the cleaner audit's scan in the same read, resumed with each
partition's fold (``assets/reload_resume.py``): ``cleaner_audit`` judges it without reading a segment."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.assets.conftest import NUM_PARTITIONS, java_available, materialize_assets


def _audit_partitions(out: Path) -> dict[int, dict[str, Any]]:
    """The audit report's partitions with segments, without what history adds (verdicts and progress)."""
    doc = json.loads((out / "reports" / "cleaner_audit.json").read_text())
    history = ("verdict", "reasons", "checkpoint_advanced", "stalled_for_ms", "previous_audit_ms")
    history += ("live_size_bytes", "growth_bytes_per_hour")
    return {
        p["partition"]: {k: v for k, v in p.items() if k not in history}
        for p in doc["partitions"]
        if p["segments"]
    }


@pytest.mark.slow
def test_the_second_run_after_an_append_judges_the_scan_resumed_with_the_reload(
    simulated_log_dir: Path, tmp_path: Path
) -> None:
    if not java_available():
        pytest.skip("Java is needed for a local SparkSession")
    from offsetops.assets.cleaner_audit import cleaner_audit
    from offsetops.assets.reload import coordinator_cache, raw_segments

    from tests.support.appends import append_commits, groups_for

    log_dir = Path(shutil.copytree(simulated_log_dir, tmp_path / "logdir"))
    resume_dir, out = tmp_path / "resume", tmp_path / "out"
    assets = [raw_segments, coordinator_cache, cleaner_audit]
    first = materialize_assets(log_dir, out, assets, resume_dir)
    present = sorted(p for p, m in first["coordinator_cache"].items() if m["bytes"])
    assert present
    assert {first["coordinator_cache"][p]["scan_resume_reason"] for p in present} == {"no_state"}
    assert {m["scan"] for m in first["cleaner_audit"].values()} == {"from the reload"}

    for p in present[:3]:
        commits = [(g, "orders", 0, 2000 + i) for i, g in enumerate(groups_for(p, 4, "scan", NUM_PARTITIONS))]
        append_commits(log_dir / f"__consumer_offsets-{p}", commits, now_ms=1_700_000_000_000)
    second = materialize_assets(log_dir, out, assets, resume_dir)
    reload = second["coordinator_cache"]
    assert all(reload[p]["scan_resumed"] and reload[p]["scan_resume_reason"] is None for p in present), {
        p: reload[p]["scan_resume_detail"] for p in present
    }
    audit = second["cleaner_audit"]
    assert {m["scan"] for m in audit.values()} == {"from the reload"}
    assert {m["bytes_read"] for m in audit.values()} == {0}

    # the same log dir audited by cleaner_audit's own pass (no reload in its run) gives the same report
    own = materialize_assets(log_dir, tmp_path / "own", [cleaner_audit], None)
    assert {m["scan"] for m in own["cleaner_audit"].values()} == {"own pass"}
    assert _audit_partitions(out) == _audit_partitions(tmp_path / "own")
    verdicts = {p: m["verdict"] for p, m in audit.items()}
    assert verdicts == {p: m["verdict"] for p, m in own["cleaner_audit"].items()}
