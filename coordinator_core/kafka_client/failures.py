"""kafka-python's own failures: telling a lost cluster from a refused request, and its log chatter."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from offsetops.coordinator_core.kafka_client.config import _REDACT, ClusterUnreachable, KafkaClientConfig


def is_connection_error(exc: BaseException) -> bool:
    """True when a kafka-python error means the cluster itself is gone (not one request refused).

    Such an error stops a run instead of being paid again, timeout after timeout, for every item.
    """
    import kafka.errors as kerr

    gone = tuple(
        getattr(kerr, name)
        for name in (
            "KafkaConnectionError",
            "NoBrokersAvailable",
            "NodeNotReadyError",
            "KafkaTimeoutError",
            "RequestTimedOutError",
            "MetadataEmptyBrokerList",
        )
        if hasattr(kerr, name)
    )
    return isinstance(exc, (*gone, ConnectionError, TimeoutError))


def unreachable(config: KafkaClientConfig, what: str, exc: BaseException) -> ClusterUnreachable:
    """A :class:`ClusterUnreachable` for a kafka-python failure during ``what``."""
    return ClusterUnreachable(
        config.redact(f"lost {config.describe()} during {what}: {type(exc).__name__}: {exc}")
    )


def quiet_kafka_logging(verbose: bool, handlers: Iterable[logging.Handler] = ()) -> None:
    """Keep kafka-python's retry chatter out of the terminal unless ``verbose``.

    offsetops reports a failed connection itself, in one line that says why; kafka-python logs every
    retry at WARNING/ERROR. Records still reach handlers attached to the ``kafka`` logger (the live
    source keeps the last one as the error's cause). ``handlers`` get a filter that masks the secrets
    of every :class:`KafkaClientConfig` built in this process.
    """
    kafka_log = logging.getLogger("kafka")
    kafka_log.propagate = verbose
    if not any(isinstance(h, logging.NullHandler) for h in kafka_log.handlers):
        kafka_log.addHandler(logging.NullHandler())
    for handler in handlers:
        if _REDACT not in handler.filters:
            handler.addFilter(_REDACT)
