"""Real broker log dirs with real checkpoints (Kafka 2.7.1, 4.1), and config from a live broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from offsetops.coordinator_core.cleaner.audit import audit_log_dir
from offsetops.coordinator_core.cleaner.config import fetch_cluster_config
from offsetops.coordinator_core.kafka_client import ClusterUnreachable, KafkaClientConfig

from offsetops.cli import main
from tests.coordinator_core.cleaner_audit.scenarios import T0, checkpoints, healthy_partition
from tests.support.broker import TansuBroker, free_port
from tests.support.shared import real_kafka_logdirs, require_real_kafka

NOW = 1_770_000_000_000  # 2026-02-02, after every fixture was written

# (fixture, partition) -> (clean_bytes, cleanable_bytes, first_dirty_offset, first_uncleanable_offset),
# from the cleaner-offset-checkpoint and the segment file sizes listed in SOURCES.md
EXPECTED = {
    ("DonaldY__kafka-2.7.1", 17): (390, 0, 1, 1),
    ("DonaldY__kafka-2.7.1", 28): (127, 0, 2, 2),
    ("DonaldY__kafka-2.7.1", 39): (361, 0, 18, 18),
    ("DonaldY__kafka-2.7.1", 8): (0, 0, 0, 0),  # not in the checkpoint: log start; one (active) segment
    ("ronem123__rupia-transaction-service", 31): (366, 0, 3, 3),
    ("ronem123__rupia-transaction-service", 44): (272, 0, 9, 9),
    ("yuanliubei__kafka-source-code", 17): (236, 0, 58, 58),
}


@pytest.mark.parametrize(("fixture", "partition"), sorted(EXPECTED))
def test_real_checkpoints_give_kafkas_numbers(fixture: str, partition: int) -> None:
    root = require_real_kafka() / fixture
    audit = audit_log_dir(root, now_ms=NOW, partitions=[partition])
    (p,) = audit.partitions
    assert (p.clean_bytes, p.cleanable_bytes, p.first_dirty_offset, p.first_uncleanable_offset) == EXPECTED[
        (fixture, partition)
    ]
    # every one of these is compacted up to its active segment: nothing to clean, so ratio 0, not eligible
    assert p.dirty_ratio == 0.0 and not p.eligible
    assert p.uncleanable_reasons == ["active_segment"]
    assert p.checkpoint_reset is None and p.decode_errors == []
    assert p.open_transactions == []


def test_every_real_log_dir_audits_without_errors() -> None:
    require_real_kafka()
    for root in real_kafka_logdirs():
        audit = audit_log_dir(root, now_ms=NOW)
        assert audit.partitions, root
        for p in audit.partitions:
            assert p.decode_errors == [], (root, p.partition)
            assert 0 <= p.reclaimable_records <= p.records
            assert p.verdict in ("HEALTHY", "DEGRADED")


def test_real_2_7_1_tombstones_left_in_the_clean_section_are_counted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = require_real_kafka() / "DonaldY__kafka-2.7.1"
    assert main(["audit", str(root), "--now", str(NOW), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_part = {p["partition"]: p for p in doc["partitions"]}
    assert sorted(by_part) == [8, 17, 28, 33, 39]
    # -39: a tombstone in the clean segment 0 is long past delete.retention.ms; 2.7.1 (pre-KIP-534)
    # keeps it until a later pass, which only comes when the dirty ratio passes 0.5 again. That is
    # how a healthy, quiet partition looks: counted, not a finding.
    p39 = by_part[39]
    assert p39["expired_tombstones_cleanable"] >= 1 and not p39["eligible"]
    assert p39["reasons"] == [] and p39["verdict"] == "HEALTHY"
    assert doc["verdict"] == "HEALTHY"
    assert by_part[17]["verdict"] == "HEALTHY"


def test_describe_configs_against_tansu(kafka_broker: TansuBroker, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    # Tansu answers DescribeConfigs with no entries and does not support DescribeLogDirs (see
    # docs/cleaner-audit.md): the audit falls back to Kafka's defaults and says so.
    live = fetch_cluster_config(KafkaClientConfig(kafka_broker.bootstrap, connect_timeout_ms=5000))
    assert live.broker_id is not None
    assert live.topic_configs == {} and live.log_dir_sizes is None
    assert any("no config entries for topic" in n for n in live.notes)
    assert any("DescribeLogDirs" in n for n in live.notes)

    healthy_partition(tmp_path, 0)
    checkpoints(tmp_path, {0: 3})
    args = ["audit", str(tmp_path), "--now", str(T0), "--bootstrap", kafka_broker.bootstrap, "--json",
            "--config", "min.cleanable.dirty.ratio=0.3"]  # fmt: skip
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["live"]["bootstrap"] == kafka_broker.bootstrap
    assert doc["config"]["cleanup_policy"] == {"value": "compact", "source": "default"}
    assert doc["config"]["min_cleanable_dirty_ratio"] == {"value": 0.3, "source": "user"}
    assert any("DescribeLogDirs" in n for n in doc["notes"])
    assert doc["verdict"] == "HEALTHY"


def test_unreachable_cluster_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    with pytest.raises(ClusterUnreachable, match=f"cannot reach Kafka at 127.0.0.1:{port}"):
        fetch_cluster_config(KafkaClientConfig(f"127.0.0.1:{port}", connect_timeout_ms=1000))
    healthy_partition(tmp_path, 0)
    assert main(["audit", str(tmp_path), "--bootstrap", f"127.0.0.1:{port}", "--timeout-ms", "1000"]) == 2
    err = capsys.readouterr().err
    assert f"cannot reach Kafka at 127.0.0.1:{port}" in err and "--config KEY=VALUE" in err
    assert "Traceback" not in err
