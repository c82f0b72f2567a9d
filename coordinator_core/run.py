"""The run model: every setting a run is evaluated with, resolved once, each carrying where it came from.

One precedence, highest first (``docs/architecture.md``, "The run model"):

1. a command-line flag (for Dagster: a run or resource config value, the UI's flags);
2. the ``OFFSETOPS_*`` environment;
3. one config file (``--config FILE`` / ``OFFSETOPS_CONFIG``): Java ``.properties`` with Kafka's names
   (``offsets.retention.minutes=120``) and ``offsetops.*`` for offsetops' own settings;
4. the broker's own configuration where offsetops can see it: a ``server.properties`` given with
   ``--server-properties``, DescribeConfigs on a live cluster, the broker version a log dir declares;
5. Kafka's defaults for that broker version (``offsets.retention.minutes`` 10080 since 2.0, 1440
   before: KIP-186).

The clock is part of it (:mod:`offsetops.coordinator_core.clock`): ``--now`` / ``OFFSETOPS_AS_OF_MS``,
else the instant the log dir declares, else the wall clock read once by the front end. Every output
states :meth:`RunSettings.to_json` (or :meth:`RunSettings.summary`) so a number can be traced to its
settings.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offsetops.coordinator_core.clock import CONFIGURED, Clock, read_declared_clock, resolve_clock
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.settings import (
    KIP848,
    LEGACY,
    coordinator_for_broker_version,
    parse_epoch_ms,
    parse_forecast_hours,
    parse_max_batch_bytes,
    parse_offsets_partitions,
    parse_retention_minutes,
    parse_state_dir,
)

ENV_CONFIG = "OFFSETOPS_CONFIG"
ENV_SERVER_PROPERTIES = "OFFSETOPS_SERVER_PROPERTIES"
ENV_AS_OF_MS = "OFFSETOPS_AS_OF_MS"
#: A config file larger than this is refused (a settings file is a few hundred bytes).
MAX_CONFIG_BYTES = 1 << 20

KAFKA_DEFAULT = "Kafka default"
OFFSETOPS_DEFAULT = "offsetops default"


class SettingsError(ValueError):
    """A setting that cannot be used; the message names where it came from and why."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One resolved value and where it came from (``env OFFSETOPS_RETENTION_MINUTES``)."""

    value: Any
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source}


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {text.strip()!r}")
        return value

    return parse


def broker_version_of(text: str) -> str:
    """``3.9``, ``3.9.1`` or ``3.9-IV0`` (``inter.broker.protocol.version``) to ``3.9``/``3.9.1``."""
    body = text.strip().lstrip("v").split("-")[0]
    parts = body.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts) or int(parts[0]) > 9:
        raise ValueError(f"{text.strip()!r} is not a Kafka version like 3.9 or 4.0.0")
    return body


#: The newest Kafka major version this tool knows the coordinator of.
NEWEST_MAJOR = 4


def parse_known_broker_version(text: str) -> str:
    """A released Kafka version this tool knows the coordinator of (0.8 to 4.x), as ``--broker-version``
    takes it: :func:`broker_version_of` without the ``-IV`` suffix of ``inter.broker.protocol.version``."""
    if "-" in text:
        raise ValueError(f"{text.strip()!r} is not a Kafka version like 3.9 or 4.0.0")
    version = broker_version_of(text)
    major, minor = (int(x) for x in version.split(".")[:2])
    if major > NEWEST_MAJOR or (major == 0 and minor < 8):
        raise ValueError(f"{text.strip()!r} is not a Kafka version this tool knows (0.8 to {NEWEST_MAJOR}.x)")
    return version


def _major_minor(version: str | None) -> tuple[int, int] | None:
    if not version:
        return None
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@dataclass(frozen=True, slots=True)
class Spec:
    """One setting: its offsetops name, the key a config file or broker gives it, its variable."""

    name: str
    key: str
    env: str
    parse: Callable[[str], Any]
    #: keys the broker's own configuration may give it (server.properties, DescribeConfigs)
    broker_keys: tuple[str, ...] = ()


