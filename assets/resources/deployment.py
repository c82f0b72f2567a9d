"""The one place where a deployment picks its resources, from the environment.

``OFFSETOPS_DEPLOYMENT`` chooses ``local`` (the default: a log dir on this machine, ``local[*]`` Spark,
reports under ``out/``) or ``cluster`` (a Spark master and a real cluster's log dir or brokers, given
by the environment). Each deployment is a literal set of resources with its own defaults and required
variables (:data:`DEPLOYMENTS`); :data:`ENVIRONMENT` says which variable sets which resource field, and
pydantic parses the text, so an error names both (``SparkResource.master (env
OFFSETOPS_SPARK_MASTER): ...``). The Slack token stays an :class:`dagster.EnvVar`: it is resolved when
a run starts and never shown in the UI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dagster import ConfigurableResource, DefaultScheduleStatus, EnvVar
from offsetops.assets.resources.slack import ENV_SLACK_TOKEN, ENV_SLACK_TOKEN_FILE, SlackResource
from offsetops.assets.resources.source import ENV_AS_OF_MS, ENV_BOOTSTRAP, ENV_LOG_DIR, OffsetsSourceResource
from offsetops.assets.resources.spark import SparkResource
from offsetops.assets.resources.state import DEFAULT_OUTPUT_DIR, StateResource
from offsetops.checks.operator_report import ENV_REPORTS_BASE_URL
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.settings import parse_pairs
from pydantic import ValidationError

DEFAULT_LOCAL_LOG_DIR = "out/demo/logdir"
DEFAULT_FORECAST_HOURS = 24.0

#: Environment variables a deployment reads (documented in docs/operations.md).
ENV_DEPLOYMENT = "OFFSETOPS_DEPLOYMENT"
ENV_NUM_PARTITIONS = "OFFSETOPS_NUM_PARTITIONS"
ENV_CLIENT_CONFIG = "OFFSETOPS_CLIENT_CONFIG"
ENV_TOPIC = "OFFSETOPS_TOPIC"
ENV_SEMANTICS = "OFFSETOPS_SEMANTICS"
ENV_SERVER_PROPERTIES = "OFFSETOPS_SERVER_PROPERTIES"
ENV_RETENTION_MINUTES = "OFFSETOPS_RETENTION_MINUTES"
#: read by the run model itself (``resume_state_dir``), not mapped onto a resource field
ENV_RESUME_STATE_DIR = "OFFSETOPS_RESUME_STATE_DIR"
ENV_FORECAST_HOURS = "OFFSETOPS_FORECAST_HOURS"
ENV_OUTPUT_DIR = "OFFSETOPS_OUTPUT_DIR"
ENV_STATE_DIR = "OFFSETOPS_STATE_DIR"
ENV_TABLES_URI = "OFFSETOPS_TABLES_URI"
ENV_SPARK_MASTER = "OFFSETOPS_SPARK_MASTER"
ENV_SPARK_CONF = "OFFSETOPS_SPARK_CONF"
ENV_SLACK_CHANNEL = "OFFSETOPS_SLACK_CHANNEL"
ENV_SLACK_BASE_URL = "OFFSETOPS_SLACK_BASE_URL"
ENV_SLACK_DEDUPE = "OFFSETOPS_SLACK_DEDUPE_WINDOW_S"
ENV_DAGSTER_URL = "OFFSETOPS_DAGSTER_URL"
ENV_SLACK_BUDGET = "OFFSETOPS_SLACK_BUDGET_S"
ENV_SCHEDULES = "OFFSETOPS_SCHEDULES"
ENV_BROKER_SCANS_DIR = "OFFSETOPS_BROKER_SCANS_DIR"
ENV_LIVE_RELOAD = "OFFSETOPS_LIVE_RELOAD"
ENV_LIVE_RANGE_OFFSETS = "OFFSETOPS_LIVE_RANGE_OFFSETS"
ENV_LIVE_EXECUTORS_MIN_OFFSETS = "OFFSETOPS_LIVE_EXECUTORS_MIN_OFFSETS"

RESOURCE_CLASSES: dict[str, type[ConfigurableResource]] = {
    "offsets_source": OffsetsSourceResource,
    "spark": SparkResource,
    "state": StateResource,
    "slack": SlackResource,
}

ENVIRONMENT: dict[str, dict[str, str]] = {
    "offsets_source": {
        "log_dir": ENV_LOG_DIR,
        "broker_scans_dir": ENV_BROKER_SCANS_DIR,
        "bootstrap_servers": ENV_BOOTSTRAP,
        "client_config": ENV_CLIENT_CONFIG,
        "topic": ENV_TOPIC,
        "server_properties": ENV_SERVER_PROPERTIES,
        "as_of_ms": ENV_AS_OF_MS,
        "live_reload": ENV_LIVE_RELOAD,
        "live_range_offsets": ENV_LIVE_RANGE_OFFSETS,
        "live_executors_min_offsets": ENV_LIVE_EXECUTORS_MIN_OFFSETS,
    },
    "spark": {"master": ENV_SPARK_MASTER, "conf": ENV_SPARK_CONF},
    "state": {"output_dir": ENV_OUTPUT_DIR, "state_dir": ENV_STATE_DIR, "tables_uri": ENV_TABLES_URI},
    "slack": {
        "channel": ENV_SLACK_CHANNEL,
        "base_url": ENV_SLACK_BASE_URL,
        "dedupe_window_s": ENV_SLACK_DEDUPE,
        "dagster_url": ENV_DAGSTER_URL,
        "reports_url": ENV_REPORTS_BASE_URL,
        "budget_s": ENV_SLACK_BUDGET,
        "token_file": ENV_SLACK_TOKEN_FILE,
    },
}
"""``{resource: {field: environment variable}}``: every field a deployment takes from the environment."""


@dataclass(frozen=True)
class Deployment:
    """What one deployment fixes: field defaults, and the variables it cannot run without."""

    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Groups of variables of which at least one must be set, e.g. (log dir | bootstrap | client config).
    requires: tuple[tuple[str, ...], ...] = ()


_SOURCE_VARIABLES = (ENV_LOG_DIR, ENV_BOOTSTRAP, ENV_CLIENT_CONFIG)

DEPLOYMENTS: dict[str, Deployment] = {
    "local": Deployment(
        defaults={
            "offsets_source": {"log_dir": DEFAULT_LOCAL_LOG_DIR},
            "spark": {"master": "local[*]", "app_name": "offsetops-local"},
            "state": {"output_dir": DEFAULT_OUTPUT_DIR},
        }
    ),
    "cluster": Deployment(
        defaults={"spark": {"app_name": "offsetops-cluster"}},
        requires=((ENV_SPARK_MASTER,), (ENV_OUTPUT_DIR,), _SOURCE_VARIABLES),
    ),
}


class DeploymentConfigError(ValueError):
    """The deployment's configuration cannot work; the message names the field or variable."""


