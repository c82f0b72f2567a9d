"""The cleaner audit as one entry point: :func:`run_audit` takes an :class:`AuditRequest` and returns the
typed :class:`AuditResult` every front end renders (``offsetops audit`` as text or JSON).

One run reads one source (a broker log dir, several brokers' log dirs, or the scans ``offsetops
broker-scan`` wrote beside each broker), takes the cleaner config from the cluster (DescribeConfigs) under
the operator's overrides, the cleaner's JMX metrics and broker logs per broker, audits as of one clock
(``now_ms``, else the clock the log dir declares, else the wall clock), and forecasts the coordinator
failover from the same scan. Input it cannot run with raises :class:`AuditInputError`, whose message says
which input and why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offsetops.coordinator_core.cleaner.audit import audit_log_dir, audit_log_dirs, scan_log_dir
from offsetops.coordinator_core.cleaner.broker_log import BrokerLogReport, read_broker_logs
from offsetops.coordinator_core.cleaner.collect import BrokerScans, audit_broker_scans, read_broker_scans
from offsetops.coordinator_core.cleaner.config import (
    CleanerConfig,
    ClusterConfig,
    fetch_cluster_config,
    parse_config_overrides,
    read_broker_id,
)
from offsetops.coordinator_core.cleaner.metrics import CleanerMetrics, MetricsError, scrape_metrics
from offsetops.coordinator_core.cleaner.model import (
    CleanerAudit,
    PartitionAudit,
    PartitionFailure,
    Thresholds,
)
from offsetops.coordinator_core.clock import Clock, ClockError, resolve_clock
from offsetops.coordinator_core.failover import (
    DEFAULT_SLOW_MS,
    FailoverForecast,
    forecast_failover,
    loads_from_audit,
    read_load_logs,
)
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.read_summary import ReadSummary
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.sources.logdir import LogDir, LogDirError, PartitionDir, open_log_dir
from offsetops.coordinator_core.sources.replicas import LogDirs, open_log_dirs, split_broker_prefix

#: Told after each partition of a single log dir is scanned: (partitions in all, the one just scanned).
ScanProgress = Callable[[int, PartitionDir], None]


class AuditInputError(ValueError):
    """Input the audit cannot run with (a source, a config, a metrics endpoint, a clock); the message
    names it and says why."""


@dataclass(frozen=True, slots=True)
class AuditRequest:
    """What one audit reads, and how: exactly one of ``path``, ``log_dirs`` (``[BROKER_ID=]PATH`` per
    broker) and ``broker_scans`` (a directory of ``broker-<id>.json``)."""

    path: str | None = None
    log_dirs: tuple[str, ...] = ()
    broker_scans: str | None = None
    partitions: list[int] | None = None
    config: tuple[str, ...] = ()  # KEY=VALUE topic or broker config, over the cluster's
    thresholds: tuple[str, ...] = ()  # NAME=VALUE verdict thresholds
    bootstrap: str | None = None  # read the cluster's config (with client_config, or alone)
    client_config: str | None = None
    timeout_ms: int | None = None  # connect and request timeout of that read
    broker_id: int | None = None  # whose DescribeConfigs (default: the first broker's meta.properties)
    metrics_urls: tuple[str, ...] = ()  # [BROKER_ID=]URL of the cleaner's JMX metrics
    broker_logs: tuple[str, ...] = ()  # [BROKER_ID=]FILE of log-cleaner.log / server.log
    state_dir: str | None = None  # audit history (audits.jsonl)
    record_history: bool = True
    now_ms: int | None = None
    failover_threshold_ms: int = DEFAULT_SLOW_MS
    #: the run model's clock; when given, it is the audit's (now_ms and a declared clock are not read)
    clock: Clock | None = None
    #: the run model's layers under the cluster's and the user's: (server.properties, its source) and
    #: (the config file, its source), as ``CleanerConfig.layered`` takes them
    config_layers: (
        tuple[tuple[Mapping[str, str], str | None], tuple[Mapping[str, str], str | None]] | None
    ) = None
    #: ``--resume-state DIR`` (one log dir only): each partition's scan goes on from the one saved with
    #: its fold there (``scan_resume``), read with the fold's settings below
    resume_state: str | None = None
    num_partitions: int = DEFAULT_OFFSETS_PARTITIONS
    semantics: str = "java"
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES


@dataclass(frozen=True, slots=True)
class AuditResult:
    """The audit, the clock it was made as of, and the failover forecast (or why there is none)."""

    audit: CleanerAudit
    clock: Clock
    forecast: FailoverForecast | str
    #: with a resume state: what each partition's read cost (``bytes_read``, ``resumed``,
    #: ``resume_reason``, ``resume_detail``, ``state_error``); None without one
    reads: dict[int, dict[str, Any]] | None = None

    def read_summary(self) -> ReadSummary | None:
        """The bytes the run read and how many partitions resumed (None without a resume state)."""
        if self.reads is None:
            return None
        return ReadSummary.tally(
            (r["bytes_read"], r["resumed"], r["resume_reason"]) for r in self.reads.values()
        )

    def to_json(self) -> dict[str, Any]:
        """``offsetops audit --json``: the audit's document with the forecast under ``"failover"``; with a
        resume state, each partition's read in its entry and the run's under ``"read"``."""
        doc = self.audit.to_json()
        forecast = self.forecast
        doc["failover"] = (
            forecast.to_json() if isinstance(forecast, FailoverForecast) else {"error": forecast}
        )
        summary = self.read_summary()
        if self.reads is not None and summary is not None:
            for entry in doc["partitions"]:
                entry.update(self.reads.get(entry["partition"], {}))
            doc["read"] = summary.to_json()
        return doc


@dataclass(frozen=True, slots=True)
class _Source:
    """The opened source: one of a single log dir, several brokers' log dirs, or broker scans."""

    logdir: LogDir | None
    dirs: LogDirs | None
    scans: BrokerScans | None
    first_dir: str | None  # where a declared clock is looked for

    def broker_ids(self) -> set[int] | None:
        """The audited brokers' ids; None for a single log dir (its inputs need no broker id)."""
        if self.dirs is not None:
            return {b.broker_id for b in self.dirs.brokers}
        if self.scans is not None:
            return {s.broker_id for s in self.scans}
        return None


