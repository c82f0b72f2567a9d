"""The cleaner figures the metrics show: from an audit, or from its JSON report, the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.clock import resolve_clock
from offsetops.coordinator_core.metrics_snapshot import CleanerFigures
from offsetops.coordinator_core.simulator import SimulationConfig, simulate


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("sim") / "logdir"
    simulate(
        SimulationConfig(
            out_dir=Path(out), groups=20, partitions=6, days=0.3, seed=5, segment_bytes=64 * 1024
        )
    )
    return audit_log_dir(out, now_ms=resolve_clock(out).as_of_ms, record_history=False)


def test_report_gives_the_audits_exact_figures(audit) -> None:
    """The JSON rounds the dirty ratio; the figures recompute it from the bytes, bit for bit."""
    doc = json.loads(json.dumps(audit.to_json()))
    from_report = CleanerFigures.of_report(doc)
    assert from_report == CleanerFigures.of_audit(audit)
    assert {p.dirty_ratio for p in from_report.partitions} == {0.0, 1.0}
    doc["partitions"][0].update(clean_bytes=2, cleanable_bytes=1, dirty_ratio=round(1 / 3, 6))
    assert CleanerFigures.of_report(doc).partitions[0].dirty_ratio == 1 / 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("partitions"), "no verdict and partitions list"),
        (lambda d: d["partitions"][0].update(clean_bytes=-1), "partitions[0]: clean_bytes is -1"),
        (lambda d: d["partitions"][1].update(size_bytes="9"), "partitions[1]: size_bytes is '9'"),
        (lambda d: d["partitions"][0].update(open_transactions=[3]), "not a list of objects"),
        (lambda d: d["partitions"].append(7), "partitions[6] is not an object"),
    ],
)
def test_a_report_that_is_not_an_audit_is_refused(audit, change, message) -> None:
    doc = json.loads(json.dumps(audit.to_json()))
    change(doc)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        CleanerFigures.of_report(doc)
