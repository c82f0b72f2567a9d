"""Retrying a request within a deadline, with exponential back-off (Kafka's ``ExponentialBackoff``, KIP-580).

Pure (no Kafka client), so the arithmetic is checked without a broker; ``sources/live.py`` retries its
Fetch requests with it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ExponentialBackoff", "RetryDeadline"]


@dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    """``initial_ms * multiplier ** attempts``, capped at ``max_ms``, spread by +/- ``jitter``
    (``org.apache.kafka.common.utils.ExponentialBackoff``: retry.backoff.ms, retry.backoff.max.ms)."""

    initial_ms: int
    max_ms: int
    multiplier: float = 2.0
    jitter: float = 0.2

    def backoff_ms(self, attempts: int, rand: Callable[[], float] = random.random) -> float:
        """The wait before retry number ``attempts + 1`` (``attempts`` made so far, from 0)."""
        if self.initial_ms >= self.max_ms:
            term = float(self.max_ms)
        else:
            term = min(self.initial_ms * self.multiplier ** max(attempts, 0), float(self.max_ms))
        spread = 1.0 + self.jitter * (2.0 * rand() - 1.0) if self.jitter else 1.0
        return term * spread


class RetryDeadline:
    """Retries of one operation, each after a back-off, until ``timeout_ms`` pass without progress.

    ``wait`` sleeps the next back-off (at least ``at_least_ms``, a broker's ``throttle_time_ms``) and
    says whether a retry still fits before the deadline; ``progress`` starts the count again.
    """

    def __init__(
        self,
        backoff: ExponentialBackoff,
        timeout_ms: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ):
        self.backoff = backoff
        self.timeout_ms = timeout_ms
        self._clock = clock
        self._sleep = sleep
        self.attempts = 0
        self._started = clock()

    def progress(self) -> None:
        """The operation moved on: the next failure starts a fresh deadline."""
        self.attempts = 0
        self._started = self._clock()

    @property
    def waited_s(self) -> float:
        """Seconds since the last progress (or the start)."""
        return self._clock() - self._started

    def wait(self, at_least_ms: float = 0) -> bool:
        """Sleep before the next retry; ``False`` (without sleeping) once it would end past the deadline."""
        delay_ms = max(self.backoff.backoff_ms(self.attempts), at_least_ms)
        if (self._clock() - self._started) * 1000 + delay_ms > self.timeout_ms:
            return False
        self._sleep(delay_ms / 1000)
        self.attempts += 1
        return True