def run_audit(request: AuditRequest, *, progress: ScanProgress | None = None) -> AuditResult:
    """Audit the Log Cleaner's work on ``__consumer_offsets`` as ``request`` says (LogCleanerManager)."""
    try:
        overrides = parse_config_overrides(list(request.config))
        thresholds = Thresholds().with_overrides(dict(_pairs(request.thresholds)))
    except ValueError as exc:
        raise AuditInputError(str(exc)) from None
    source = _open_source(request)
    try:
        known = source.broker_ids()
        metrics_urls = _per_broker(request.metrics_urls, "--metrics-url", known)
        broker_log_files = _per_broker(request.broker_logs, "--broker-log", known)
    except ValueError as exc:
        raise AuditInputError(str(exc)) from None
    config, live = _cleaner_config(request, source, overrides)
    metrics = _scrape_metrics(metrics_urls)
    broker_logs = _read_broker_logs(broker_log_files)
    try:
        # The run's clock, else the log dir's declared clock (a simulated or copied snapshot) unless
        # now_ms is given.
        clock = request.clock or resolve_clock(
            source.first_dir, configured_ms=request.now_ms, configured_by="--now"
        )
    except ClockError as exc:
        raise AuditInputError(str(exc)) from None
    scans, reads = _resumed_scans(request, source, config, clock, progress)
    audit = _audit(request, source, config, thresholds, clock, live, metrics, broker_logs, progress, scans)
    logs = [f for files in broker_log_files.values() for f in files]
    return AuditResult(audit, clock, failover_forecast(audit, logs, request.failover_threshold_ms), reads)


