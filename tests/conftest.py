from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.shared import REAL_KAFKA_DIR, require_real_kafka


@pytest.fixture(scope="session")
def real_kafka_dir() -> Path:
    """The real broker log dirs; the test is skipped cleanly when ``../shared`` is absent."""
    return require_real_kafka()


@pytest.fixture(scope="session")
def real_kafka_available() -> bool:
    return REAL_KAFKA_DIR.is_dir()
