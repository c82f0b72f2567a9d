"""Resources of the offsetops code location, one module per resource, and the deployments.

Each resource is a pydantic-validated :class:`dagster.ConfigurableResource`, so a bad value fails when
the code location loads (or, for run-config overrides, when the run starts) with a message that names
the field. Which resources a deployment gets is decided in :mod:`offsetops.assets.resources.deployment`.
"""

from offsetops.assets.resources.deployment import (
    DEFAULT_FORECAST_HOURS,
    DEPLOYMENTS,
    ENV_FORECAST_HOURS,
    ENV_NUM_PARTITIONS,
    ENV_OUTPUT_DIR,
    ENV_RESUME_STATE_DIR,
    ENV_RETENTION_MINUTES,
    SCHEDULE_STATUS,
    DeploymentConfigError,
    build_resources,
    expiration_defaults_from_env,
    num_partitions_from_env,
)
from offsetops.assets.resources.slack import SlackResource
from offsetops.assets.resources.source import ENV_LOG_DIR, OffsetsSourceResource
from offsetops.assets.resources.spark import SparkResource
from offsetops.assets.resources.state import StateResource

__all__ = [
    "DEFAULT_FORECAST_HOURS",
    "DEPLOYMENTS",
    "ENV_FORECAST_HOURS",
    "ENV_LOG_DIR",
    "ENV_NUM_PARTITIONS",
    "ENV_OUTPUT_DIR",
    "ENV_RESUME_STATE_DIR",
    "ENV_RETENTION_MINUTES",
    "SCHEDULE_STATUS",
    "DeploymentConfigError",
    "OffsetsSourceResource",
    "SlackResource",
    "SparkResource",
    "StateResource",
    "build_resources",
    "expiration_defaults_from_env",
    "num_partitions_from_env",
]
