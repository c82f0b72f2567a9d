"""The Dagster settings the deployment gives every run process, in one place: the image's ``ENV``.

``DAGSTER_EVENT_BATCH_SIZE`` is on (a step's per-partition materializations in one write; what it does to
the main job's check evaluations on Postgres: ``test_dagster_postgres.py``), and
``DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS`` is off: with it, the partitions of a failed run do not
show as failed (``test_planned_events.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.conftest import REPO, image_dagster_env, image_env

BATCHED = "DAGSTER_EVENT_BATCH_SIZE"
PLANNED_SUBSET = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"
#: Kafka's default offsets.topic.num.partitions: one run's step materializes that many partitions
OFFSETS_PARTITIONS = 50
#: the deployment's other configuration files (none of them may set a Dagster variable of its own)
DEPLOY_CONFIG = (
    "deploy/dagster.yaml",
    "deploy/helm/values.yaml",
    "deploy/helm/offsetops-dagster/values.yaml",
)


def test_the_image_batches_a_steps_materializations() -> None:
    value = image_env().get(BATCHED)
    assert value is not None and value.isdigit(), f"deploy/Dockerfile: ENV {BATCHED}={value!r}"
    # at least a step's partitions, so each step's materializations are one write
    assert int(value) >= OFFSETS_PARTITIONS


def test_the_image_leaves_partition_subset_planned_events_off() -> None:
    assert PLANNED_SUBSET not in image_env()


def test_the_image_env_is_the_only_place_that_sets_them() -> None:
    assert set(image_dagster_env()) == {BATCHED}
    for path in DEPLOY_CONFIG:
        text = (REPO / path).read_text(encoding="utf-8")
        assert BATCHED not in text and PLANNED_SUBSET not in text, path


@pytest.mark.parametrize("line", ["ENV A=1 \\\n    B=two\n", "ENV A=1 B=two\n"])
def test_image_env_reads_continued_and_single_line_env(
    tmp_path: Path, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tests.deploy.conftest as conftest

    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "Dockerfile").write_text("FROM x\n" + line + "RUN true\n", encoding="utf-8")
    monkeypatch.setattr(conftest, "REPO", tmp_path)
    assert conftest.image_env() == {"A": "1", "B": "two"}
