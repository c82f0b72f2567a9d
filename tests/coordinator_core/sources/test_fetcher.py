"""How ``LiveSource`` handles the Fetch answers a real broker gives only now and then, against a stand-in
broker on loopback (``tests/support/stand_in_broker.py``) that scripts them: empty below the high
watermark (a leader moving, or a broker out of time), throttled (KIP-219), a batch cut at ``max_bytes``
(before KIP-74), and batches sent twice. Each answer is checked by what the client asked next."""

from __future__ import annotations

import itertools
import time

import pytest
from offsetops.coordinator_core.kafka_client import KafkaClientConfig
from offsetops.coordinator_core.records import ZSTD, build_record_batch
from offsetops.coordinator_core.sources.backoff import ExponentialBackoff, RetryDeadline
from offsetops.coordinator_core.sources.live import FetchRange, LiveSource, LiveSourceError

from tests.support.stand_in_broker import FetchAnswer, FetchCall, OffsetLookup, stand_in_broker

TOPIC = "stand-in-offsets"


def _batch(base: int, n: int, *, compression: int = 0, size: int = 10) -> bytes:
    records = [(b"k%d" % i, b"v" * size, 1_700_000_000_000 + i) for i in range(n)]
    return build_record_batch(records, base_offset=base, compression=compression)


LOG = [_batch(0, 5), _batch(5, 20, compression=ZSTD), _batch(25, 3)]
END = 28


def _from(offset: int, log: list[bytes] = LOG) -> bytes:
    """A Kafka broker's answer: the batches from the one holding ``offset`` on."""
    bases = [0, 5, 25]
    first = max(i for i, b in enumerate(bases) if b <= offset)
    return b"".join(log[first:])


def _config(bootstrap: str, **kw) -> KafkaClientConfig:
    settings = {"connect_timeout_ms": 3000, "request_timeout_ms": 3000, "retry_backoff_ms": 20}
    return KafkaClientConfig(bootstrap, **{**settings, **kw})


def _gaps(calls: list) -> list[float]:
    """Seconds between successive requests."""
    return [b.at - a.at for a, b in itertools.pairwise(calls)]


def _read(bootstrap: str, start: int = 0, end: int = END, **kw) -> list[tuple[int, int]]:
    with LiveSource(_config(bootstrap, **kw), topic=TOPIC) as source:
        return [
            (b.base_offset, b.last_offset)
            for b in source.iter_batches(0, [], start_offset=start, end_offset=end)
        ]


def test_an_empty_answer_below_the_high_watermark_is_fetched_again_after_a_back_off() -> None:
    empties = 2

    def answer(call: FetchCall) -> FetchAnswer:
        nonlocal empties
        if empties:
            empties -= 1
            return FetchAnswer(b"", END)
        return FetchAnswer(_from(call.offset), END)

    with stand_in_broker(TOPIC, answer) as broker:
        assert _read(broker.bootstrap, retry_backoff_ms=100, retry_backoff_max_ms=400) == [
            (0, 4),
            (5, 24),
            (25, 27),
        ]
    offsets = [f.offset for f in broker.fetches]
    assert offsets == [0, 0, 0]
    # Back-off doubles (100 then 200 ms, +/- 20 % jitter) before each retry.
    gaps = _gaps(broker.fetches)
    assert gaps[0] >= 0.08 and gaps[1] >= 0.16


def test_an_answer_that_stays_empty_fails_within_the_request_timeout_naming_the_partition() -> None:
    with stand_in_broker(TOPIC, lambda call: FetchAnswer(b"", END)) as broker:
        started = time.monotonic()
        with pytest.raises(LiveSourceError) as caught:
            _read(broker.bootstrap, request_timeout_ms=1200, retry_backoff_ms=50, retry_backoff_max_ms=200)
        took = time.monotonic() - started
    message = str(caught.value)
    assert f"Fetch {TOPIC}-0 at 0" in message and "returned no data below the high watermark 28" in message
    assert "retried" in message and len(broker.fetches) > 3
    assert took < 1.2 + 3  # the request timeout, plus the connection set-up


def test_a_throttled_answer_holds_the_next_request_for_throttle_time_ms() -> None:
    def answer(call: FetchCall) -> FetchAnswer:
        # One batch per answer, the first one throttled for 400 ms.
        data = {0: LOG[0], 5: LOG[1], 25: LOG[2]}[call.offset]
        return FetchAnswer(data, END, throttle_time_ms=400 if call.offset == 0 else 0)

    with stand_in_broker(TOPIC, answer) as broker:
        assert _read(broker.bootstrap) == [(0, 4), (5, 24), (25, 27)]
    first, second = broker.fetches[0], broker.fetches[1]
    assert second.offset == 5 and second.at - first.at >= 0.38


