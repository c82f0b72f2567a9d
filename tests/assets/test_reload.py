"""The reload's summary and per-partition facts count decode errors as problems, not table rows."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from offsetops.assets.reload import _per_partition, _summarise
from offsetops.coordinator_core.errors import count_errors

from tests.support.error_storm import error_storm_cache


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.skip("no Java runtime: Spark tests need one")
    from offsetops.pipelines.session import build_session

    yield build_session("local[1]", app_name="offsetops-tests", quiet=True, ship_code=False)


def test_an_error_summary_counts_as_the_problems_it_stands_for(spark) -> None:
    """Six repeats summarised in one row, one example and a notice: seven errors, as count_errors says."""
    from offsetops.pipelines.schemas import TABLE_SCHEMAS
    from offsetops.pipelines.tables import all_cache_rows

    cache = error_storm_cache(4)
    rows = all_cache_rows([cache])
    tables = {t: spark.createDataFrame(rows[t], schema) for t, schema in TABLE_SCHEMAS.items()}
    assert _per_partition(tables)[4]["errors"] == count_errors(cache.stats.errors) == 7
    summary = _summarise(tables)
    assert summary["counts"]["decode_errors"] == 7
    assert summary["error_kinds"] == {"corrupt_record": 7, "zero_tail": 1}
