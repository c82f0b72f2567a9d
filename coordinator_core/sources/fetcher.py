"""Reading one partition by Fetch as ``KafkaConsumer``'s fetcher does (``Fetcher``, ``CompletedFetch``).

``LiveSource`` speaks the protocol (Metadata, ListOffsets, Fetch); this module decides what to do with
each Fetch answer: which batches to hand on, where to fetch next, when to retry, grow the fetch size,
or stop.
"""

from __future__ import annotations

import struct
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING

from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.kafka_client import KafkaClientError
from offsetops.coordinator_core.records.batch import RecordBatch
from offsetops.coordinator_core.records.reader import ErrorSink, read_batches
from offsetops.coordinator_core.sources.backoff import ExponentialBackoff, RetryDeadline

if TYPE_CHECKING:
    from offsetops.coordinator_core.sources.live import LiveSource

__all__ = [
    "MAX_PARTITION_FETCH_BYTES",
    "MAX_RETRIES",
    "RETRIABLE",
    "LiveSourceError",
    "PartitionFetch",
    "complete_prefix",
]

# Per-partition errors that mean "your metadata is stale": refresh leaders and retry.
RETRIABLE = {
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    56: "KAFKA_STORAGE_ERROR",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
}
_OFFSET_OUT_OF_RANGE = 1
MAX_RETRIES = 5
MAX_PARTITION_FETCH_BYTES = 64 << 20

_LOG_OVERHEAD = 12  # baseOffset int64 + length int32
_V2_LAST_OFFSET_DELTA_AT = 23
_V2_MIN_SIZE = 61 - _LOG_OVERHEAD
_LEGACY_MIN_SIZE = 14  # crc + magic + attributes + key length + value length (magic 0)


class LiveSourceError(KafkaClientError):
    """The cluster could not be reached, refused us, or answered something we cannot go on from."""


def complete_prefix(buf: bytes | memoryview) -> tuple[int, int | None, bool]:
    """Split a Fetch record set at its last complete batch.

    A Fetch response stops at ``max_bytes`` and may end inside a batch; that is how Fetch works
    (``FetchResponse`` / ``FileRecords.slice``), not corruption. Returns ``(length, next_offset,
    framed)``: the bytes of whole batches, the offset after the last whole batch (``None`` if there
    is none), and whether the framing was sane all the way (``False``: a length below the minimum for
    its magic, which ``read_batches`` will report; reading cannot go past it).
    """
    n = len(buf)
    pos = 0
    next_offset: int | None = None
    while pos + _LOG_OVERHEAD <= n:
        base, size = struct.unpack_from(">qi", buf, pos)
        if pos + 17 > n:
            break
        magic = buf[pos + 16]
        if size < (_V2_MIN_SIZE if magic == 2 else _LEGACY_MIN_SIZE):
            return n, next_offset, False
        if pos + _LOG_OVERHEAD + size > n:
            break
        if magic == 2:
            (delta,) = struct.unpack_from(">i", buf, pos + _V2_LAST_OFFSET_DELTA_AT)
            next_offset = base + max(delta, 0) + 1
        else:
            # A legacy entry's offset is its own (or, for a compressed wrapper, its last inner) offset.
            next_offset = base + 1
        pos += _LOG_OVERHEAD + size
    return pos, next_offset, True