def test_a_batch_cut_at_max_bytes_is_asked_for_again_with_a_larger_size() -> None:
    """A broker before KIP-74 cuts the record set at max_bytes, even inside the first batch."""
    big = [_batch(0, 200, size=100)]  # about 22 KB, no compression

    def answer(call: FetchCall) -> FetchAnswer:
        return FetchAnswer(big[0][: call.max_bytes], 200)

    with stand_in_broker(TOPIC, answer) as broker:
        assert _read(broker.bootstrap, end=200, fetch_max_bytes=4096) == [(0, 199)]
    assert [f.max_bytes for f in broker.fetches] == [4096, 8192, 16384, 32768]


def test_a_batch_larger_than_the_largest_fetch_size_is_an_error_not_a_loop() -> None:
    # However large the fetch size, the answer holds only the start of the batch.
    cut = stand_in_broker(TOPIC, lambda call: FetchAnswer(LOG[1][:30], END))
    with cut as broker, pytest.raises(LiveSourceError, match="a batch exceeds 67108864 bytes"):
        _read(broker.bootstrap, start=5)
    assert broker.fetches[-1].max_bytes == 64 << 20


def test_a_batch_sent_twice_and_a_start_inside_a_batch_read_each_record_once() -> None:
    """Tansu repeats a compacted batch in one answer (docs/test-broker.md); a range starting at 7 gets
    the batch holding 7 (5..24) from any broker, and owns only the batches based at or after 7."""

    def answer(call: FetchCall) -> FetchAnswer:
        return FetchAnswer(_from(call.offset) + LOG[2] + LOG[2], END)

    with stand_in_broker(TOPIC, answer) as broker:
        assert _read(broker.bootstrap) == [(0, 4), (5, 24), (25, 27)]
        with LiveSource(_config(broker.bootstrap), topic=TOPIC) as source:
            owned = [b.base_offset for b in source.iter_range(FetchRange(0, 7, END, first=False), [])]
            assert [b.base_offset for b in source.iter_batches(0, [], start_offset=7, end_offset=END)] == [
                5,
                25,
            ]
    assert owned == [25]


def test_the_configured_fetch_max_wait_is_sent() -> None:
    with stand_in_broker(TOPIC, lambda call: FetchAnswer(_from(call.offset), END)) as broker:
        _read(broker.bootstrap, fetch_max_wait_ms=1234)
    assert {f.max_wait_ms for f in broker.fetches} == {1234}


def test_exponential_backoff_and_the_retry_deadline() -> None:
    backoff = ExponentialBackoff(100, 1000, jitter=0.2)
    assert [backoff.backoff_ms(n, rand=lambda: 0.5) for n in range(6)] == [100, 200, 400, 800, 1000, 1000]
    assert backoff.backoff_ms(0, rand=lambda: 0.0) == pytest.approx(80)
    assert backoff.backoff_ms(0, rand=lambda: 1.0) == pytest.approx(120)
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    retry = RetryDeadline(ExponentialBackoff(100, 1000, jitter=0), 1000, clock=lambda: now[0], sleep=sleep)
    assert retry.wait() and retry.wait() and retry.wait()  # 100 + 200 + 400 ms
    assert not retry.wait()  # 800 more would end at 1500 ms, past the 1000 ms deadline
    assert slept == [0.1, 0.2, 0.4] and retry.attempts == 3
    retry.progress()
    assert retry.wait(at_least_ms=500) and slept[-1] == 0.5  # a throttle longer than the back-off wins


def test_list_offsets_is_asked_again_after_a_back_off_while_the_leader_moves() -> None:
    not_leader = 2

    def offsets(lookup: OffsetLookup) -> tuple[int, int]:
        nonlocal not_leader
        if not_leader:
            not_leader -= 1
            return 6, -1  # NOT_LEADER_OR_FOLLOWER
        return 0, END

    with stand_in_broker(TOPIC, lambda call: FetchAnswer(), offsets_answer=offsets) as broker:
        cfg = _config(broker.bootstrap, retry_backoff_ms=100, retry_backoff_max_ms=400)
        with LiveSource(cfg, topic=TOPIC) as source:
            assert source.end_offsets([0]) == {0: END}
    lookups = broker.offset_lookups
    assert len(lookups) == 3
    # Back-off doubles (100 then 200 ms, +/- 20 % jitter) before each retry.
    gaps = _gaps(lookups)
    assert gaps[0] >= 0.08 and gaps[1] >= 0.16


def test_list_offsets_that_keeps_failing_ends_within_the_request_timeout_naming_the_partition() -> None:
    with stand_in_broker(TOPIC, lambda call: FetchAnswer(), offsets_answer=lambda lookup: (6, -1)) as broker:
        cfg = _config(
            broker.bootstrap, request_timeout_ms=1000, retry_backoff_ms=100, retry_backoff_max_ms=400
        )
        with LiveSource(cfg, topic=TOPIC) as source:
            started = time.monotonic()
            with pytest.raises(LiveSourceError) as caught:
                source.end_offsets([0])
            took = time.monotonic() - started
    message = str(caught.value)
    assert f"{TOPIC}-0: NOT_LEADER_OR_FOLLOWER" in message and "kept failing" in message
    assert 2 <= len(broker.offset_lookups) <= 6  # at most MAX_RETRIES retries
    assert took < 1.0 + 0.5
