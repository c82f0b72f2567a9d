"""Cost of the operator views: describe, history, as-of reload, and the data-partition log-end lookup.

    .venv/bin/python -m benchmarks.views --size 50MB --data-segment 200MB

Data: a simulated log dir of about ``--size`` bytes with data-topic partition dirs (seed 1, cleaner
dead, reused under ``benchmarks/data/``), plus one data partition with a single segment of about
``--data-segment`` bytes of 16 KiB batches (the log-end lookup walks its batch headers). Figures are
per CPU second (``time.process_time``); wall seconds and peak RSS growth are printed too.
"""

from __future__ import annotations

import argparse
import resource
import struct
import tempfile
import time
from pathlib import Path

from offsetops.coordinator_core.asof import Cut, load_as_of
from offsetops.coordinator_core.data_offsets import offline_offsets
from offsetops.coordinator_core.describe import GroupFilter, describe_groups, wanted_partitions
from offsetops.coordinator_core.history import replay_history
from offsetops.coordinator_core.loader import load_log_dir
from offsetops.coordinator_core.partitioner import partition_for
from offsetops.coordinator_core.records.builder import build_record_batch
from offsetops.coordinator_core.simulator import SimulationConfig, load_truth, simulate
from offsetops.coordinator_core.sources.logdir import open_log_dir

from benchmarks.reload import parse_size

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
PARTITIONS = 10


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _logdir(size: int) -> Path:
    out = DATA / f"views-{size}"
    if not (out / "truth.json").exists():
        simulate(
            SimulationConfig(
                out_dir=out,
                groups=100,
                partitions=PARTITIONS,
                seed=1,
                target_bytes=size,
                compacted_fraction=0.0,
                data_topics=True,
            )
        )
    return out


def _measure(label: str, fn, nbytes: int, records: int | None = None) -> None:
    rss0 = _rss_mb()
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    rate = f"{records / cpu:,.0f} rec/s, " if records else ""
    print(
        f"{label:<34} {cpu:7.2f} s CPU {wall:7.2f} s wall  {rate}{nbytes / 1e6 / cpu:7.1f} MB/s  "
        f"peak RSS +{_rss_mb() - rss0:.0f} MB"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("50MB"))
    ap.add_argument("--data-segment", type=parse_size, default=parse_size("200MB"))
    args = ap.parse_args()
    logdir = _logdir(args.size)
    truth = load_truth(logdir / "truth.json")
    size = sum(p.stat().st_size for p in logdir.glob("__consumer_offsets-*/*.log"))
    print(f"log dir {logdir}: {size / 1e6:.1f} MB of __consumer_offsets, {PARTITIONS} partitions")

    caches: list = []
    _measure(
        "reload (load_log_dir)", lambda: caches.extend(load_log_dir(logdir, num_partitions=PARTITIONS)), size
    )
    records = sum(c.stats.records for c in caches)

    def describe() -> None:
        offs = offline_offsets([logdir], wanted_partitions(caches, GroupFilter()))
        describe_groups(caches, offs)

    _measure("describe (offsets + rows)", describe, size)

    group = max(truth["partitions"][0]["groups"] or [{"group_id": "none"}], key=lambda g: len(g["offsets"]))
    gid = group["group_id"]
    part = partition_for(gid, PARTITIONS)
    pdir = open_log_dir(logdir, partitions=[part]).partitions[0]
    part_records = next(c.stats.records for c in caches if c.partition == part)

    def history() -> None:
        errors: list = []
        replay_history(
            pdir.iter_batches(errors),
            gid,
            offsets_partition=part,
            errors=errors,
            log_offsets=lambda tp: offline_offsets([logdir], [tp]).get(tp),
        )

    _measure(f"history of one group (p{part})", history, pdir.size_bytes, part_records)
    last = next(c.stats.last_offset for c in caches if c.partition == part) or 2
    cut = Cut(until_offset=last // 2)
    _measure(
        f"as-of reload, half of p{part}",
        lambda: load_as_of(pdir.iter_batches, partition=part, cut=cut),
        pdir.size_bytes // 2,
        part_records // 2,
    )

    with tempfile.TemporaryDirectory() as tmp:
        seg = Path(tmp) / "big-0"
        seg.mkdir()
        batch_records = [(b"k" * 16, b"v" * 160, 0)] * 80  # about 16 KiB per batch
        one = len(build_record_batch(batch_records, base_offset=0))
        n = max(1, args.data_segment // one)
        index = bytearray()
        with open(seg / "00000000000000000000.log", "wb") as fh:
            for i in range(n):
                index += struct.pack(">ii", i * 80, fh.tell())  # one entry per 16 KiB, as the broker's
                fh.write(build_record_batch(batch_records, base_offset=i * 80))
        nbytes = n * one
        for label in ("log end, header walk (no index)", "log end, from the offset index"):
            got: dict = {}
            _measure(label, lambda got=got: got.update(offline_offsets([tmp], {("big", 0)})), nbytes)
            assert got[("big", 0)].log_end_offset == n * 80
            # The broker preallocates the active segment's index (10 MiB) and fills it from the front.
            (seg / "00000000000000000000.index").write_bytes(bytes(index) + bytes(10 * 2**20 - len(index)))
    print(f"({records:,} records in the log dir)")


if __name__ == "__main__":
    main()
