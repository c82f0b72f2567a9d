"""The jobs' arguments, as ``spark-submit`` and ``offsetops pipeline`` parse them (no Spark needed)."""

from __future__ import annotations

import argparse

import pytest
from offsetops.pipelines.cli_args import JOB_ARGUMENTS

from offsetops.cli import main as offsetops_main


def _parser(job: str) -> tuple[argparse.ArgumentParser, list[str]]:
    p = argparse.ArgumentParser(prog=f"{job}.py")
    JOB_ARGUMENTS[job](p)
    required = ["--output", "out"] + ([] if job == "live" else ["--input", "in"])
    return p, required


@pytest.mark.parametrize("job", sorted(JOB_ARGUMENTS))
def test_every_job_takes_partition_numbers_and_refuses_a_negative_one(
    job: str, capsys: pytest.CaptureFixture[str]
) -> None:
    p, required = _parser(job)
    assert p.parse_args([*required, "--partition", "0", "--partition", "49"]).partition == [0, 49]
    with pytest.raises(SystemExit) as exit_:
        p.parse_args([*required, "--partition", "-1"])
    assert exit_.value.code == 2
    assert "argument --partition: must not be negative, got -1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        p.parse_args([*required, "--partitions-per-task", "0"])
    assert "must be at least 1, got 0" in capsys.readouterr().err


def test_the_cli_refuses_a_negative_partition_before_starting_spark(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        offsetops_main(["pipeline", "reload", "--input", "in", "--output", "out", "--partition", "-3"])
    assert exit_.value.code == 2
    assert "must not be negative, got -3" in capsys.readouterr().err
