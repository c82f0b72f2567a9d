"""``offsets_source``: where ``__consumer_offsets`` is read from, and the run's clock."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dagster import ConfigurableResource, InitResourceContext
from offsetops.coordinator_core.cache import CoordinatorCache, LoadStats
from offsetops.coordinator_core.clock import Clock, resolve_clock
from offsetops.coordinator_core.run import RunSettings, resolve_run
from offsetops.coordinator_core.sources.ranges import DEFAULT_EXECUTORS_MIN_OFFSETS, DEFAULT_RANGE_OFFSETS
from offsetops.coordinator_core.sources.source import ReadLimits, Source
from pydantic import Field, PrivateAttr, field_validator, model_validator

if TYPE_CHECKING:
    from offsetops.coordinator_core.kafka_client import KafkaClientConfig
    from offsetops.coordinator_core.sources.logdir import LogDir

# Named in messages only; offsetops.assets.resources.deployment reads them.
ENV_LOG_DIR = "OFFSETOPS_LOG_DIR"
ENV_BOOTSTRAP = "OFFSETOPS_BOOTSTRAP_SERVERS"
ENV_AS_OF_MS = "OFFSETOPS_AS_OF_MS"


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
    num_partitions: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="offsets.topic.num.partitions; default: $OFFSETOPS_NUM_PARTITIONS, the config file, "
        "server_properties, else 50 (the run model).",
    )
    semantics: str | None = Field(
        default=None,
        description="Coordinator replay rules: java (3.6+/4.x) or scala (before 3.6); default: "
        "$OFFSETOPS_SEMANTICS, the config file, else the broker version (java when unknown).",
    )
    server_properties: str | None = Field(
        default=None,
        description="The brokers' server.properties: offsets.retention.minutes, offsets.topic.num.partitions "
        "and inter.broker.protocol.version from it, where nothing above sets them.",
    )
    resume_state_dir: str | None = Field(
        default=None,
        description="Where coordinator_cache saves each partition's fold and resumes it from, so a run "
        "reads only what was appended to a log dir; default: $OFFSETOPS_RESUME_STATE_DIR, the config file's "
        "offsetops.resume.state.dir, else none (every run reads the whole log).",
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
    _settings: RunSettings | None = PrivateAttr(default=None)

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

    @field_validator("semantics")
    @classmethod
    def _semantics(cls, value: str | None) -> str | None:
        if value is not None and value not in ("java", "scala"):
            raise ValueError(f"semantics must be java or scala, got {value!r}")
        return value

    @field_validator("resume_state_dir")
    @classmethod
    def _resume_state_dir(cls, value: str | None) -> str | None:
        from offsetops.coordinator_core.settings import parse_state_dir

        return None if value is None or not value.strip() else parse_state_dir(value)

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

    def settings(self, flags: Mapping[str, tuple[Any, str]] | None = None) -> RunSettings:
        """The run's settings (:func:`offsetops.coordinator_core.run.resolve_run`) at the run's clock: this
        resource's fields, then ``flags`` (an asset's run config, which beats them), over the
        ``OFFSETOPS_*`` environment, the config file, ``server_properties`` and Kafka's defaults."""
        if not flags and self._settings is not None:
            return self._settings
        given: dict[str, tuple[Any, str]] = {
            name: (getattr(self, name), f"Dagster resource OffsetsSourceResource.{name}")
            for name in ("num_partitions", "semantics", "resume_state_dir")
            if getattr(self, name) is not None
        }
        given.update(flags or {})
        clock = self.clock()
        run = resolve_run(
            flags=given,
            server_properties=self.server_properties,
            log_dir=self.log_dir,
            now=(clock.as_of_ms, clock.detail),
        )
        if not flags:
            self._settings = run
        return run

    def source(self) -> Source:
        """The run's one :class:`Source`: the live cluster when configured, else the log dir, with the
        run's read limits."""
        limits = ReadLimits(max_batch_bytes=self.settings()["max_batch_bytes"])
        if self.is_live:
            return Source(client=self.kafka_config(), topic=self.topic, limits=limits)
        return Source(log_dir=str(self.open_log_dir().path), limits=limits)

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
        run = self.settings()
        return self.source().load_or_empty(
            partitions, num_partitions=run["num_partitions"], semantics=run["semantics"]
        )

    def empty_cache(self, partition: int) -> CoordinatorCache:
        """What the coordinator holds for a partition with no log: no groups."""
        return CoordinatorCache(
            partition=partition,
            groups={},
            stats=LoadStats(),
            num_partitions=self.settings()["num_partitions"],
        )
