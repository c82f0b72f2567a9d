from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.shared import REAL_KAFKA_DIR, require_real_kafka
from tests.support.slack_server import slack_server_fixture as slack_server_fixture

# The Tansu Kafka-protocol broker on loopback (session-scoped ``kafka_broker`` fixture).
pytest_plugins = ["tests.support.broker", "tests.support.tls"]


@pytest.fixture(scope="session")
def real_kafka_dir() -> Path:
    """The real broker log dirs; the test is skipped cleanly when ``../shared`` is absent."""
    return require_real_kafka()


@pytest.fixture(scope="session")
def real_kafka_available() -> bool:
    return REAL_KAFKA_DIR.is_dir()
