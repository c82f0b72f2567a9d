"""Realistic ``__consumer_offsets`` log dirs with a ground-truth file (``offsetops simulate``).

A seeded model of consumer groups drives a model of the group coordinator, which appends the records
a broker of the chosen Kafka version would write and keeps the cache that broker would hold; that
cache, not a reload, becomes ``truth.json``.
"""

from offsetops.coordinator_core.simulator.engine import (
    DEFAULT_SEGMENT_BYTES,
    TRUTH_FILE,
    SimulationConfig,
    SimulationResult,
    simulate,
)
from offsetops.coordinator_core.simulator.log import SimulatorError
from offsetops.coordinator_core.simulator.profile import BrokerProfile, broker_profile
from offsetops.coordinator_core.simulator.truth import diff_truth, load_truth, normalize_groups

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "TRUTH_FILE",
    "BrokerProfile",
    "SimulationConfig",
    "SimulationResult",
    "SimulatorError",
    "broker_profile",
    "diff_truth",
    "load_truth",
    "normalize_groups",
    "simulate",
]