class PartitionFetch:
    """One partition read by Fetch from ``start`` to ``end``, as ``KafkaConsumer``'s fetcher does.

    The position only moves forward: a batch that ends below it (the batch holding a fetch offset,
    or one a broker sent twice) is skipped, as ``CompletedFetch`` skips records below the fetch
    position. An empty answer below the high watermark, and a stale leader, are retried after an
    exponential back-off (``retry.backoff.ms`` to ``retry.backoff.max.ms``, at least the broker's
    ``throttle_time_ms``) until ``request.timeout.ms`` passes without progress.
    """

    def __init__(
        self, source: LiveSource, partition: int, errors: ErrorSink, start: int, end: int, verify_crc: bool
    ):
        config = source.config
        self.source = source
        self.partition = partition
        self.errors = errors
        self.report = errors.append if isinstance(errors, list) else errors
        self.end = end
        self.verify_crc = verify_crc
        self.position = start
        self.max_bytes = config.fetch_max_bytes
        self.retry = RetryDeadline(
            ExponentialBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms),
            config.request_timeout_ms,
        )

    @property
    def _tp(self) -> str:
        return f"{self.source.topic}-{self.partition}"

    def _where(self) -> str:
        return self.source._where()

    def batches(self) -> Iterator[RecordBatch]:
        leader = self.source._leader(self.partition)
        while self.position < self.end:
            offset = self.position
            pd = self.source._fetch(self.partition, offset, self.max_bytes, leader)
            if pd.error_code in RETRIABLE:
                self._back_off(f"kept failing: {RETRIABLE[pd.error_code]}")
                leader = self.source._leader(self.partition, refresh=True)
                continue
            if pd.error_code == _OFFSET_OUT_OF_RANGE:
                self._skip_deleted(offset)
                continue
            if pd.error_code != 0:
                raise LiveSourceError(
                    f"Fetch {self._tp} at {offset} on {self._where()} failed with error {pd.error_code}"
                )
            records = pd.records or b""
            if not records:
                if pd.high_watermark <= offset:
                    self._report_truncation(offset, pd.high_watermark)
                    return
                # Nothing below the high watermark: the leader may be moving, or the broker ran out
                # of time to gather data (fetch.max.wait.ms). A consumer fetches again.
                self._back_off(f"returned no data below the high watermark {pd.high_watermark}")
                leader = self.source._leader(self.partition, refresh=True)
                continue
            length, next_offset, framed = complete_prefix(records)
            if length == 0:
                self._grow(offset)
                continue
            done = yield from self._decode(memoryview(records)[:length], offset)
            if done or not framed:
                return  # at the end; or read_batches reported a broken length nothing after can pass
            if next_offset is not None:
                self.position = max(self.position, next_offset)
            if self.position <= offset:
                raise LiveSourceError(f"{self._tp}: fetch at {offset} on {self._where()} made no progress")
            self.retry.progress()

    def _decode(self, records: memoryview, offset: int) -> Generator[RecordBatch, None, bool]:
        """Yield the response's batches at or past the position; ``True`` once past the end."""
        for batch in read_batches(
            records,
            file=f"{self._tp} fetch@{offset}",
            partition=self.partition,
            errors=self.errors,
            verify_crc=self.verify_crc,
            max_batch_bytes=self.source.max_batch_bytes,
        ):
            # Fetch answers with the whole batch holding `offset`: its earlier records were read
            # with the batch before, or precede the start. A batch sent again is read once.
            if batch.last_offset < self.position:
                continue
            if batch.base_offset >= self.end:
                return True
            yield batch
            self.position = batch.last_offset + 1
        return False

    def _back_off(self, what: str) -> None:
        if not self.retry.wait():
            raise LiveSourceError(
                f"Fetch {self._tp} at {self.position} on {self._where()} {what} "
                f"(retried {self.retry.attempts} times over {self.retry.waited_s:.1f} s)"
            )

    def _grow(self, offset: int) -> None:
        """One batch bigger than max_bytes and a broker that does not return it whole (pre-KIP-74)."""
        if self.max_bytes >= MAX_PARTITION_FETCH_BYTES:
            raise LiveSourceError(
                f"{self._tp} at {offset}: a batch exceeds {MAX_PARTITION_FETCH_BYTES} bytes"
            )
        self.max_bytes = min(self.max_bytes * 2, MAX_PARTITION_FETCH_BYTES)

    def _skip_deleted(self, offset: int) -> None:
        """Retention or DeleteRecords moved the log start past us while we read."""
        log_start = self.source.start_offsets([self.partition])[self.partition]
        if log_start <= offset:
            raise LiveSourceError(
                f"{self._tp}: offset {offset} out of range on {self._where()} "
                f"(log start {log_start}, end {self.end})"
            )
        self.report(
            DecodeError(
                "io",
                f"log start moved to {log_start} during the read; offsets {offset}.."
                f"{log_start - 1} were deleted by the broker",
                self._tp,
                self.partition,
                None,
                offset,
            )
        )
        self.position = log_start

    def _report_truncation(self, offset: int, high_watermark: int) -> None:
        """The high watermark went down (an unclean leader change truncated the log): read to the new end."""
        self.report(
            DecodeError(
                "truncated",
                f"high watermark fell to {high_watermark} below the end {self.end} seen at the start "
                "of the read",
                self._tp,
                self.partition,
                None,
                offset,
            )
        )
