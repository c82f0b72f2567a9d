"""The state file's format: what is written reads back the same, and a file that says anything else,
even with a valid checksum, is one StateFormatError (no allocation from a count it claims)."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core.resume import StateFormatError, StateStore, StateTables
from offsetops.coordinator_core.resume.codec import FORMAT_VERSION, MAGIC, decode_state, encode_state

from tests.coordinator_core.resume.logs import TOPIC, History, load, segments_of, write_partition

KEYS = st.binary(min_size=2, max_size=40)
ENTRY = st.tuples(
    st.integers(0, 2**63 - 1), st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**63 - 1),
    st.none() | st.binary(max_size=60),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    latest=st.dictionaries(KEYS, ENTRY, max_size=20),
    txns=st.dictionaries(
        st.integers(-1, 2**40), st.dictionaries(KEYS, ENTRY, min_size=1, max_size=5), max_size=4
    ),
    created=st.dictionaries(KEYS, st.integers(0, 2**63 - 1), max_size=5),
    invalid=st.frozensets(st.integers(0, 2**63 - 1), max_size=5),
)  # fmt: skip
def test_what_is_written_reads_back(latest, txns, created, invalid) -> None:
    tables = StateTables(latest, txns, created, dict(created), invalid)
    meta, back = decode_state(encode_state({"a": [1, "b"]}, tables))
    assert meta == {"a": [1, "b"]}
    assert back == tables


def _file(body: bytes, *, version: int = FORMAT_VERSION, magic: bytes = MAGIC) -> bytes:
    return struct.pack("<8sHHQ32s", magic, version, 0, len(body), hashlib.sha256(body).digest()) + body


def _blob(data: bytes) -> bytes:
    return struct.pack("<Q", len(data)) + data


META = _blob(b"{}")


@pytest.mark.parametrize(
    ("data", "code", "says"),
    [
        (_file(META, magic=b"NOTSTATE"), "state_foreign", "magic"),
        (_file(META, version=FORMAT_VERSION + 1), "state_version", "version"),
        (_file(META)[:-1], "state_corrupt", "body bytes"),
        (b"OFOPSRES", "state_corrupt", "shorter than the header"),
        (_file(_blob(b"[1]")), "state_corrupt", "not an object"),
        (_file(_blob(b"{\xff")), "state_corrupt", "meta"),
        # a count of 2^62 entries in a few bytes: refused before anything is allocated
        (_file(META + struct.pack("<Q", 1 << 62)), "state_corrupt", "cannot fit"),
        # one entry whose key length says 1000 bytes, in a 3-byte keys blob
        (
            _file(
                META
                + struct.pack("<Q", 1)
                + struct.pack("<i", 1000)
                + struct.pack("<qqq", 0, 0, 0)
                + struct.pack("<i", -1)
                + _blob(b"abc")
                + _blob(b"")
            ),
            "state_corrupt",
            "do not add up",
        ),
        (
            _file(
                META
                + struct.pack("<Q", 1)
                + struct.pack("<i", 3)
                + struct.pack("<qqq", 0, 0, 0)
                + struct.pack("<i", -7)
                + _blob(b"abc")
                + _blob(b"")
            ),
            "state_corrupt",
            "below -1",
        ),
    ],
)
def test_a_file_that_says_anything_else_is_refused(data: bytes, code: str, says: str) -> None:
    with pytest.raises(StateFormatError) as exc:
        decode_state(data)
    assert exc.value.code == code and says in str(exc.value)


@pytest.mark.parametrize(
    "damage",
    [
        lambda m: m["point"].update(next_offset=-5),
        lambda m: m["point"].update(position="12"),
        lambda m: m["point"].update(segments=[[0]]),
        lambda m: m["point"]["settings"].update(verify_crc=1),
        lambda m: m["fold"]["counters"].update(records=True),
        lambda m: m["fold"].update(errors=[["crc_mismatch", "x" * 5000, None, 0, 0, 0, None, 1]]),
        lambda m: m["fold"].update(first_marker=[[1, 2]]),
        lambda m: m.pop("fold"),
    ],
)
def test_a_checksummed_state_with_hostile_meta_is_read_fresh(tmp_path: Path, damage) -> None:
    history = History().play([("commit", i % 4, i % 3, i) for i in range(6)])
    write_partition(tmp_path / "logdir", segments_of(history.batches, 1 << 20))
    load(tmp_path / "logdir", tmp_path / "state")
    store = StateStore.at(tmp_path / "state")
    meta, tables = decode_state(store.path(TOPIC, 0).read_bytes())
    damage(meta)
    store.path(TOPIC, 0).write_bytes(encode_state(json.loads(json.dumps(meta)), tables))
    resumed = load(tmp_path / "logdir", tmp_path / "state")
    assert (resumed.stats.resumed, resumed.stats.resume_reason) == (False, "state_corrupt")
    assert str(store.path(TOPIC, 0)) in (resumed.stats.resume_detail or "")
    assert load(tmp_path / "logdir", tmp_path / "state").stats.resumed
