"""Inputs of the Log Cleaner audit: effective configuration, broker logs, JMX metrics, audit history.

The audit itself lives in :mod:`offsetops.coordinator_core.cleaner_audit`.
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