#: Each value is parsed by the core parser its flag uses too (coordinator_core/settings.py): a value from
#: the environment or a config file meets the same range and the same error as on the command line.
SPECS: tuple[Spec, ...] = (
    Spec("broker_version", "offsetops.broker.version", "OFFSETOPS_BROKER_VERSION", broker_version_of,
         ("inter.broker.protocol.version",)),
    Spec("retention_minutes", "offsets.retention.minutes", "OFFSETOPS_RETENTION_MINUTES",
         parse_retention_minutes, ("offsets.retention.minutes",)),
    Spec("num_partitions", "offsets.topic.num.partitions", "OFFSETOPS_NUM_PARTITIONS",
         parse_offsets_partitions, ("offsets.topic.num.partitions",)),
    Spec("coordinator", "offsetops.coordinator", "OFFSETOPS_COORDINATOR", _choice(KIP848, LEGACY)),
    Spec("semantics", "offsetops.semantics", "OFFSETOPS_SEMANTICS", _choice("java", "scala")),
    Spec("forecast_hours", "offsetops.forecast.hours", "OFFSETOPS_FORECAST_HOURS", parse_forecast_hours),
    Spec("max_batch_bytes", "offsetops.max.batch.bytes", "OFFSETOPS_MAX_BATCH_BYTES", parse_max_batch_bytes),
    # --state DIR: where each partition's fold is saved and resumed from (coordinator_core.resume)
    Spec("resume_state_dir", "offsetops.resume.state.dir", "OFFSETOPS_RESUME_STATE_DIR", parse_state_dir),
)  # fmt: skip


@dataclass(frozen=True)
class RunSettings:
    """The settings of one run, each a :class:`Setting`, and the clock it is evaluated at."""

    clock: Clock
    values: Mapping[str, Setting]
    #: the broker's own configuration as read (server.properties or DescribeConfigs), for the cleaner
    broker_config: Mapping[str, str] = field(default_factory=dict)
    broker_config_source: str | None = None
    #: the config file as read, for settings other modules take by Kafka's name (``log.cleaner.*``)
    config_file_values: Mapping[str, str] = field(default_factory=dict)
    config_file_source: str | None = None

    def __getitem__(self, name: str) -> Any:
        return self.values[name].value

    def source(self, name: str) -> str:
        return self.values[name].source

    @property
    def retention_ms(self) -> int:
        return int(self["retention_minutes"] * 60_000)

    @property
    def forecast_horizon_ms(self) -> int:
        return int(self["forecast_hours"] * 3_600_000)

    @property
    def now_ms(self) -> int:
        return self.clock.as_of_ms

    def to_json(self) -> dict[str, dict[str, Any]]:
        """``{"now": {...}, "retention_minutes": {"value": 120, "source": "env ..."}, ...}``."""
        doc: dict[str, dict[str, Any]] = {
            "now": {"value": self.clock.as_of_ms, "iso": self.clock.iso, "source": self.clock.detail}
        }
        doc.update({name: s.to_json() for name, s in self.values.items()})
        return doc

    def summary(self, names: tuple[str, ...] | None = None) -> str:
        """One line for a text footer, a Slack context line or a log message (see :func:`settings_line`)."""
        return settings_line(self.to_json(), names) or ""


#: the settings a message about expiration names (a Slack context line)
EXPIRATION_SETTINGS = ("now", "retention_minutes", "coordinator", "forecast_hours")


