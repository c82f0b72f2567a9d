"""offsetops: the command line and glue for the coordinator core, the Spark pipeline and Dagster."""

from offsetops.coordinator_core import __version__

__all__ = ["__version__"]
