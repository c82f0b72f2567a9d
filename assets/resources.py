"""Resources of the offsetops code location, and the one place where a deployment picks them.

``OFFSETOPS_DEPLOYMENT`` chooses ``local`` (the default: a log dir on this machine, ``local[*]`` Spark,
reports under ``out/``) or ``cluster`` (a Spark master and a real cluster's log dir or brokers, given
by the environment). Everything a deployment can change is read by :func:`build_resources`; the
asset modules only declare which resource they need.

Each resource is a pydantic-validated :class:`dagster.ConfigurableResource`, so a bad value fails when
the code location loads (or, for run-config overrides, when the run starts) with a message that names
the field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dagster import (
    ConfigurableResource,
    DefaultScheduleStatus,
    EnvVar,
    InitResourceContext,
    MetadataValue,
    StaticPartitionsDefinition,
)
from offsetops.checks.operator_report import ENV_REPORTS_BASE_URL, REPORT_FILE
from offsetops.coordinator_core.cache import CoordinatorCache, LoadStats
from offsetops.coordinator_core.clock import Clock, resolve_clock
from offsetops.coordinator_core.expiration import DEFAULT_RETENTION_MS
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.sources.ranges import DEFAULT_EXECUTORS_MIN_OFFSETS, DEFAULT_RANGE_OFFSETS
from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

if TYPE_CHECKING:
    from offsetops.assets.alerting import SlackNotifier
    from offsetops.assets.alerting.blocks import AlertLinks
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig
    from offsetops.coordinator_core.sources.logdir import LogDir
    from pyspark.sql import SparkSession

DEPLOYMENTS = ("local", "cluster")
DEFAULT_OUTPUT_DIR = "out/demo"
DEFAULT_LOCAL_LOG_DIR = "out/demo/logdir"
DEFAULT_SLACK_CHANNEL = "#offsetops-alerts"
DEFAULT_DAGSTER_URL = "http://localhost:3000"
DEFAULT_FORECAST_HOURS = 24.0

#: Environment variables a deployment reads (documented in docs/operations.md).
ENV_DEPLOYMENT = "OFFSETOPS_DEPLOYMENT"
ENV_NUM_PARTITIONS = "OFFSETOPS_NUM_PARTITIONS"
ENV_LOG_DIR = "OFFSETOPS_LOG_DIR"
ENV_BROKER_SCANS_DIR = "OFFSETOPS_BROKER_SCANS_DIR"
ENV_BOOTSTRAP = "OFFSETOPS_BOOTSTRAP_SERVERS"
ENV_CLIENT_CONFIG = "OFFSETOPS_CLIENT_CONFIG"
ENV_TOPIC = "OFFSETOPS_TOPIC"
ENV_SEMANTICS = "OFFSETOPS_SEMANTICS"
ENV_LIVE_RELOAD = "OFFSETOPS_LIVE_RELOAD"
ENV_LIVE_RANGE_OFFSETS = "OFFSETOPS_LIVE_RANGE_OFFSETS"
ENV_LIVE_EXECUTORS_MIN_OFFSETS = "OFFSETOPS_LIVE_EXECUTORS_MIN_OFFSETS"
ENV_AS_OF_MS = "OFFSETOPS_AS_OF_MS"
ENV_RETENTION_MINUTES = "OFFSETOPS_RETENTION_MINUTES"
ENV_FORECAST_HOURS = "OFFSETOPS_FORECAST_HOURS"
ENV_OUTPUT_DIR = "OFFSETOPS_OUTPUT_DIR"
ENV_STATE_DIR = "OFFSETOPS_STATE_DIR"
ENV_TABLES_URI = "OFFSETOPS_TABLES_URI"
ENV_SPARK_MASTER = "OFFSETOPS_SPARK_MASTER"
ENV_SPARK_CONF = "OFFSETOPS_SPARK_CONF"
ENV_SLACK_TOKEN = "SLACK_BOT_TOKEN"
ENV_SLACK_CHANNEL = "OFFSETOPS_SLACK_CHANNEL"
ENV_SLACK_BASE_URL = "OFFSETOPS_SLACK_BASE_URL"
ENV_SLACK_DEDUPE = "OFFSETOPS_SLACK_DEDUPE_WINDOW_S"
ENV_DAGSTER_URL = "OFFSETOPS_DAGSTER_URL"
ENV_SLACK_BUDGET = "OFFSETOPS_SLACK_BUDGET_S"
ENV_SCHEDULES = "OFFSETOPS_SCHEDULES"

_MASTER_RE = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://.+|k8s://.+|yarn|mesos://.+)$")


class DeploymentConfigError(ValueError):
    """The deployment's configuration cannot work; the message names the field or variable."""


