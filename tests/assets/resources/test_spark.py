"""SparkResource: the session starts when a run that needs it starts, one per process, no thread left."""

from __future__ import annotations

import threading

import pytest
from dagster import build_resources
from offsetops.assets.resources import SparkResource
from offsetops.pipelines.session import SessionStart

from tests.assets.conftest import java_available

pytestmark = pytest.mark.spark


def _starting() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == SessionStart.THREAD_NAME]


@pytest.mark.skipif(not java_available(), reason="Java is needed for a local SparkSession")
def test_session_started_early_is_the_process_session() -> None:
    with build_resources(
        {"spark": SparkResource(master="local[1]", app_name="offsetops-early")}
    ) as resources:
        resource = resources.spark
        assert resource._start is not None  # started by the run's resource initialisation
        session = resource.get_session()
        assert session is resource._start.wait()  # the one session of the process (getOrCreate)
        assert session.range(3).count() == 3
        assert session.conf.get("spark.sql.sources.partitionOverwriteMode") == "dynamic"
    assert _starting() == []


def test_start_early_off_starts_nothing() -> None:
    with build_resources({"spark": SparkResource(master="local[1]", start_early=False)}) as resources:
        assert resources.spark._start is None
        assert _starting() == []