def _resumed_scans(
    request: AuditRequest, source: _Source, config: CleanerConfig, clock: Clock, progress: ScanProgress | None
) -> tuple[dict[int, PartitionAudit | PartitionFailure | None] | None, dict[int, dict[str, Any]] | None]:
    """With ``resume_state``: the single log dir's scans, each resumed with its fold, and each read."""
    if request.resume_state is None:
        return None, None
    if source.logdir is None:
        raise AuditInputError("--resume-state reads one log dir PATH (not --log-dir or --broker-scans)")
    from offsetops.coordinator_core.cleaner.scan_resume import audit_partitions_resumed
    from offsetops.coordinator_core.resume import StateStore

    return audit_partitions_resumed(
        source.logdir, StateStore.at(request.resume_state), config=config, now_ms=clock.as_of_ms,
        num_partitions=request.num_partitions, semantics=request.semantics,
        max_batch_bytes=request.max_batch_bytes, progress=progress,
    )  # fmt: skip


def _open_source(request: AuditRequest) -> _Source:
    sources = [bool(request.path), bool(request.log_dirs), bool(request.broker_scans)]
    if sum(sources) > 1:
        raise AuditInputError("give one of: a log dir PATH, --log-dir for each broker, or --broker-scans DIR")
    if not any(sources):
        raise AuditInputError(
            "give a broker log dir PATH, --log-dir [BROKER_ID=]PATH once per broker, or --broker-scans DIR"
        )
    try:
        if request.broker_scans:
            return _Source(None, None, read_broker_scans(request.broker_scans), None)
        if request.log_dirs:
            dirs = open_log_dirs(
                [split_broker_prefix(spec) for spec in request.log_dirs], partitions=request.partitions
            )
            return _Source(None, dirs, None, str(dirs.brokers[0].log_dir.path))
        assert request.path is not None
        return _Source(open_log_dir(request.path, partitions=request.partitions), None, None, request.path)
    except (LogDirError, ValueError) as exc:
        raise AuditInputError(str(exc)) from None


def _cleaner_config(
    request: AuditRequest, source: _Source, overrides: Mapping[str, Any]
) -> tuple[CleanerConfig, ClusterConfig | None]:
    """Kafka's defaults, under the cluster's DescribeConfigs when a cluster is given, under the overrides."""
    config = CleanerConfig()
    live = None
    if request.bootstrap or request.client_config:
        from offsetops.coordinator_core.kafka_client import KafkaClientConfig, KafkaClientError

        try:
            client = KafkaClientConfig.resolve(request.bootstrap, request.client_config)
            if request.timeout_ms is not None:
                timeout = request.timeout_ms
                client = client.replace(connect_timeout_ms=timeout, request_timeout_ms=timeout)
            live = fetch_cluster_config(client, broker_id=_config_broker(request, source))
        except KafkaClientError as exc:
            raise AuditInputError(
                f"{exc} (give the config with --config KEY=VALUE instead, or fix --bootstrap)"
            ) from None
    if request.config_layers is not None:
        config = config.layered(*request.config_layers, live)
    elif live is not None:
        config = live.apply(config)
    try:
        return config.with_values(overrides, source="user"), live
    except ValueError as exc:
        raise AuditInputError(str(exc)) from None


def _config_broker(request: AuditRequest, source: _Source) -> int | None:
    """The broker whose config DescribeConfigs reads: the one asked for, else the first audited one."""
    if request.broker_id is not None:
        return request.broker_id
    if source.dirs is not None:
        return source.dirs.brokers[0].broker_id
    if source.scans is not None:
        return source.scans[0].broker_id
    assert source.logdir is not None
    return read_broker_id(source.logdir.path)


def _scrape_metrics(urls: Mapping[int | None, list[str]]) -> dict[int | None, CleanerMetrics]:
    metrics: dict[int | None, CleanerMetrics] = {}
    for bid, found in urls.items():
        if len(found) > 1:
            raise AuditInputError(
                f"--metrics-url: one endpoint per broker, got {len(found)} for {_whose(bid)}"
            )
        try:
            metrics[bid] = scrape_metrics(found[0])
        except MetricsError as exc:
            raise AuditInputError(str(exc)) from None
    return metrics


def _read_broker_logs(files: Mapping[int | None, list[str]]) -> dict[int | None, BrokerLogReport]:
    out: dict[int | None, BrokerLogReport] = {}
    for bid, paths in files.items():
        try:
            out[bid] = read_broker_logs(paths)
        except OSError as exc:
            raise AuditInputError(f"cannot read broker log: {exc}") from None
    return out


