"""The Log Cleaner audit of ``__consumer_offsets``, one module per ``LogCleanerManager`` concept.

``manager`` (the arithmetic), ``scan`` (the record scan), ``model`` (data model and JSON), ``rules``
(the verdict rules as data), ``audit`` (one partition, one log dir, several brokers' log dirs),
``collect`` (broker scans written beside each broker, judged centrally), and the audit's inputs: ``config``
(effective configuration), ``broker_log``, ``metrics`` (JMX) and ``history``.
"""

from offsetops.coordinator_core.cleaner.broker_log import BrokerLogReport, parse_broker_log, read_broker_logs
from offsetops.coordinator_core.cleaner.config import (
    CleanerConfig,
    ClusterConfig,
    ClusterConfigError,
    fetch_cluster_config,
    parse_config_overrides,
)
from offsetops.coordinator_core.cleaner.history import AuditHistory
from offsetops.coordinator_core.cleaner.metrics import (
    CleanerMetrics,
    MetricsError,
    parse_exposition,
    scrape_metrics,
)

__all__ = [
    "AuditHistory",
    "BrokerLogReport",
    "CleanerConfig",
    "CleanerMetrics",
    "ClusterConfig",
    "ClusterConfigError",
    "MetricsError",
    "fetch_cluster_config",
    "parse_broker_log",
    "parse_config_overrides",
    "parse_exposition",
    "read_broker_logs",
    "scrape_metrics",
]
