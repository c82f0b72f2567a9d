"""spark-submit runs a job's file directly, so its folder comes first on sys.path: no module there may
share a name with a standard-library module, or the job (and pandas, numpy, Spark) imports ours instead."""

from __future__ import annotations

import sys
from pathlib import Path

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def test_no_pipelines_module_shadows_the_standard_library() -> None:
    ours = {p.stem for p in PIPELINES.glob("*.py")} | {p.name for p in PIPELINES.iterdir() if p.is_dir()}
    shadowing = sorted(ours & set(sys.stdlib_module_names))
    assert not shadowing, f"rename these pipelines/ modules, they shadow the standard library: {shadowing}"
