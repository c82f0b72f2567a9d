"""Where the shared fixtures live (``../shared`` next to the repo, or ``$OFFSETOPS_SHARED``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DIR = Path(os.environ.get("OFFSETOPS_SHARED", REPO_ROOT.parent / "shared"))
REAL_KAFKA_DIR = SHARED_DIR / "fixtures" / "real-kafka"
PEER_VECTORS = SHARED_DIR / "fixtures" / "peer-vectors" / "burrow.json"


def real_kafka_logdirs() -> list[Path]:
    """Every real broker log dir under ``shared/fixtures/real-kafka`` (empty when absent)."""
    if not REAL_KAFKA_DIR.is_dir():
        return []
    return sorted(p for p in REAL_KAFKA_DIR.iterdir() if p.is_dir())


def require_real_kafka() -> Path:
    if not REAL_KAFKA_DIR.is_dir():
        pytest.skip(f"real Kafka fixtures not found at {REAL_KAFKA_DIR}")
    return REAL_KAFKA_DIR


def require_peer_vectors() -> Path:
    if not PEER_VECTORS.is_file():
        pytest.skip(f"peer vectors not found at {PEER_VECTORS}")
    return PEER_VECTORS
