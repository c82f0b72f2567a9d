"""Fixtures for the expiration tests: the shared Tansu broker and a hand-built scenario log dir."""

from __future__ import annotations

from tests.support.broker import kafka_broker

__all__ = ["kafka_broker"]