def _spark_conf(text: str) -> dict[str, str]:
    """``OFFSETOPS_SPARK_CONF``: ``key=value`` pairs separated by commas or newlines."""
    items = [item.strip() for item in text.replace(",", "\n").splitlines() if item.strip()]
    try:
        return {k: v.strip() for k, v in parse_pairs(items, option=ENV_SPARK_CONF).items()}
    except ValueError as exc:
        raise DeploymentConfigError(str(exc)) from None


def _field_errors(exc: ValidationError, resource: str, env_names: Mapping[str, str]) -> str:
    parts = []
    for err in exc.errors():
        name = ".".join(str(x) for x in err["loc"]) or "(model)"
        var = env_names.get(name)
        parts.append(f"{resource}.{name}" + (f" (env {var})" if var else "") + f": {err['msg']}")
    return "; ".join(parts)


def _resource(key: str, values: dict[str, Any]) -> ConfigurableResource:
    cls = RESOURCE_CLASSES[key]
    try:
        return cls(**values)
    except ValidationError as exc:
        raise DeploymentConfigError(
            f"bad offsetops config: {_field_errors(exc, cls.__name__, ENVIRONMENT.get(key, {}))}"
        ) from exc


def deployment_name(env: Mapping[str, str]) -> str:
    return (env.get(ENV_DEPLOYMENT) or "local").strip().lower()


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
    name = (deployment or "").strip().lower() or deployment_name(env)
    if name not in DEPLOYMENTS:
        raise DeploymentConfigError(f"{ENV_DEPLOYMENT}={name!r}: expected one of {', '.join(DEPLOYMENTS)}")
    chosen = DEPLOYMENTS[name]
    given = {var for var in (v for fields in ENVIRONMENT.values() for v in fields.values()) if env.get(var)}
    missing = [" or ".join(group) for group in chosen.requires if not given & set(group)]
    if missing:
        raise DeploymentConfigError(f"{ENV_DEPLOYMENT}={name} needs {', '.join(missing)}")

    resources: dict[str, ConfigurableResource] = {}
    for key, fields in ENVIRONMENT.items():
        values = dict(chosen.defaults.get(key, {}))
        from_env: dict[str, Any] = {
            f: env[var].strip() for f, var in fields.items() if env.get(var, "").strip()
        }
        if key == "spark" and "conf" in from_env:
            from_env["conf"] = _spark_conf(from_env["conf"])
        if key == "offsets_source" and from_env.keys() & {"bootstrap_servers", "client_config"}:
            # A live source replaces the local default log dir (a log dir set as well still feeds the
            # segment inventory and the cleaner audit).
            values.pop("log_dir", None)
        if key == "slack" and env.get(ENV_SLACK_TOKEN, "").strip():
            # Resolved when a run starts, never shown in the UI; unset, alerts go to the outbox instead
            # of failing every run on a missing variable.
            values["token"] = EnvVar(ENV_SLACK_TOKEN)
        resources[key] = _resource(key, {**values, **from_env})
    return resources


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


def expiration_defaults_from_env(env: Mapping[str, str] | None = None) -> tuple[int, float]:
    """``offsets.retention.minutes`` and the forecast window the run model resolves from ``env`` (the
    ``OFFSETOPS_*`` variables, the config file, server.properties, Kafka's defaults), for messages and
    the UI command ``offsetops demo`` prints; the assets resolve them per run the same way."""
    from offsetops.coordinator_core.run import SettingsError, resolve_run

    try:
        run = resolve_run(environ=os.environ if env is None else env, now=(0, "not used"))
    except SettingsError as exc:
        raise DeploymentConfigError(str(exc)) from exc
    return run["retention_minutes"], run["forecast_hours"]


def schedules_running_by_default(env: Mapping[str, str] | None = None) -> bool:
    """``OFFSETOPS_SCHEDULES=running|stopped``; by default running on ``cluster``, stopped locally."""
    env = os.environ if env is None else env
    raw = (env.get(ENV_SCHEDULES) or "").strip().lower()
    if raw:
        if raw not in ("running", "stopped"):
            raise DeploymentConfigError(f"{ENV_SCHEDULES}={raw!r}: expected running or stopped")
        return raw == "running"
    return deployment_name(env) == "cluster"


SCHEDULE_STATUS = (
    DefaultScheduleStatus.RUNNING if schedules_running_by_default() else DefaultScheduleStatus.STOPPED
)
"""Whether the schedules start running when the code location is first loaded."""
