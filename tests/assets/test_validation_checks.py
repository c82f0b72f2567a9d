"""cache_validation emits its GX checks itself: when it fails first, they are not executed, never passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterInstance, build_run_status_sensor_context, materialize
from offsetops.assets.alerting.sensors import slack_on_run_failure
from offsetops.assets.resources import OffsetsSourceResource, SlackResource, SparkResource, StateResource
from offsetops.assets.validation import cache_validation
from offsetops.checks.dagster_checks import GX_CHECKS, VALIDATION_ASSET

from tests.support.slack_server import SlackTestServer
from tests.support.slack_server import slack_server_fixture as slack_server_fixture


def test_a_validation_that_fails_before_its_results_leaves_its_checks_unexecuted_and_pages(
    slack_server: SlackTestServer, tmp_path: Path
) -> None:
    # The state dir is a file: the asset fails at its first step, before Spark and before any result.
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    state = StateResource(output_dir=str(blocked))
    slack = SlackResource(token="xoxb-test-token", channel="#oncall", base_url=slack_server.base_url)
    resources = {
        "offsets_source": OffsetsSourceResource(log_dir=str(tmp_path)),
        "spark": SparkResource(master="local[1]"),
        "state": state,
    }
    with DagsterInstance.ephemeral() as instance:
        result = materialize(
            [cache_validation],
            resources=resources,
            instance=instance,
            partition_key="0",
            raise_on_error=False,
        )
        assert not result.success
        assert result.get_asset_check_evaluations() == []
        for name in GX_CHECKS.values():
            history = instance.event_log_storage.get_asset_check_execution_history(
                AssetCheckKey(AssetKey(VALIDATION_ASSET), name), limit=1
            )
            # Planned by the run and never evaluated: Dagster shows it as not executed, not as passed.
            assert [h.status.value for h in history] == ["PLANNED"], name
        context = build_run_status_sensor_context(
            sensor_name="slack_on_run_failure",
            dagster_instance=instance,
            dagster_run=result.dagster_run,
            dagster_event=result.get_run_failure_event(),
            resources={"slack": slack, "state": StateResource(output_dir=str(tmp_path / "alerts"))},
        ).for_run_failure()
        slack_on_run_failure(context)
    posts = slack_server.requests_to("chat.postMessage")
    assert len(posts) == 1
    assert "cache_validation" in json.dumps(posts[0].blocks)


def test_suite_threads_is_checked_and_defaults_to_the_suites() -> None:
    from offsetops.assets.validation import ValidationConfig
    from offsetops.checks.suite import SUITE_THREADS
    from pydantic import ValidationError

    assert ValidationConfig().suite_threads == SUITE_THREADS
    assert ValidationConfig(suite_threads=1).suite_threads == 1
    for bad in (0, -1, 17):
        with pytest.raises(ValidationError, match="suite_threads"):
            ValidationConfig(suite_threads=bad)
