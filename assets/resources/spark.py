"""``spark``: one SparkSession per run process."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dagster import ConfigurableResource
from pydantic import Field, field_validator

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_MASTER_RE = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://.+|k8s://.+|yarn|mesos://.+)$")


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
