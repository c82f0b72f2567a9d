"""``spark``: one SparkSession per run process, started in the background when the run starts."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr, field_validator

if TYPE_CHECKING:
    from offsetops.pipelines.session import SessionStart
    from pyspark.sql import SparkSession

_MASTER_RE = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://.+|k8s://.+|yarn|mesos://.+)$")


class SparkResource(ConfigurableResource):
    """One SparkSession per run process (``getOrCreate``): ``local[*]`` here, a cluster master in prod."""

    master: str = Field(
        default="local[*]", description="local[*], spark://host:7077, k8s://https://..., yarn"
    )
    app_name: str = Field(default="offsetops", min_length=1)
    conf: dict[str, str] = Field(default_factory=dict, description="Extra spark.* settings.")
    start_early: bool = Field(
        default=True,
        description="Start the session on a thread of its own when a run that needs it starts, so the JVM "
        "starts while the first steps do work without Spark.",
    )

    _start: SessionStart | None = PrivateAttr(default=None)

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

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Dagster initialises this resource only for runs with a step that uses it: start the session."""
        from offsetops.pipelines.session import SessionStart

        if self.start_early:
            self._start = SessionStart(self._build)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        """No thread outlives the run; a failed start no step waited for is only logged."""
        if self._start is not None:
            error = self._start.join()
            if error is not None:
                import logging

                log = context.log if context.log is not None else logging.getLogger(__name__)
                log.warning(f"the Spark session started early failed, and no step needed it: {error}")

    def get_session(self) -> SparkSession:
        """The process's SparkSession, created on first use with this resource's settings.

        Built by :func:`offsetops.pipelines.session.build_session`, which ships our packages to the executors
        of a non-local master. A session started early is waited for (its error raised here, in the step
        that needs it), then taken with the same settings by the calling thread (``getOrCreate``).
        """
        if self._start is not None:
            self._start.wait()
        return self._build()

    def _build(self) -> SparkSession:
        from offsetops.pipelines.session import build_session

        local = self.master.startswith("local")
        conf = {"spark.sql.sources.partitionOverwriteMode": "dynamic"}
        if local:
            conf.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        session = build_session(self.master, app_name=self.app_name, conf={**conf, **self.conf}, quiet=local)
        if not local:
            session.sparkContext.setLogLevel("WARN")
        return session
