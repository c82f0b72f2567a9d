"""``run_audit``, the audit's one entry point: the same audit as ``audit_log_dir``, inputs refused by name."""

from __future__ import annotations

import pytest
from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.cleaner.run import AuditInputError, AuditRequest, run_audit
from offsetops.coordinator_core.failover import FailoverForecast
from offsetops.coordinator_core.sources.logdir import PartitionDir

from tests.support.shared import require_real_kafka

NOW = 1_770_000_000_000  # 2026-02-02, after every fixture was written


def test_run_audit_is_the_log_dirs_audit_with_its_forecast() -> None:
    root = require_real_kafka() / "DonaldY__kafka-2.7.1"
    seen: list[tuple[int, int]] = []

    def progress(total: int, pdir: PartitionDir) -> None:
        seen.append((total, pdir.partition))

    result = run_audit(AuditRequest(path=str(root), now_ms=NOW, record_history=False), progress=progress)
    direct = audit_log_dir(root, now_ms=NOW, record_history=False)
    assert result.clock.as_of_ms == NOW
    assert result.audit.to_json() == direct.to_json()
    assert seen == [(len(direct.partitions), p.partition) for p in direct.partitions]
    assert isinstance(result.forecast, FailoverForecast)
    assert result.to_json()["failover"] == result.forecast.to_json()
    assert sorted(p.load.partition for p in result.forecast.partitions) == [
        p.partition for p in direct.partitions
    ]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (AuditRequest(), "give a broker log dir PATH"),
        (AuditRequest(path="a", broker_scans="b"), "give one of: a log dir PATH"),
        (AuditRequest(path="a", thresholds=("x",)), "expected NAME=VALUE, got 'x'"),
        (AuditRequest(path="/nonexistent/offsetops"), "/nonexistent/offsetops"),
    ],
)
def test_unusable_input_is_refused_with_its_name(request_: AuditRequest, message: str) -> None:
    with pytest.raises(AuditInputError, match=message):
        run_audit(request_)


def test_several_brokers_need_the_broker_of_each_metrics_url() -> None:
    root = require_real_kafka() / "DonaldY__kafka-2.7.1"
    request = AuditRequest(log_dirs=(str(root),), metrics_urls=("http://127.0.0.1:1/metrics",), now_ms=NOW)
    with pytest.raises(AuditInputError, match="with several brokers, say whose it is"):
        run_audit(request)