def _audit(
    request: AuditRequest,
    source: _Source,
    config: CleanerConfig,
    thresholds: Thresholds,
    clock: Clock,
    live: ClusterConfig | None,
    metrics: Mapping[int | None, CleanerMetrics],
    broker_logs: Mapping[int | None, BrokerLogReport],
    progress: ScanProgress | None,
    scans: dict[int, PartitionAudit | PartitionFailure | None] | None = None,
) -> CleanerAudit:
    """The audit of the opened source (history, marks and verdicts applied); ``scans``: the single log
    dir's, made already."""
    common: dict[str, Any] = {
        "config": config,
        "thresholds": thresholds,
        "now_ms": clock.as_of_ms,
        "live": live,
        "state_dir": request.state_dir,
        "record_history": request.record_history,
    }
    per_broker = {
        "metrics": {k: v for k, v in metrics.items() if k is not None},
        "broker_logs": {k: v for k, v in broker_logs.items() if k is not None},
    }
    try:
        if source.scans is not None:
            return audit_broker_scans(source.scans, partitions=request.partitions, **per_broker, **common)
        if source.dirs is not None:
            return audit_log_dirs(source.dirs, **per_broker, **common)
        assert source.logdir is not None
        return audit_log_dir(
            source.logdir,
            metrics=metrics.get(None),
            broker_log=broker_logs.get(None),
            partition_audits=scans
            if scans is not None
            else scan_partitions(source.logdir, config=config, now_ms=clock.as_of_ms, progress=progress),
            **common,
        )
    except LogDirError as exc:
        raise AuditInputError(str(exc)) from None
    except OSError as exc:
        raise AuditInputError(f"cannot write audit history: {exc}") from None


def scan_partitions(
    logdir: LogDir, *, config: CleanerConfig, now_ms: int, progress: ScanProgress | None = None
) -> dict[int, PartitionAudit | PartitionFailure | None]:
    """The per-partition scans (the costly part: every record is read) one partition at a time, telling
    ``progress`` after each; ``audit_log_dir`` then applies history, marks and verdicts to them."""
    scans: dict[int, PartitionAudit | PartitionFailure | None] = {}
    for pdir in logdir.partitions:
        one = dataclasses.replace(logdir, partitions=(pdir,))
        scans.update(scan_log_dir(one, config=config, now_ms=now_ms, notes=[]))
        if progress is not None:
            progress(len(logdir.partitions), pdir)
    return scans


def failover_forecast(
    audit: CleanerAudit, broker_logs: Sequence[str], threshold_ms: int = DEFAULT_SLOW_MS
) -> FailoverForecast | str:
    """The coordinator failover forecast that rides on the audit's scan (see ``offsetops failover``), or
    why there is none; with several brokers it forecasts the copies a reload reads."""
    rows = audit.partitions
    if audit.replicas is not None:
        chosen = {(c.partition, c.chosen.broker_id) for c in audit.replicas}
        rows = [p for p in rows if (p.partition, p.broker_id) in chosen]
    try:
        observed = read_load_logs(list(broker_logs))
    except OSError as exc:
        return f"cannot read broker log: {exc}"
    return forecast_failover(loads_from_audit(rows), observed=observed, threshold_ms=threshold_ms)


def _whose(broker_id: int | None) -> str:
    return "the log dir" if broker_id is None else f"broker {broker_id}"


def _per_broker(values: Sequence[str], flag: str, known: set[int] | None) -> dict[int | None, list[str]]:
    """``--metrics-url``/``--broker-log`` values by broker id (None for a single log dir): with several
    brokers each must say whose it is, since every broker has its own cleaner, metrics and logs."""
    out: dict[int | None, list[str]] = {}
    for value in values:
        bid, rest = split_broker_prefix(value) if known is not None else (None, value)
        if known is not None and bid is None:
            raise ValueError(f"{flag} {value!r}: with several brokers, say whose it is as BROKER_ID={value}")
        if known is not None and bid not in known:
            raise ValueError(
                f"{flag} {value!r}: broker {bid} is not among the audited brokers {sorted(known)}"
            )
        out.setdefault(bid, []).append(rest)
    return out


def _pairs(items: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected NAME=VALUE, got {item!r}")
        out.append((key.strip(), value.strip()))
    return out
