"""Log Cleaner JMX metrics, scraped from a Prometheus endpoint (jmx_exporter or similar).

The MBeans (format notes §5.5) are ``kafka.log:type=LogCleanerManager,name=...`` and
``kafka.log:type=LogCleaner,name=...``. jmx_exporter renders them in one of two styles:

- with the usual Kafka rules:
  ``kafka_log_logcleanermanager_uncleanable_partitions_count{logDirectory="/d",} 1.0``
- with no rules:
  ``kafka_log_LogCleanerManager_Value{name="uncleanable-partitions-count",logDirectory="/d",} 1.0``

Both are recognised. The exposition is parsed with ``prometheus_client``'s text parser (which accepts
jmx_exporter's trailing comma in label sets); metric names are matched, never the raw text.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

#: canonical name -> MBean type it belongs to
CLEANER_METRICS: dict[str, str] = {
    "uncleanable_partitions_count": "logcleanermanager",
    "uncleanable_bytes": "logcleanermanager",
    "max_dirty_percent": "logcleanermanager",
    "time_since_last_run_ms": "logcleanermanager",
    "deadthreadcount": "logcleaner",
    "max_clean_time_secs": "logcleaner",
    "max_buffer_utilization_percent": "logcleaner",
    "cleaner_recopy_percent": "logcleaner",
    "max_compaction_delay_secs": "logcleaner",
}
_SUFFIXES = ("_value", "_count", "_total")


class MetricsError(Exception):
    """The metrics endpoint could not be fetched or parsed; the message names the URL."""


@dataclass(frozen=True)
class CleanerMetrics:
    """The cleaner gauges found in one exposition. Per-log-dir gauges keep their ``logDirectory``."""

    #: canonical name -> {logDirectory or "": value}
    values: dict[str, dict[str, float]] = field(default_factory=dict)
    source: str | None = None

    def _get(self, name: str, agg: str = "max") -> float | None:
        per_dir = self.values.get(name)
        if not per_dir:
            return None
        return sum(per_dir.values()) if agg == "sum" else max(per_dir.values())

    @property
    def uncleanable_partitions_count(self) -> float | None:
        return self._get("uncleanable_partitions_count", "sum")

    @property
    def uncleanable_bytes(self) -> float | None:
        return self._get("uncleanable_bytes", "sum")

    @property
    def max_dirty_percent(self) -> float | None:
        return self._get("max_dirty_percent")

    @property
    def time_since_last_run_ms(self) -> float | None:
        return self._get("time_since_last_run_ms")

    @property
    def dead_thread_count(self) -> float | None:
        return self._get("deadthreadcount")

    @property
    def max_clean_time_secs(self) -> float | None:
        return self._get("max_clean_time_secs")

    @property
    def found(self) -> bool:
        return bool(self.values)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "uncleanable_partitions_count": self.uncleanable_partitions_count,
            "uncleanable_bytes": self.uncleanable_bytes,
            "max_dirty_percent": self.max_dirty_percent,
            "time_since_last_run_ms": self.time_since_last_run_ms,
            "dead_thread_count": self.dead_thread_count,
            "max_clean_time_secs": self.max_clean_time_secs,
            "per_log_dir": {k: dict(v) for k, v in sorted(self.values.items())},
        }


def _canonical(sample_name: str, labels: dict[str, str]) -> str | None:
    """Map one sample to a canonical cleaner metric name, or None when it is not one of ours."""
    name = sample_name.lower().replace("-", "_")
    mbean_name = labels.get("name")
    if mbean_name is not None:
        # rule-less jmx_exporter: kafka_log_<Type>_Value{name="metric-name",...}
        candidate = mbean_name.lower().replace("-", "_")
        mbean_type = next((t for t in ("logcleanermanager", "logcleaner") if f"_{t}_" in name + "_"), None)
        if candidate in CLEANER_METRICS and mbean_type == CLEANER_METRICS[candidate]:
            return candidate
    for suffix in ("", *_SUFFIXES):
        base = name[: -len(suffix)] if suffix and name.endswith(suffix) else name
        if suffix and base == name:
            continue
        for canonical, mbean_type in CLEANER_METRICS.items():
            if base.endswith(f"{mbean_type}_{canonical}"):
                return canonical
    return None


def parse_exposition(text: str, *, source: str | None = None) -> CleanerMetrics:
    """Parse a Prometheus text exposition and keep the Log Cleaner gauges.

    Raises :class:`MetricsError` when the text is not a valid exposition.
    """
    from prometheus_client.parser import text_string_to_metric_families  # only when a scrape is read

    values: dict[str, dict[str, float]] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                canonical = _canonical(sample.name, dict(sample.labels))
                if canonical is None:
                    continue
                log_dir = sample.labels.get("logDirectory", "")
                values.setdefault(canonical, {})[log_dir] = float(sample.value)
    except ValueError as exc:
        raise MetricsError(f"{source or 'metrics'}: not a Prometheus text exposition: {exc}") from exc
    return CleanerMetrics(values, source)


def scrape_metrics(url: str, *, timeout_s: float = 10.0) -> CleanerMetrics:
    """GET ``url`` and parse it; raises :class:`MetricsError` naming the URL on any failure."""
    request = urllib.request.Request(url, headers={"Accept": "text/plain;version=0.0.4"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            charset = resp.headers.get_content_charset() or "utf-8"
            text = resp.read().decode(charset, errors="replace")
    except urllib.error.HTTPError as exc:
        raise MetricsError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MetricsError(f"{url}: cannot fetch metrics: {reason}") from exc
    metrics = parse_exposition(text, source=url)
    return metrics
