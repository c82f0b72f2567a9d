"""The cache's JSON text is byte for byte what ``json.dump`` of ``to_json()`` wrote: on the real broker log
dirs, on a simulated one with every group type, and on hand-built caches with the strings that break
encoders (control characters, replaced non-UTF-8, lone surrogates, a megabyte of metadata)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offsetops.coordinator_core import cache_json
from offsetops.coordinator_core.cache import (
    CoordinatorCache,
    GroupMetadata,
    LoadStats,
    MemberMetadata,
    OffsetAndMetadata,
)
from offsetops.coordinator_core.errors import DecodeError
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.simulator import SimulationConfig, simulate

from tests.support.shared import real_kafka_logdirs

LOGDIRS = real_kafka_logdirs()
ODD = [
    "",
    "plain",
    "\x00\x01\x1b[2J\x7f\n\r\t",  # control characters, a terminal escape
    "caf\u00e9 \u65e5\u672c \U0001f600",  # non-ASCII, an astral character (a surrogate pair in JSON)
    "bad \ufffd\ufffd bytes",  # what the decoder leaves of non-UTF-8 (replaced)
    "lone \ud800 and \udfff surrogates",
    '"quoted" \\back\\slash\\ </script>',
    "\u2028\u2029",
]


def reference(doc: Any) -> str:
    """What ``print_json`` wrote before: ``json.dump`` with the pure-Python encoder."""
    out = io.StringIO()
    json.dump(doc, out, separators=(",", ":"), sort_keys=False, allow_nan=False)
    return out.getvalue()


def assert_same_text(caches: list[CoordinatorCache]) -> None:
    assert "".join(cache_json.caches_chunks(caches)) == reference([c.to_json() for c in caches])
    for c in caches:
        assert "".join(cache_json.cache_chunks(c)) == reference(c.to_json())


@pytest.mark.skipif(not LOGDIRS, reason="../shared/fixtures/real-kafka not present")
@pytest.mark.parametrize("logdir", LOGDIRS, ids=lambda p: p.name)
def test_real_log_dirs_encode_as_before(logdir: Path) -> None:
    caches = load_log_dir(logdir)
    assert caches and all(c.stats.records for c in caches)
    assert_same_text(caches)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> list[CoordinatorCache]:
    out = tmp_path_factory.mktemp("sim") / "logdir"
    simulate(SimulationConfig(out, groups=40, partitions=6, days=0.2, seed=3, kafka_version="4.2"))
    return load_log_dir(out)


def test_a_simulated_log_dir_with_every_group_type_encodes_as_before(simulated) -> None:
    types = {g.group_type for c in simulated for g in c.groups.values()}
    assert types == {"classic", "consumer", "share", "streams"}
    assert_same_text(simulated)


def _offset(
    n: int, metadata: str = "", epoch: int | None = 7, expire: int | None = None
) -> OffsetAndMetadata:
    return OffsetAndMetadata(
        offset=n,
        leader_epoch=epoch,
        metadata=metadata,
        commit_timestamp=1_700_000_000_000 + n,
        expire_timestamp=expire,
        record_offset=n,
    )


def odd_cache() -> CoordinatorCache:
    """Every odd string in every string field, numbers at their limits, and a group spanning three chunks."""
    offsets = {(odd, p): _offset(p, metadata=odd) for p, odd in enumerate(ODD)}
    offsets[("t", 2**31 - 1)] = _offset(2**63 - 1, metadata="m" * 1_000_000, epoch=None, expire=-1)
    offsets[("t", 0)] = _offset(-1, epoch=-(2**31), expire=2**63 - 1)
    member = MemberMetadata(
        member_id=ODD[2],
        group_instance_id=None,
        client_id=ODD[5],
        client_host="/10.0.0.1",
        session_timeout_ms=45_000,
        rebalance_timeout_ms=None,
        subscribed_topics=ODD[:3],
        assignment={ODD[3]: [0, 2**31 - 1]},
    )
    big = {(f"topic-{n % 7}", n): _offset(n, epoch=None if n % 3 else n) for n in range(2 * 4096 + 1)}
    groups = {
        odd: GroupMetadata(
            group_id=odd, state="Stable", protocol_type=odd or None, generation=2**31 - 1, offsets=offsets
        )
        for odd in ODD
    }
    groups["members"] = GroupMetadata(
        group_id="members",
        state="Stable",
        protocol_type="consumer",
        generation=1,
        protocol=ODD[4],
        leader=ODD[2],
        members=[member],
        pending_offsets={9: {(ODD[6], 1): _offset(5)}},
    )
    groups["big"] = GroupMetadata(
        group_id="big", state="Empty", protocol_type=None, generation=0, offsets=big
    )
    groups["none"] = GroupMetadata(group_id="none", state="Dead", protocol_type=None, generation=0)
    stats = LoadStats(records=3, records_by_type={1: 2, 2: 1}, elapsed_ms=1 / 3)
    stats.errors.append(
        DecodeError(file=ODD[2], partition=0, position=0, offset=1, kind="crc", reason=ODD[5])
    )
    return CoordinatorCache(partition=7, groups=groups, stats=stats, misplaced_groups=ODD[::-1])


def test_odd_strings_huge_metadata_and_chunk_boundaries_encode_as_before() -> None:
    cache = odd_cache()
    assert_same_text([cache, CoordinatorCache(partition=None, groups={}, stats=LoadStats())])
    text = "".join(cache_json.cache_chunks(cache))
    assert "\\u001b[2J" in text and "\\ud800" in text and "\\ud83d\\ude00" in text  # escaped, ASCII only
    assert text.isascii()


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(st.one_of(st.text(), st.text(st.characters(categories=["Cs", "Cc"]))), min_size=1),
    numbers=st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=3, max_size=3),
)
def test_any_strings_and_numbers_encode_as_before(names: list[str], numbers: list[int | None]) -> None:
    epoch, expire, offset = numbers
    offsets = {
        (t, p): _offset(offset or 0, metadata=t, epoch=epoch, expire=expire) for p, t in enumerate(names)
    }
    group = GroupMetadata(group_id=names[0], state="Empty", protocol_type=None, generation=0, offsets=offsets)
    cache = CoordinatorCache(
        partition=0, groups={names[-1]: group}, stats=LoadStats(), misplaced_groups=names
    )
    assert_same_text([cache])


@pytest.mark.parametrize("key", ["a", "b", "c"])
def test_object_chunks_puts_the_text_where_the_key_was(key: str) -> None:
    doc = {"a": 1, "b": [2, "\x00"], "c": None}
    text = "".join(cache_json.object_chunks(doc, key, ['{"x":', "[]}"]))
    assert text == reference({**doc, key: {"x": []}})
    assert "".join(cache_json.object_chunks({key: 0}, key, ["1"])) == f'{{"{key}":1}}'