def settings_line(doc: Mapping[str, Any] | None, names: tuple[str, ...] | None = None) -> str | None:
    """``settings: retention_minutes 120 (env OFFSETOPS_RETENTION_MINUTES); ...`` from the JSON of
    :meth:`RunSettings.to_json` (as reports carry it), for ``names`` (default all); None without one."""
    if not isinstance(doc, Mapping) or not doc:
        return None
    parts = []
    for name in names or tuple(doc):
        entry = doc.get(name)
        if not isinstance(entry, Mapping):
            continue
        value = entry.get("iso") or entry.get("value")
        source = entry.get("source")
        # no value is "unknown" when nothing declared one, "none" when a default chose none (no resume state)
        unset = "unknown" if str(source or "unknown").startswith("unknown") else "none"
        parts.append(f"{name} {unset if value is None else value} ({source})")
    return "settings: " + "; ".join(parts) if parts else None


def read_settings_file(path: str | os.PathLike[str], *, limit: int = MAX_CONFIG_BYTES) -> dict[str, str]:
    """A ``.properties`` file read as a size-limited regular file (a FIFO or a device never blocks us,
    a huge file is refused before it is read)."""
    from offsetops.coordinator_core.kafka_client import parse_properties

    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise SettingsError(f"{p}: cannot open ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SettingsError(f"{p}: not a regular file")
        if info.st_size > limit:
            raise SettingsError(f"{p}: {info.st_size} bytes, more than the {limit} a settings file may hold")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(limit + 1)
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise SettingsError(f"{p}: grew past {limit} bytes while read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    try:
        return parse_properties(text)
    except ValueError as exc:
        raise SettingsError(f"{p}: {exc}") from None


@dataclass(frozen=True, slots=True)
class _Layer:
    """One place settings come from: by setting name or by key, with the label outputs show."""

    label: str
    values: Mapping[str, str]
    by_key: bool


def _lookup(layer: _Layer, spec: Spec, keys: tuple[str, ...]) -> tuple[str, str] | None:
    if not layer.by_key:
        raw = layer.values.get(spec.env, "").strip()
        return (raw, f"{layer.label} {spec.env}") if raw else None
    for key in keys:
        raw = layer.values.get(key, "").strip()
        if raw:
            return raw, f"{layer.label} ({key})"
    return None


def _from_layers(spec: Spec, layers: list[_Layer], broker: _Layer | None) -> Setting | None:
    for layer in layers:
        hit = _lookup(layer, spec, (spec.key,))
        if hit is not None:
            return _parsed(spec, *hit)
    if broker is not None and spec.broker_keys:
        hit = _lookup(broker, spec, spec.broker_keys)
        if hit is not None:
            return _parsed(spec, *hit)
    return None


def _parsed(spec: Spec, raw: str, source: str) -> Setting:
    try:
        return Setting(spec.parse(raw), source)
    except ValueError as exc:
        raise SettingsError(f"{spec.name} from {source}: {exc}") from None


def _default(name: str, resolved: Mapping[str, Setting]) -> Setting:
    """Kafka's default for the resolved broker version (or offsetops' own, for its settings)."""
    if name == "broker_version":
        return Setting(None, "unknown (no flag, variable, config file, broker config or log dir declares it)")
    version = resolved["broker_version"].value
    mm = _major_minor(version)
    by = f"{KAFKA_DEFAULT} for broker {version}"
    if name == "retention_minutes":
        if mm is None:
            return Setting(10080, f"{KAFKA_DEFAULT} since 2.0 (broker version unknown)")
        return Setting(10080 if mm >= (2, 0) else 1440, by)
    if name == "num_partitions":
        return Setting(50, KAFKA_DEFAULT)
    if name == "coordinator":
        if mm is None:
            return Setting(KIP848, f"{OFFSETOPS_DEFAULT} (Kafka 4.x, broker version unknown)")
        return Setting(coordinator_for_broker_version(version), by)
    if name == "semantics":
        coordinator = resolved["coordinator"]
        if coordinator.value == LEGACY and not coordinator.source.startswith(
            (KAFKA_DEFAULT, OFFSETOPS_DEFAULT)
        ):
            # a legacy coordinator asked for: its own loader (GroupMetadataManager) replays the log
            return Setting(
                "scala", f"the legacy coordinator's loader (coordinator from {coordinator.source})"
            )
        # the Java replay rules are those of the 3.6+ coordinator; older brokers replay as Scala did
        if mm is None:
            return Setting("java", f"{OFFSETOPS_DEFAULT} (Kafka 3.6+/4.x, broker version unknown)")
        return Setting("java" if mm >= (3, 6) else "scala", by)
    if name == "forecast_hours":
        return Setting(24.0, OFFSETOPS_DEFAULT)
    if name == "max_batch_bytes":
        return Setting(DEFAULT_MAX_BATCH_BYTES, OFFSETOPS_DEFAULT)
    if name == "resume_state_dir":
        return Setting(None, f"{OFFSETOPS_DEFAULT} (no resume state: every run reads from the start)")
    return Setting(None, "unknown")


def _declared_version(log_dir: str | None) -> Setting | None:
    clock = read_declared_clock(log_dir)
    version = None if clock is None else clock.broker_version
    if clock is None or not version:
        return None
    try:
        return Setting(broker_version_of(version), clock.detail)
    except ValueError as exc:
        raise SettingsError(f"broker version {clock.detail}: {exc}") from None


def resolve_run(
    *,
    flags: Mapping[str, tuple[Any, str]] | None = None,
    environ: Mapping[str, str] | None = None,
    config_file: str | None = None,
    server_properties: str | None = None,
    broker_config: Mapping[str, str] | None = None,
    broker_config_source: str | None = None,
    log_dir: str | None = None,
    now: tuple[int, str] | None = None,
    wall_ms: int | None = None,
) -> RunSettings:
    """Resolve every setting once, in the precedence of this module's docstring.

    ``flags``: ``{name: (value, "flag --retention-ms")}`` for what the user gave explicitly (already
    parsed); ``config_file`` (else ``$OFFSETOPS_CONFIG``); ``server_properties`` (else
    ``$OFFSETOPS_SERVER_PROPERTIES``) the brokers' file, or ``broker_config`` the broker's own settings
    from DescribeConfigs named by ``broker_config_source``; ``log_dir`` for the
    declared clock and broker version; ``now`` an explicit instant and its label. Raises
    :class:`SettingsError` naming the source of a bad value.
    """
    environ = os.environ if environ is None else environ
    flags = dict(flags or {})
    path = config_file or environ.get(ENV_CONFIG, "").strip() or None
    layers = [_Layer("env", environ, by_key=False)]
    if path:
        how = "--config" if config_file else ENV_CONFIG
        layers.append(_Layer(f"config file {path} ({how})", read_settings_file(path), by_key=True))
    file_layer = layers[1] if path else None
    props = server_properties or environ.get(ENV_SERVER_PROPERTIES, "").strip() or None
    if props and not broker_config:
        broker_config, broker_config_source = read_server_properties(props)
    broker = (
        _Layer(broker_config_source or "broker config", broker_config, by_key=True) if broker_config else None
    )
    resolved: dict[str, Setting] = {}
    for spec in SPECS:
        if spec.name in flags and flags[spec.name][0] is not None:
            value, label = flags[spec.name]
            resolved[spec.name] = Setting(value, label)
            continue
        got = _from_layers(spec, layers, broker)
        if got is None and spec.name == "broker_version":  # what the log dir's writer declared
            got = _declared_version(log_dir)
        resolved[spec.name] = got if got is not None else _default(spec.name, resolved)
    clock = _resolve_clock(log_dir, now, environ, wall_ms)
    return RunSettings(
        clock,
        resolved,
        dict(broker_config or {}),
        broker_config_source,
        dict(file_layer.values) if file_layer else {},
        file_layer.label if file_layer else None,
    )


def _resolve_clock(
    log_dir: str | None, now: tuple[int, str] | None, environ: Mapping[str, str], wall_ms: int | None
) -> Clock:
    if now is not None and now[0] is not None:
        return resolve_clock(log_dir, configured_ms=now[0], configured_by=now[1], wall_ms=wall_ms)
    raw = environ.get(ENV_AS_OF_MS, "").strip()
    if raw:
        try:
            as_of = parse_epoch_ms(raw)
        except ValueError as exc:
            raise SettingsError(f"env {ENV_AS_OF_MS}: {exc}") from None
        return Clock(as_of, CONFIGURED, f"env {ENV_AS_OF_MS}")
    return resolve_clock(log_dir, wall_ms=wall_ms)


def _minutes(ms: int) -> int | float:
    minutes = ms / 60_000
    return int(minutes) if minutes.is_integer() else minutes


#: setting -> the attributes a front end's options give it: (attribute, flag, to the setting's unit)
FLAG_ATTRIBUTES: dict[str, tuple[tuple[str, str, Callable[[Any], Any]], ...]] = {
    "retention_minutes": (
        ("retention_ms", "--retention-ms", _minutes),
        ("retention_minutes", "--retention-minutes", lambda m: int(m) if float(m).is_integer() else m),
    ),
    "num_partitions": (("num_partitions", "--num-partitions", int),),
    "semantics": (("semantics", "--semantics", str),),
    "coordinator": (("coordinator", "--coordinator", str),),
    "broker_version": (("broker_version", "--broker-version", str),),
    "forecast_hours": (
        ("forecast_hours", "--forecast-hours", float),
        ("forecast_horizon_ms", "--forecast-horizon-ms", lambda ms: ms / 3_600_000),
    ),
    "max_batch_bytes": (("max_batch_bytes", "--max-batch-bytes", int),),
    "resume_state_dir": (("resume_state_dir", "--state", parse_state_dir),),
}


def flags_of(options: object) -> dict[str, tuple[Any, str]]:
    """The settings a parsed command line gave (attributes that are not None), as :func:`resolve_run`
    flags; a front end leaves each option's default to None so the run model can fill it."""
    flags: dict[str, tuple[Any, str]] = {}
    for name, attributes in FLAG_ATTRIBUTES.items():
        for attr, flag, convert in attributes:
            value = getattr(options, attr, None)
            if value is not None:
                # the spelling the user typed, where an option has several (``--resume-state``)
                spelled = getattr(options, f"{attr}_flag", None) or flag
                try:
                    flags[name] = (convert(value), f"flag {spelled}")
                except ValueError as exc:  # an untyped option (a path) checked here
                    raise SettingsError(f"{name} from flag {spelled}: {exc}") from None
                break
    return flags


def apply_to(options: object, run: RunSettings) -> None:
    """Write the resolved settings back over the options that spell them (in their own units), and
    ``options.run``, so a command computes with exactly what it reports."""
    units: dict[str, Any] = {
        "retention_ms": run.retention_ms,
        "forecast_horizon_ms": run.forecast_horizon_ms,
    }
    for name, attributes in FLAG_ATTRIBUTES.items():
        for attr, _flag, _convert in attributes:
            if hasattr(options, attr):
                setattr(options, attr, units.get(attr, run[name]))
    options.run = run  # type: ignore[attr-defined]


def resolve_options(
    options: object,
    *,
    log_dir: str | None,
    config_file: str | None = None,
    server_properties: str | None = None,
) -> RunSettings:
    """:func:`resolve_run` for a parsed command line (its flags by :data:`FLAG_ATTRIBUTES`, its instant
    from ``now`` or ``now_ms``), written back with :func:`apply_to`."""
    now = None
    for attr, flag in (("now", "--now"), ("now_ms", "--now-ms")):
        if getattr(options, attr, None) is not None:
            now = (int(getattr(options, attr)), f"flag {flag}")
            break
    run = resolve_run(
        flags=flags_of(options),
        config_file=config_file,
        server_properties=server_properties,
        log_dir=log_dir,
        now=now,
    )
    apply_to(options, run)
    return run


def read_server_properties(path: str) -> tuple[dict[str, str], str]:
    """A broker's ``server.properties`` (size-limited) and the label settings from it carry."""
    return read_settings_file(path), f"broker server.properties {path}"
