"""The audit on a simulated log dir: it must find the simulator's hanging transaction and dead cleaners."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from offsetops.coordinator_core.cleaner.audit import audit_log_dir

simulator = pytest.importorskip("offsetops.coordinator_core.simulator")


@pytest.mark.slow
def test_audit_matches_the_simulators_ground_truth(tmp_path: Path) -> None:
    cfg = simulator.SimulationConfig(out_dir=tmp_path / "sim", groups=8, partitions=4, days=1, seed=1,
                                     segment_bytes=4096)  # fmt: skip
    result = simulator.simulate(cfg)
    truth = json.loads(result.truth_path.read_text())
    audit = audit_log_dir(result.out_dir, now_ms=result.simulated_until_ms)
    by_part = {p.partition: p for p in audit.partitions}

    hanging = {(t["partition"], t["producer_id"]) for t in truth["open_transactions"]}
    found = {(p.partition, t.producer_id) for p in audit.partitions for t in p.open_transactions}
    assert found == hanging and hanging  # seed 1 leaves one hanging transaction
    for part, _pid in hanging:
        assert "open_transaction" in by_part[part].uncleanable_reasons
        assert by_part[part].verdict == "CRITICAL"

    for tp in truth["partitions"]:
        pa = by_part[tp["partition"]]
        assert pa.decode_errors == []
        assert pa.log_end_offset == tp["log_end_offset"]
        if not tp["compacted"] and pa.segments > 1:
            # the simulated cleaner never ran here: no checkpoint, everything before the active segment dirty
            assert pa.checkpoint is None and pa.dirty_ratio == 1.0 and pa.eligible
            assert "cleaning_due" in [r.code for r in pa.reasons]