# -- partitions ------------------------------------------------------------------------------------


def num_partitions_from_env(env: Mapping[str, str] | None = None) -> int:
    """``offsets.topic.num.partitions`` from ``OFFSETOPS_NUM_PARTITIONS`` (default 50)."""
    env = os.environ if env is None else env
    raw = env.get(ENV_NUM_PARTITIONS, "").strip()
    if not raw:
        return DEFAULT_OFFSETS_PARTITIONS
    try:
        value = int(raw)
    except ValueError as exc:
        raise DeploymentConfigError(f"{ENV_NUM_PARTITIONS}={raw!r} is not an integer") from exc
    if not 1 <= value <= 10_000:
        raise DeploymentConfigError(f"{ENV_NUM_PARTITIONS}={value} must be between 1 and 10000")
    return value


def offsets_partitions_def(num_partitions: int) -> StaticPartitionsDefinition:
    """One Dagster partition per ``__consumer_offsets`` partition: ``"0"`` .. ``"N-1"``."""
    return StaticPartitionsDefinition([str(p) for p in range(num_partitions)])


def expiration_defaults_from_env(env: Mapping[str, str] | None = None) -> tuple[int, float]:
    """``offsets.retention.minutes`` and the forecast window the expiration assets default to.

    ``OFFSETOPS_RETENTION_MINUTES`` (default Kafka's 10080) and ``OFFSETOPS_FORECAST_HOURS`` (default 24):
    a deployment sets them to its brokers' values, and the UI command ``offsetops demo`` prints sets
    them to the demo's, so a run launched from the UI plans exactly what the demo planned.
    """
    env = os.environ if env is None else env
    minutes = _int_env(env, ENV_RETENTION_MINUTES)
    if minutes is not None and minutes < 1:
        raise DeploymentConfigError(f"{ENV_RETENTION_MINUTES}={minutes} must be at least 1")
    raw = env.get(ENV_FORECAST_HOURS, "").strip()
    try:
        hours = float(raw) if raw else DEFAULT_FORECAST_HOURS
    except ValueError as exc:
        raise DeploymentConfigError(f"{ENV_FORECAST_HOURS}={raw!r} is not a number") from exc
    if not 0 < hours <= 24 * 366:
        raise DeploymentConfigError(f"{ENV_FORECAST_HOURS}={raw} must be within (0, 8784]")
    return (DEFAULT_RETENTION_MS // 60_000 if minutes is None else minutes), hours


NUM_PARTITIONS = num_partitions_from_env()
OFFSETS_PARTITIONS = offsets_partitions_def(NUM_PARTITIONS)
"""The partitions every offsetops asset shares, fixed when the code location loads."""


# -- resources -------------------------------------------------------------------------------------


class OffsetsSourceResource(ConfigurableResource):
    """Where ``__consumer_offsets`` is read from: a broker log dir, or a live cluster.

    With ``bootstrap_servers`` or ``client_config`` the reload fetches from the brokers (live mode), and
    the admin tombstone executor talks to the same cluster with the same settings
    (:meth:`kafka_config`: the ``OFFSETOPS_*`` environment, then ``client_config``, then
    ``bootstrap_servers``; SASL and TLS included, secrets never shown); a ``log_dir`` given as
    well (a broker's data volume) still feeds the segment inventory and the cleaner audit, which read
    files. Time-based rules are evaluated as of :meth:`clock`: ``as_of_ms`` when set, else the instant
    the log dir declares (``offsetops-clock.json``, written by ``offsetops simulate``), else the wall
    clock, read once when the run starts so every step of a run agrees.
    """

    log_dir: str | None = Field(default=None, description="Broker log dir, or one __consumer_offsets-N dir.")
    broker_scans_dir: str | None = Field(
        default=None,
        description="Shared directory where `offsetops broker-scan` beside each broker writes "
        "broker-<id>.json; the cleaner audit judges every broker from it instead of log_dir.",
    )
    bootstrap_servers: str | None = Field(default=None, description="host:port[,host:port] for live mode.")
    client_config: str | None = Field(
        default=None,
        description="Kafka client.properties for live mode (bootstrap.servers, security.protocol, SASL, "
        "TLS); OFFSETOPS_* variables fill what it leaves out.",
    )
    topic: str = Field(
        default="__consumer_offsets",
        min_length=1,
        description="The offsets topic to read in live mode (e.g. a mirrored copy on another cluster).",
    )
    num_partitions: int = Field(
        default=DEFAULT_OFFSETS_PARTITIONS, ge=1, le=10_000, description="offsets.topic.num.partitions."
    )
    semantics: Literal["java", "scala"] = Field(
        default="java", description="Coordinator replay rules: java (3.6+/4.x) or scala (up to 3.x)."
    )
    as_of_ms: int | None = Field(
        default=None,
        ge=0,
        description="Evaluate as of this epoch ms; default: the log dir's declared clock, else the wall.",
    )
    live_reload: Literal["auto", "driver", "executors"] = Field(
        default="auto",
        description="Live mode: fetch in the run process (driver), on the Spark executors (executors), or "
        "on the executors when Spark is a cluster and the run spans live_executors_min_offsets (auto).",
    )
    live_range_offsets: int = Field(
        default=DEFAULT_RANGE_OFFSETS, ge=1, description="Offsets per Spark task of the executors' reload."
    )
    live_executors_min_offsets: int = Field(
        default=DEFAULT_EXECUTORS_MIN_OFFSETS,
        ge=0,
        description="live_reload=auto: fetch on the executors from this many offsets in the run on.",
    )

    _clock: Clock | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _one_source(self) -> OffsetsSourceResource:
        if not (self.log_dir or "").strip() and not self.is_live:
            raise ValueError(
                "set log_dir (a broker log dir), or bootstrap_servers / client_config (live mode); "
                "all are empty"
            )
        if self.is_live:
            from offsetops.coordinator_core.kafka_client import ClientConfigError

            try:  # a bad client config fails when the code location loads, not at the first run
                self.kafka_config()
            except ClientConfigError as exc:
                raise ValueError(str(exc)) from None
        return self

    @field_validator("bootstrap_servers")
    @classmethod
    def _servers(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        for server in value.split(","):
            host, _, port = server.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"bootstrap_servers entry {server.strip()!r} is not host:port")
        return value

    @property
    def is_live(self) -> bool:
        return bool(self.bootstrap_servers or (self.client_config or "").strip())

    def describe(self) -> str:
        if not self.is_live:
            return f"log dir {self.log_dir}"
        return f"bootstrap {self.bootstrap_servers or self.kafka_config().bootstrap_servers}"

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._clock = self._resolve_clock()

    def _resolve_clock(self) -> Clock:
        return resolve_clock(
            self.log_dir,
            configured_ms=self.as_of_ms,
            configured_by=f"configured: OffsetsSourceResource.as_of_ms ({ENV_AS_OF_MS})",
        )

    def clock(self) -> Clock:
        """The run's clock, resolved once (``offsetops.coordinator_core.clock.resolve_clock``)."""
        if self._clock is None:
            self._clock = self._resolve_clock()
        return self._clock

    def now_ms(self) -> int:
        return self.clock().as_of_ms

    def kafka_config(self) -> KafkaClientConfig:
        """The Kafka client configuration of live mode, for every client the assets build."""
        from offsetops.coordinator_core.kafka_client import KafkaClientConfig

        return KafkaClientConfig.resolve(self.bootstrap_servers, self.client_config)

    def open_log_dir(self) -> LogDir:
        """The configured log dir, opened (raises ``LogDirError`` naming the path when unusable)."""
        from offsetops.coordinator_core.sources.logdir import LogDirError, open_log_dir

        if not self.log_dir:
            raise LogDirError("no log_dir is configured (OffsetsSourceResource.log_dir)")
        if not Path(self.log_dir).exists():
            raise LogDirError(
                f"OffsetsSourceResource.log_dir {self.log_dir} does not exist; run `offsetops demo` to "
                f"generate a sample, or set {ENV_LOG_DIR} / {ENV_BOOTSTRAP}"
            )
        return open_log_dir(self.log_dir)

    def load_caches(self, partitions: list[int]) -> list[CoordinatorCache]:
        """doLoadGroupsAndOffsets for each partition; a partition with no data is an empty cache."""
        from offsetops.coordinator_core.loader import load_partition_dir

        if self.is_live:
            from offsetops.coordinator_core.sources.live import LiveSource, load_live_partition

            with LiveSource(self.kafka_config(), topic=self.topic) as source:
                present = set(source.partitions())
                return [
                    load_live_partition(
                        source, p, num_partitions=self.num_partitions, semantics=self.semantics
                    )
                    if p in present
                    else self.empty_cache(p)
                    for p in partitions
                ]
        logdir = self.open_log_dir()
        by_number = {pd.partition: pd for pd in logdir.partitions}
        return [
            load_partition_dir(by_number[p], num_partitions=self.num_partitions, semantics=self.semantics)
            if p in by_number
            else self.empty_cache(p)
            for p in partitions
        ]

    def empty_cache(self, partition: int) -> CoordinatorCache:
        """What the coordinator holds for a partition with no log: no groups."""
        return CoordinatorCache(
            partition=partition, groups={}, stats=LoadStats(), num_partitions=self.num_partitions
        )


class SparkResource(ConfigurableResource):
    """One SparkSession per run process (``getOrCreate``): ``local[*]`` here, a cluster master in prod."""

    master: str = Field(
        default="local[*]", description="local[*], spark://host:7077, k8s://https://..., yarn"
    )
    app_name: str = Field(default="offsetops", min_length=1)
    conf: dict[str, str] = Field(default_factory=dict, description="Extra spark.* settings.")

    @field_validator("master")
    @classmethod
    def _master(cls, value: str) -> str:
        value = value.strip()
        if not _MASTER_RE.match(value):
            raise ValueError(
                f"master {value!r} is not a Spark master URL (local[*], local[N], spark://, k8s://, yarn)"
            )
        return value

    @field_validator("conf")
    @classmethod
    def _conf(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [k for k in value if not k.startswith("spark.")]
        if bad:
            raise ValueError(f"conf keys must start with 'spark.': {bad}")
        return value

    def get_session(self) -> SparkSession:
        """The process's SparkSession, created on first use with this resource's settings.

        Built by :func:`offsetops.pipelines.session.build_session`, which ships our packages to the executors
        of a non-local master.
        """
        from offsetops.pipelines.session import build_session

        local = self.master.startswith("local")
        conf = {"spark.sql.sources.partitionOverwriteMode": "dynamic"}
        if local:
            conf.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        session = build_session(self.master, app_name=self.app_name, conf={**conf, **self.conf}, quiet=local)
        if not local:
            session.sparkContext.setLogLevel("WARN")
        return session


class StateResource(ConfigurableResource):
    """Where offsetops writes: reports (Data Docs, audit, plan), Parquet tables and its own state."""

    output_dir: str = Field(default=DEFAULT_OUTPUT_DIR, min_length=1, description="Reports and tables.")
    state_dir: str | None = Field(
        default=None, description="Alert state, outbox, journals; output_dir/state."
    )
    tables_uri: str | None = Field(
        default=None, description="Where the reload tables go (file path or s3a://...); output_dir/tables."
    )

    @property
    def output_path(self) -> Path:
        return Path(self.output_dir).absolute()

    @property
    def state_path(self) -> Path:
        return Path(self.state_dir).absolute() if self.state_dir else self.output_path / "state"

    @property
    def reports_path(self) -> Path:
        """Every human-readable report lives here (``offsetops.checks.suite`` writes Data Docs below)."""
        return self.output_path / "reports"

    @property
    def tables_location(self) -> str:
        return self.tables_uri.rstrip("/") if self.tables_uri else str(self.output_path / "tables")

    def table_location(self, table: str) -> str:
        return f"{self.tables_location}/{table}"

    @property
    def alert_state_file(self) -> Path:
        return self.state_path / "alerts" / "state.json"

    @property
    def outbox_file(self) -> Path:
        return self.state_path / "alerts" / "outbox.jsonl"

    @property
    def journal_dir(self) -> Path:
        return self.state_path / "tombstone-journals"

    @property
    def audit_history_dir(self) -> Path:
        return self.state_path / "cleaner-audit"

    def ensure(self) -> None:
        for path in (self.reports_path, self.state_path):
            path.mkdir(parents=True, exist_ok=True)


class SlackResource(ConfigurableResource):
    """Slack paging: a bot token (from ``SLACK_BOT_TOKEN``), a channel, and dedupe settings.

    A missing or invalid token never fails a run: :class:`~offsetops.assets.alerting.SlackNotifier` logs one
    line and appends the alert to the outbox in the state dir.
    """

    token: str | None = Field(default=None, description="Slack bot token (xoxb-...).")
    channel: str = Field(default=DEFAULT_SLACK_CHANNEL, min_length=1)
    base_url: str | None = Field(default=None, description="Slack Web API base URL (tests, proxies).")
    dedupe_window_s: int = Field(default=3600, ge=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    dagster_url: str = Field(default=DEFAULT_DAGSTER_URL, description="Base URL of the Dagster UI.")
    reports_url: str | None = Field(
        default=None,
        description="Base URL where the output dir's reports/ folder is served (web server, object "
        "store); alerts link the operator report there. No link when unset.",
    )
    report_path: str = Field(
        default=REPORT_FILE, min_length=1, description="The operator report, under reports_url."
    )
    budget_s: float = Field(
        default=20, gt=0, le=300, description="Total seconds one evaluation may spend on Slack."
    )
    timeout_s: float = Field(default=10, gt=0, le=120, description="Seconds for one request to Slack.")
    max_retry_after_s: float = Field(
        default=5, ge=0, le=120, description="Longest Retry-After honoured; longer waits outbox instead."
    )

    _notifier: Any = PrivateAttr(default=None)

    @field_validator("base_url", "dagster_url", "reports_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value

    @field_validator("channel")
    @classmethod
    def _channel(cls, value: str) -> str:
        if any(c.isspace() for c in value):
            raise ValueError(f"channel {value!r} contains whitespace")
        return value

    def run_url(self, run_id: str) -> str:
        return self.links().run(run_id)

    def links(self) -> AlertLinks:
        """Where alerts link: the Dagster UI (asset partitions, runs) and the operator report."""
        from offsetops.assets.alerting.blocks import AlertLinks

        return AlertLinks(
            dagster_url=self.dagster_url or DEFAULT_DAGSTER_URL,
            reports_url=self.reports_url,
            report_path=self.report_path,
        )

    def notifier(self, state: StateResource) -> SlackNotifier:
        """A :class:`SlackNotifier` whose dedupe state and outbox live in ``state``'s state dir."""
        from offsetops.assets.alerting import SlackNotifier

        base_url = self.base_url
        if base_url and not base_url.endswith("/"):
            base_url += "/"
        return SlackNotifier(
            self.token,
            self.channel,
            base_url=base_url,
            state_path=state.alert_state_file,
            outbox_path=state.outbox_file,
            dedupe_window_s=self.dedupe_window_s,
            max_retries=self.max_retries,
            budget_s=self.budget_s,
            timeout_s=self.timeout_s,
            max_retry_after_s=self.max_retry_after_s,
        )

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if not (self.token or "").strip() and context.log is not None:
            context.log.warning(
                f"{ENV_SLACK_TOKEN} is not set: alerts go to the outbox in the state dir, not to Slack"
            )


# -- the one place where a deployment is chosen ----------------------------------------------------


def _field_errors(exc: ValidationError, resource: str, env_names: Mapping[str, str]) -> str:
    parts = []
    for err in exc.errors():
        field = ".".join(str(x) for x in err["loc"]) or "(model)"
        var = env_names.get(field)
        where = f"{resource}.{field}" + (f" (env {var})" if var else "")
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _make(cls: type[ConfigurableResource], env_names: Mapping[str, str], **values: Any) -> Any:
    try:
        return cls(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise DeploymentConfigError(
            f"bad offsetops config: {_field_errors(exc, cls.__name__, env_names)}"
        ) from exc


def _int_env(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError as exc:
        raise DeploymentConfigError(f"{name}={raw!r} is not an integer") from exc


def _float_env(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError as exc:
        raise DeploymentConfigError(f"{name}={raw!r} is not a number") from exc


def _spark_conf_env(env: Mapping[str, str]) -> dict[str, str]:
    """``OFFSETOPS_SPARK_CONF``: ``key=value`` pairs separated by commas or newlines."""
    conf: dict[str, str] = {}
    for item in re.split(r"[,\n]", env.get(ENV_SPARK_CONF, "")):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise DeploymentConfigError(f"{ENV_SPARK_CONF}: {item.strip()!r} is not key=value")
        conf[key.strip()] = value.strip()
    return conf


def build_resources(
    deployment: str | None = None, env: Mapping[str, str] | None = None
) -> dict[str, ConfigurableResource]:
    """The resources of ``deployment`` (default: ``$OFFSETOPS_DEPLOYMENT``, else ``local``).

    ``local``: the log dir ``$OFFSETOPS_LOG_DIR`` (default ``out/demo/logdir``, where ``offsetops demo``
    simulates one) or ``$OFFSETOPS_BOOTSTRAP_SERVERS``, Spark ``local[*]``, reports in ``out/demo``.
    ``cluster``: ``$OFFSETOPS_SPARK_MASTER``, ``$OFFSETOPS_OUTPUT_DIR`` and one of the sources are
    required. Raises :class:`DeploymentConfigError` naming the variable or field.
    """
    env = os.environ if env is None else env
    deployment = (deployment or env.get(ENV_DEPLOYMENT) or "local").strip().lower()
    if deployment not in DEPLOYMENTS:
        raise DeploymentConfigError(
            f"{ENV_DEPLOYMENT}={deployment!r}: expected one of {', '.join(DEPLOYMENTS)}"
        )
    log_dir = env.get(ENV_LOG_DIR) or None
    bootstrap = env.get(ENV_BOOTSTRAP) or None
    client_config = env.get(ENV_CLIENT_CONFIG) or None
    output_dir = env.get(ENV_OUTPUT_DIR) or None
    master = env.get(ENV_SPARK_MASTER) or None
    if deployment == "local":
        if not log_dir and not bootstrap and not client_config:
            log_dir = DEFAULT_LOCAL_LOG_DIR
        output_dir = output_dir or DEFAULT_OUTPUT_DIR
        master = master or "local[*]"
    else:
        missing = [
            name for name, value in ((ENV_SPARK_MASTER, master), (ENV_OUTPUT_DIR, output_dir)) if not value
        ]
        if not log_dir and not bootstrap and not client_config:
            missing.append(f"{ENV_LOG_DIR} or {ENV_BOOTSTRAP} (or {ENV_CLIENT_CONFIG})")
        if missing:
            raise DeploymentConfigError(f"{ENV_DEPLOYMENT}=cluster needs {', '.join(missing)}")

    source = _make(
        OffsetsSourceResource,
        {
            "log_dir": ENV_LOG_DIR,
            "broker_scans_dir": ENV_BROKER_SCANS_DIR,
            "bootstrap_servers": ENV_BOOTSTRAP,
            "client_config": ENV_CLIENT_CONFIG,
            "topic": ENV_TOPIC,
            "num_partitions": ENV_NUM_PARTITIONS,
            "semantics": ENV_SEMANTICS,
            "as_of_ms": ENV_AS_OF_MS,
            "live_reload": ENV_LIVE_RELOAD,
            "live_range_offsets": ENV_LIVE_RANGE_OFFSETS,
            "live_executors_min_offsets": ENV_LIVE_EXECUTORS_MIN_OFFSETS,
        },
        log_dir=log_dir,
        broker_scans_dir=env.get(ENV_BROKER_SCANS_DIR) or None,
        bootstrap_servers=bootstrap,
        client_config=client_config,
        topic=env.get(ENV_TOPIC) or "__consumer_offsets",
        num_partitions=num_partitions_from_env(env),
        semantics=env.get(ENV_SEMANTICS) or None,
        as_of_ms=_int_env(env, ENV_AS_OF_MS),
        live_reload=(env.get(ENV_LIVE_RELOAD) or "").strip().lower() or None,
        live_range_offsets=_int_env(env, ENV_LIVE_RANGE_OFFSETS),
        live_executors_min_offsets=_int_env(env, ENV_LIVE_EXECUTORS_MIN_OFFSETS),
    )
    spark = _make(
        SparkResource,
        {"master": ENV_SPARK_MASTER, "conf": ENV_SPARK_CONF},
        master=master,
        app_name=f"offsetops-{deployment}",
        conf=_spark_conf_env(env),
    )
    state = _make(
        StateResource,
        {"output_dir": ENV_OUTPUT_DIR, "state_dir": ENV_STATE_DIR, "tables_uri": ENV_TABLES_URI},
        output_dir=output_dir,
        state_dir=env.get(ENV_STATE_DIR) or None,
        tables_uri=env.get(ENV_TABLES_URI) or None,
    )
    # The token stays an EnvVar (resolved at run time, never shown in the UI) when it is set; when it
    # is not, alerts go to the outbox instead of failing every run on a missing variable.
    token: Any = EnvVar(ENV_SLACK_TOKEN) if env.get(ENV_SLACK_TOKEN, "").strip() else None
    slack = _make(
        SlackResource,
        {
            "channel": ENV_SLACK_CHANNEL,
            "base_url": ENV_SLACK_BASE_URL,
            "dedupe_window_s": ENV_SLACK_DEDUPE,
            "dagster_url": ENV_DAGSTER_URL,
            "reports_url": ENV_REPORTS_BASE_URL,
            "budget_s": ENV_SLACK_BUDGET,
        },
        token=token,
        channel=env.get(ENV_SLACK_CHANNEL) or None,
        base_url=env.get(ENV_SLACK_BASE_URL) or None,
        dedupe_window_s=_int_env(env, ENV_SLACK_DEDUPE),
        dagster_url=env.get(ENV_DAGSTER_URL) or None,
        reports_url=env.get(ENV_REPORTS_BASE_URL) or None,
        budget_s=_float_env(env, ENV_SLACK_BUDGET),
    )
    return {"offsets_source": source, "spark": spark, "state": state, "slack": slack}


def schedules_running_by_default(env: Mapping[str, str] | None = None) -> bool:
    """``OFFSETOPS_SCHEDULES=running|stopped``; by default running on ``cluster``, stopped locally."""
    env = os.environ if env is None else env
    raw = (env.get(ENV_SCHEDULES) or "").strip().lower()
    if raw:
        if raw not in ("running", "stopped"):
            raise DeploymentConfigError(f"{ENV_SCHEDULES}={raw!r}: expected running or stopped")
        return raw == "running"
    return (env.get(ENV_DEPLOYMENT) or "local").strip().lower() == "cluster"


# -- small helpers the asset modules share ---------------------------------------------------------


def clock_metadata(clock: Clock) -> dict[str, Any]:
    """The instant the run evaluated as of (the same for every partition and asset of the run)."""
    return {
        "as_of": MetadataValue.timestamp(clock.as_of_ms / 1000),
        "as_of_ms": MetadataValue.int(clock.as_of_ms),
        "clock": clock.describe(),
    }


def run_partitions(context: Any) -> list[int]:
    """The ``__consumer_offsets`` partitions this run covers (one, a range, or all of a backfill)."""
    return sorted(int(k) for k in context.partition_keys)


def write_json(path: Path, doc: Any) -> Path:
    """Write ``doc`` as indented JSON, atomically (a reader never sees half a report)."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def all_partitions_tags(num_partitions: int | None = None) -> dict[str, str]:
    """Run tags that make one run cover every offsets partition (one Spark job, not N runs)."""
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    last = (NUM_PARTITIONS if num_partitions is None else num_partitions) - 1
    return {ASSET_PARTITION_RANGE_START_TAG: "0", ASSET_PARTITION_RANGE_END_TAG: str(last)}


def partitions_label(partitions: list[int]) -> str:
    """``0-49`` for a contiguous range, ``3,7,9`` otherwise (for file names and metadata)."""
    if not partitions:
        return "none"
    if partitions == list(range(partitions[0], partitions[-1] + 1)) and len(partitions) > 1:
        return f"{partitions[0]}-{partitions[-1]}"
    return ",".join(str(p) for p in partitions)


SCHEDULE_STATUS = (
    DefaultScheduleStatus.RUNNING if schedules_running_by_default() else DefaultScheduleStatus.STOPPED
)
"""Whether the schedules start running when the code location is first loaded."""
