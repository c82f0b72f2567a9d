"""Every real broker segment in ../shared/fixtures/real-kafka decodes cleanly (see SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.records import iter_segment_batches, read_batches

from tests.support.shared import REAL_KAFKA_DIR, require_real_kafka


def _logs() -> list[Path]:
    if not REAL_KAFKA_DIR.is_dir():
        return []
    return sorted(REAL_KAFKA_DIR.glob("*/__consumer_offsets-*/*.log"))


def _decode(path: Path, **kwargs: object) -> tuple[int, int, set[int], list[DecodeError]]:
    errors: list[DecodeError] = []
    batches = records = 0
    magics: set[int] = set()
    partition = int(path.parent.name.rsplit("-", 1)[1])
    end = 0
    for b in iter_segment_batches(path, partition=partition, errors=errors, **kwargs):  # type: ignore[arg-type]
        assert b.partition == partition and b.file == str(path)
        assert b.position == end  # batches tile the file exactly
        end = b.position + b.size
        batches += 1
        magics.add(b.magic)
        recs = list(b.iter_records())
        assert len(recs) == b.record_count
        records += len(recs)
        for offset, _ts, key, _value in recs:
            assert b.base_offset <= offset <= b.last_offset
            assert key is not None  # every __consumer_offsets record has a key
    assert end == path.stat().st_size or errors
    return batches, records, magics, errors


def test_fixture_logs_found() -> None:
    require_real_kafka()
    assert len(_logs()) >= 40


@pytest.mark.parametrize("path", _logs(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
def test_every_real_segment_decodes_without_errors(path: Path) -> None:
    batches, records, _magics, errors = _decode(path)
    assert errors == []
    assert batches >= 1 and records >= batches


def test_total_batch_count_matches_sources() -> None:
    require_real_kafka()
    # SOURCES.md: "All 10,046 batches pass, and every file parses to its exact end."
    assert sum(_decode(p)[0] for p in _logs()) == 10_046


@pytest.mark.parametrize(
    ("relpath", "batches", "records", "magic"),
    [
        # SOURCES.md, William0423: "8,202 magic-2 batches" (one OffsetCommit/GroupMetadata each).
        ("William0423__kafka/__consumer_offsets-28/00000000000000000000.log", 8202, 8202, 2),
        # SOURCES.md, DanielMorales9: "683 batches holding 1,241 records" (partition 39).
        ("DanielMorales9__kafkafun/__consumer_offsets-39/00000000000000000000.log", 683, 1241, 2),
        # SOURCES.md, xpxwo100: "magic 1 legacy message set, 860 wrapper-less messages".
        ("xpxwo100__bullShit/__consumer_offsets-40/00000000000000000000.log", 860, 860, 1),
        # SOURCES.md, iechenyb: "16 OffsetCommit records".
        ("iechenyb__data/__consumer_offsets-36/00000000000000000000.log", 16, 16, 2),
    ],
)
def test_counts_stated_in_sources(relpath: str, batches: int, records: int, magic: int) -> None:
    path = require_real_kafka() / relpath
    got_batches, got_records, magics, errors = _decode(path)
    assert errors == []
    assert (got_batches, got_records, magics) == (batches, records, {magic})


def test_streaming_with_tiny_chunks_matches_whole_buffer() -> None:
    """Chunks far smaller than a batch force the buffer to grow and carry partial batches over."""
    path = require_real_kafka() / "DanielMorales9__kafkafun/__consumer_offsets-39/00000000000000000000.log"
    errors: list[DecodeError] = []
    whole = [(b.position, list(b.iter_records())) for b in read_batches(path.read_bytes(), errors=errors)]
    for chunk_size in (1, 7, 100, 4096):
        streamed = [
            (b.position, list(b.iter_records()))
            for b in iter_segment_batches(path, errors=errors, chunk_size=chunk_size)
        ]
        assert streamed == whole
    assert errors == []


def test_compacted_segment_starts_at_nonzero_offset_with_gaps() -> None:
    # SOURCES.md: yuanliubei -17 was compacted; its second segment starts at offset 58.
    path = (
        require_real_kafka() / "yuanliubei__kafka-source-code/__consumer_offsets-17/00000000000000000058.log"
    )
    errors: list[DecodeError] = []
    batches = list(iter_segment_batches(path, errors=errors))
    assert errors == []
    assert batches[0].base_offset >= 58


def test_no_real_batch_is_compressed_transactional_or_control() -> None:
    # SOURCES.md: "All batches in every repository are uncompressed ... No batch is transactional or a
    # control batch, and no producer id is set."
    require_real_kafka()
    errors: list[DecodeError] = []
    for p in _logs():
        for b in iter_segment_batches(p, errors=errors):
            assert (b.compression, b.is_transactional, b.is_control, b.producer_id) == (0, False, False, -1)
    assert errors == []
