"""The one Kafka client configuration every connection offsetops makes is built from.

Every kafka-python client in the project (the live reload's raw-protocol client, the admin and
produce executors' ``KafkaAdminClient``/``KafkaConsumer``/``KafkaProducer``, the cleaner audit's
DescribeConfigs) takes its settings from a :class:`KafkaClientConfig`, and connects only after
:func:`check_connection` has reached the cluster once within ``connect_timeout_ms``.

Settings come from, in increasing precedence: the ``OFFSETOPS_*`` environment, a Java
``client.properties`` file (the one ``kafka-console-consumer --consumer.config`` takes, parsed with
Java's own ``.properties`` rules), and explicit overrides (``--bootstrap``). Secrets (the SASL
password, the TLS private-key password) never appear in ``repr``, in log lines offsetops writes, or
in any error it raises: :meth:`KafkaClientConfig.redact` scrubs them from text that came from
elsewhere.

Why a probe of our own: kafka-python 3.0's TLS handshake waits for the server without a deadline, so
``security.protocol=SSL`` against a PLAINTEXT listener (the server reads the ClientHello as the start
of a Kafka request and waits for the rest) hangs forever inside ``check_version`` or the clients'
bootstrap. :func:`check_connection` does TCP, TLS (with the very ``SSLContext`` the clients then
use), ApiVersions, the SASL mechanism handshake and Metadata with blocking sockets and a deadline,
and reaches every broker the cluster advertises the same way.

Modules: :mod:`.config` (the configuration, the ``.properties`` reader, the errors), :mod:`.probe`
(the connection check) and :mod:`.failures` (kafka-python's errors and logging).
"""

from typing import TYPE_CHECKING

from offsetops.coordinator_core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # imported on first use at run time (see __getattr__)
    from offsetops.coordinator_core.kafka_client.config import (
        DEFAULT_CONNECT_TIMEOUT_MS,
        DEFAULT_REQUEST_TIMEOUT_MS,
        ENVIRONMENT,
        PROPERTIES,
        SASL_MECHANISMS,
        SECURITY_PROTOCOLS,
        ClientConfigError,
        ClusterUnreachable,
        KafkaClientConfig,
        KafkaClientError,
        parse_properties,
        read_properties,
    )
    from offsetops.coordinator_core.kafka_client.failures import (
        is_connection_error,
        quiet_kafka_logging,
        unreachable,
    )
    from offsetops.coordinator_core.kafka_client.probe import ConnectionCheck, check_connection

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_MS",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "ENVIRONMENT",
    "PROPERTIES",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "ClientConfigError",
    "ClusterUnreachable",
    "ConnectionCheck",
    "KafkaClientConfig",
    "KafkaClientError",
    "check_connection",
    "is_connection_error",
    "parse_properties",
    "quiet_kafka_logging",
    "read_properties",
    "unreachable",
]

#: A log dir's reload reads the client's errors and logging set-up, never its connection check (socket, TLS).
__getattr__ = lazy_exports(
    __name__,
    {
        "config": (
            "DEFAULT_CONNECT_TIMEOUT_MS",
            "DEFAULT_REQUEST_TIMEOUT_MS",
            "ENVIRONMENT",
            "PROPERTIES",
            "SASL_MECHANISMS",
            "SECURITY_PROTOCOLS",
            "ClientConfigError",
            "ClusterUnreachable",
            "KafkaClientConfig",
            "KafkaClientError",
            "parse_properties",
            "read_properties",
        ),
        "failures": ("is_connection_error", "quiet_kafka_logging", "unreachable"),
        "probe": ("ConnectionCheck", "check_connection"),
    },
)
