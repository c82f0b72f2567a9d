"""Secrets in a distributed run: the deployment's Spark authenticates and encrypts, offsetops refuses to
ship Kafka credentials to a cluster that does not (unless told it is a test cluster), and Postgres is
reached with the server's certificate verified."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from offsetops.coordinator_core.kafka_client import KafkaClientConfig
from offsetops.pipelines.secrets import (
    ENV_ALLOW_UNENCRYPTED,
    REQUIRED_SECURITY,
    SparkSecurityError,
    allow_from_env,
    check_secret_shipping,
)

from tests.support.shared import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
CANARY = "spark-secret-canary-51d2"
SASL = KafkaClientConfig(
    "k1:9092",
    security_protocol="SASL_SSL",
    sasl_mechanism="SCRAM-SHA-512",
    sasl_plain_username="ops",
    sasl_plain_password=CANARY,
)
K8S = "k8s://https://kubernetes.default.svc:443"


def spark_defaults(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.strip().partition(" ")
            out[key] = value.strip()
    return out


def helm_spark_conf() -> dict[str, str]:
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    env = {e["name"]: e.get("value") for e in deployment["env"]}
    pairs = [p.strip() for p in env["OFFSETOPS_SPARK_CONF"].split(",") if p.strip()]
    return dict(p.split("=", 1) for p in pairs)


def test_the_deployed_spark_settings_authenticate_and_encrypt() -> None:
    for conf in (spark_defaults(DEPLOY / "spark" / "spark-defaults.conf"), helm_spark_conf()):
        assert {k: conf.get(k) for k in REQUIRED_SECURITY} == REQUIRED_SECURITY
        check_secret_shipping(K8S, conf, SASL)  # accepted as deployed


def test_a_secret_is_not_shipped_to_a_cluster_without_them() -> None:
    for missing in REQUIRED_SECURITY:
        conf = {**REQUIRED_SECURITY, missing: "false"}
        with pytest.raises(SparkSecurityError, match=f"without {missing}=true") as info:
            check_secret_shipping("spark://spark-master:7077", conf, SASL)
        assert CANARY not in str(info.value) and "--allow-unencrypted-secrets" in str(info.value)
    check_secret_shipping("local[4]", {}, SASL)  # the executors are threads of this process
    check_secret_shipping(K8S, {}, KafkaClientConfig("k1:9092"))  # nothing secret to ship
    check_secret_shipping(K8S, {}, SASL, allow_unencrypted=True)  # the explicit override
    assert allow_from_env({ENV_ALLOW_UNENCRYPTED: "true"}) and not allow_from_env({})


def test_the_live_job_refuses_with_exit_2_before_any_task(tmp_path: Path, monkeypatch, capsys) -> None:
    """``pipelines/live.py``'s argument and the error path of its runner, on a session whose master is
    not local: the refusal comes from the one seam where the tasks are built."""
    import argparse

    from offsetops.pipelines import live
    from offsetops.pipelines.cli_args import JOB_ARGUMENTS

    parser = argparse.ArgumentParser()
    JOB_ARGUMENTS["live"](parser)
    args = parser.parse_args(
        ["--bootstrap", "k1:9092", "--output", str(tmp_path), "--allow-unencrypted-secrets"]
    )
    assert args.allow_unencrypted_secrets is True

    class Conf:
        def getAll(self) -> list[tuple[str, str]]:
            return [("spark.authenticate", "false")]

    class Context:
        master = "spark://spark-master:7077"

        def getConf(self) -> Conf:
            return Conf()

    class Session:  # a stand-in: no real cluster master can run here (named as one)
        sparkContext = Context()

    with pytest.raises(SparkSecurityError):
        live.fetch_folds(Session(), SASL, [])  # type: ignore[arg-type]


def test_postgres_is_reached_with_verify_full() -> None:
    instance = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    assert instance["storage"]["postgres"]["postgres_db"]["params"]["sslmode"] == "verify-full"
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    assert values["postgresql"]["postgresqlParams"]["sslmode"] == "verify-full"
