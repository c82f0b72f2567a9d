"""The offsetops-collectors chart, rendered and linted by Helm's own engine (``helm-python-sdk`` embeds
it; no cluster is contacted), and the command it renders run for real on a broker's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from offsetops.cli import build_parser, main
from tests.support.shared import REPO_ROOT, require_real_kafka

helm = pytest.importorskip("helm_python.chart", reason="helm-python-sdk (the deploy extra) is not installed")

CHART = REPO_ROOT / "deploy" / "helm" / "offsetops-collectors"
DAGSTER_VALUES = REPO_ROOT / "deploy" / "helm" / "values.yaml"


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    chart = helm.Chart.load(CHART)
    out = chart.render(values, name="offsetops-collectors", namespace="kafka", is_install=True)
    docs = []
    for path, text in out.items():
        if path.endswith(".yaml"):
            docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def cronjobs(docs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {
        int(d["metadata"]["labels"]["offsetops.io/broker-id"]): d["spec"]["jobTemplate"]["spec"]["template"][
            "spec"
        ]
        for d in docs
        if d["kind"] == "CronJob"
    }


def test_the_chart_lints_clean() -> None:
    report = helm.lint(CHART, strict=True, kube_version="v1.30.0")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_one_cronjob_per_broker_beside_its_broker_with_its_volume_read_only() -> None:
    docs = render()
    pods = cronjobs(docs)
    assert sorted(pods) == [0, 1, 2]
    (pvc,) = [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    for broker, pod in pods.items():
        (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["labelSelector"]["matchLabels"] == {
            "statefulset.kubernetes.io/pod-name": f"kafka-{broker}"
        }
        assert term["topologyKey"] == "kubernetes.io/hostname"
        volumes = {
            v["name"]: v["persistentVolumeClaim"] for v in pod["volumes"] if "persistentVolumeClaim" in v
        }
        assert volumes["kafka-data"] == {"claimName": f"data-kafka-{broker}", "readOnly": True}
        assert volumes["scans"]["claimName"] == pvc["metadata"]["name"]
        (container,) = pod["containers"]
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        assert mounts["kafka-data"]["readOnly"] is True
        # the rendered command is one the CLI accepts, for this broker
        args = build_parser().parse_args(container["command"][1:])
        assert (args.log_dir, args.out) == (f"{broker}=/kafka/data", "/offsetops-scans")


def test_values_reach_the_command_and_a_missing_claim_is_refused() -> None:
    values = {
        "scans": {"create": False, "existingClaim": "nfs-scans"},
        "cleanerConfig": {"delete.retention.ms": 3600000, "min.cleanable.dirty.ratio": 0.25},
        "brokers": [{"id": 7, "claimName": "kafka-7", "logDir": "/kafka-logs", "podLabels": {"app": "k7"}}],
    }
    docs = render(values)
    assert [d["kind"] for d in docs] == ["CronJob", "NetworkPolicy"]
    (pod,) = cronjobs(docs).values()
    command = pod["containers"][0]["command"]
    # a YAML number is passed as Kafka writes it (Helm reads numbers as floats: not 3.6e+06)
    assert (
        "--config=delete.retention.ms=3600000" in command
        and "--config=min.cleanable.dirty.ratio=0.25" in command
    )
    assert "--log-dir=7=/kafka/kafka-logs" in command
    assert {v["name"]: v.get("persistentVolumeClaim", {}).get("claimName") for v in pod["volumes"]}[
        "scans"
    ] == "nfs-scans"
    with pytest.raises(Exception, match=r"scans\.existingClaim is required"):
        render({"scans": {"create": False, "existingClaim": ""}})


def test_the_dagster_values_read_the_scans_and_mount_no_broker_volume() -> None:
    collectors = yaml.safe_load((CHART / "values.yaml").read_text())
    dagster = yaml.safe_load(DAGSTER_VALUES.read_text())
    (deployment,) = dagster["dagster-user-deployments"]["deployments"]
    env = {e["name"]: e.get("value") for e in deployment["env"]}
    assert env["OFFSETOPS_BROKER_SCANS_DIR"] == collectors["scans"]["mountPath"]
    assert "OFFSETOPS_LOG_DIR" not in env
    claims = {
        v["name"]: v["persistentVolumeClaim"] for v in deployment["volumes"] if "persistentVolumeClaim" in v
    }
    assert claims["broker-scans"] == {"claimName": collectors["scans"]["claimName"], "readOnly": True}
    assert {c["claimName"] for c in claims.values()} == {"offsetops-data", collectors["scans"]["claimName"]}


def test_the_rendered_command_scans_a_real_log_dir(tmp_path: Path, capsys) -> None:
    """Run the CronJob's command with its two mounts mapped to local dirs: the scan lands where the
    Dagster run reads it, and the audit of it names the broker."""
    source = require_real_kafka() / "DanielMorales9__kafkafun"
    (pod,) = [p for b, p in cronjobs(render()).items() if b == 0]
    kafka, scans = tmp_path / "kafka", tmp_path / "scans"
    shutil.copytree(source, kafka / "data")
    command = [
        arg.replace("/kafka/", f"{kafka}/").replace("/offsetops-scans", str(scans))
        for arg in pod["containers"][0]["command"]
    ]
    assert main(command[1:]) == 0
    assert main(["audit", "--json", "--no-record", f"--broker-scans={scans}"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["log_dirs"] == [{"broker_id": 0, "log_dir": str((kafka / "data").resolve())}]
    assert {p["broker_id"] for p in doc["partitions"]} == {0} and doc["summary"]["partitions"] == 10
