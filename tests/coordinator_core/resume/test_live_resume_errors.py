"""A live read whose last batch is corrupt keeps its error once across resumed runs: the position stays
before the batch, the next run fetches it again and reports it again, so the saved state must not
carry it too. Against the stand-in broker (``tests/support/stand_in_broker.py``), which serves bytes a
real broker would refuse to store (a batch whose CRC does not match)."""

from __future__ import annotations

from pathlib import Path

from offsetops.coordinator_core.kafka_client import KafkaClientConfig
from offsetops.coordinator_core.sources.source import Source

from tests.coordinator_core.resume.logs import History, view
from tests.support.stand_in_broker import FetchAnswer, FetchCall, OffsetLookup, stand_in_broker

TOPIC = "stand-in-offsets"


def _corrupt_crc(data: bytes) -> bytes:
    out = bytearray(data)
    out[-1] ^= 0xFF  # the last record's last byte: the batch CRC no longer matches
    return bytes(out)


def _serve(history: History, corrupt_last: bool):
    batches = [b.data for b in history.batches]
    if corrupt_last:
        batches[-1] = _corrupt_crc(batches[-1])
    end = history.batches[-1].last + 1

    def fetch(call: FetchCall) -> FetchAnswer:
        first = max(i for i, b in enumerate(history.batches) if b.base <= call.offset)
        return FetchAnswer(b"".join(batches[first:]), end)

    def offsets(lookup: OffsetLookup) -> tuple[int, int]:
        return 0, 0 if lookup.timestamp == -2 else end

    return fetch, offsets


def _load(bootstrap: str, state: Path | None):
    client = KafkaClientConfig(bootstrap, connect_timeout_ms=3000, request_timeout_ms=3000)
    source = Source(
        client=client, topic=TOPIC, partitions=(0,), state_dir=None if state is None else str(state)
    )
    return source.load_caches(num_partitions=4)[0]


def test_a_corrupt_last_batch_is_reported_once_on_every_resumed_run(tmp_path: Path) -> None:
    history = History().play([("commit", i % 4, i % 3, i) for i in range(8)])
    fetch, offsets = _serve(history, corrupt_last=True)
    with stand_in_broker(TOPIC, fetch, offsets_answer=offsets) as broker:
        fresh = _load(broker.bootstrap, None)
        runs = [_load(broker.bootstrap, tmp_path / "state") for _ in range(3)]
    kinds = [e.kind for e in fresh.stats.errors]
    assert "crc_mismatch" in kinds, kinds
    assert runs[1].stats.resumed and runs[2].stats.resumed, runs[1].stats.resume_detail
    for run in runs:
        # the same problems, once each (a resumed fetch names itself by where it started)
        assert _problems(run) == _problems(fresh)
        assert _without_errors(view(run)) == _without_errors(view(fresh))


def _problems(cache) -> list[tuple]:
    return [(e.kind, e.offset, e.reason, e.count) for e in cache.stats.errors]


def _without_errors(doc: dict) -> dict:
    return {**doc, "stats": {k: v for k, v in doc["stats"].items() if k != "errors"}}
