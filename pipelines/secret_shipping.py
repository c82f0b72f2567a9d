"""Secrets in a distributed run: a Kafka credential travels to the executors only over an encrypted,
authenticated Spark.

The live reload ships the one Kafka client configuration (its SASL password, its TLS key password)
inside each Spark task. On a cluster that goes over Spark's RPC and may spill to local disk, so it is
shipped only when Spark authenticates its peers (``spark.authenticate``) and encrypts RPC
(``spark.network.crypto.enabled``) and I/O (``spark.io.encryption.enabled``), as Spark's security guide
describes; a local master keeps everything in one process. A test cluster without them needs the
explicit override (``--allow-unencrypted-secrets`` or ``OFFSETOPS_SPARK_ALLOW_UNENCRYPTED_SECRETS=true``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from offsetops.coordinator_core.kafka_client import ClientConfigError, KafkaClientConfig

__all__ = [
    "ENV_ALLOW_UNENCRYPTED",
    "REQUIRED_SECURITY",
    "SparkSecurityError",
    "allow_from_env",
    "check_secret_shipping",
    "is_local_master",
]

#: what Spark must have on before a secret is shipped to executors on other hosts
REQUIRED_SECURITY = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    "spark.io.encryption.enabled": "true",
}
ENV_ALLOW_UNENCRYPTED = "OFFSETOPS_SPARK_ALLOW_UNENCRYPTED_SECRETS"


class SparkSecurityError(ClientConfigError):
    """A secret would be shipped to executors over an unauthenticated or unencrypted Spark."""


def is_local_master(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]``: the executors are threads of this process."""
    m = master.strip().lower()
    return m == "local" or m.startswith("local[")


def allow_from_env(environ: Mapping[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get(ENV_ALLOW_UNENCRYPTED, "")
    return value.strip().lower() in ("1", "true", "yes")


def check_secret_shipping(
    master: str | None,
    conf: Mapping[str, str],
    config: KafkaClientConfig,
    *,
    allow_unencrypted: bool = False,
) -> None:
    """Raise :class:`SparkSecurityError` when ``config`` holds a secret, ``master`` is not local and
    ``conf`` lacks any of :data:`REQUIRED_SECURITY` (unless ``allow_unencrypted``)."""
    if not config.secrets() or (master is not None and is_local_master(master)) or allow_unencrypted:
        return
    missing = [k for k, v in REQUIRED_SECURITY.items() if str(conf.get(k, "false")).strip().lower() != v]
    if missing:
        raise SparkSecurityError(
            f"{config.source}: the Kafka credentials would travel to the executors of {master} over a "
            f"Spark without {', '.join(f'{k}=true' for k in missing)}; set them (deploy/spark/"
            "spark-defaults.conf does), or pass --allow-unencrypted-secrets "
            f"({ENV_ALLOW_UNENCRYPTED}=true) on a test cluster"
        )
