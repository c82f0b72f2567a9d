"""Follow mode: how soon ``offsetops exporter --follow`` serves what was appended to a large log dir.

    .venv/bin/python -m benchmarks.follow --size 1GB --append 10MB --repeat 3

A simulated log dir of ``--size`` (the reload benchmark's: Kafka 3.9, 200 groups on 50 partitions,
seed 1, cleaner dead, generated under ``benchmarks/data/`` or reused) is copied once to
``benchmarks/data/follow-<size>`` (appends change it; the reload benchmark's copy stays as it was).
The real exporter runs on it in a subprocess (``--follow --poll P``, each partition's resume state in
its memory). Each round appends ``--append`` bytes of offset commits (200 groups committing
for 50 partitions of a data topic, value v3, 50 records a batch), one write per
``__consumer_offsets`` partition their groups map to, then scrapes /metrics until every group's last
commit shows. With ``--moved N`` the same bytes go to the first N partitions only (4 groups on each),
as when a few busy groups commit. Printed per round and as the median:

- **append to served**: from the end of the last write to the snapshot showing every commit of the
  round being served (``offsetops_follow_last_update_timestamp_seconds``; includes up to one poll
  interval of waiting for the next look). The benchmark checks for the round every 0.25 s, filtering
  the exposition as text, so its own scrapes cost the exporter's machine little;
- **look to served**: ``offsetops_follow_lag_seconds``, from the look that saw the append to the new
  snapshot being served (reading the appended bytes from each partition's resume state, the snapshot
  of every group, the exposition);
- the bytes the exporter read for the round (``offsetops_follow_bytes_read_total``), in how many
  updates, and how many partitions resumed;
- **exporter CPU**: the user + system CPU seconds the exporter process used from the append until
  the round was served (its looks every poll and the benchmark's scrapes included): what the wall
  times would be on an idle core.

The first refresh (the whole log read fresh, the cleaner audit, the snapshot) is printed as the
baseline: what a refresh costs without following.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from offsetops.coordinator_core.partitioner import partition_for  # noqa: E402

from benchmarks.reload import DATA, ensure_data, parse_size  # noqa: E402
from tests.support.appends import active_segment, commit_batches, groups_for, next_offset  # noqa: E402
from tests.support.exporter_process import start_exporter  # noqa: E402

PARTITIONS = 50
GROUPS = 200
RECORD_BYTES = 57  # one v3 offset commit with its key, in a batch of 50


def scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    body = urllib.request.urlopen(url, timeout=30).read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def one(metrics: dict, name: str) -> float:
    return metrics.get(name, {}).get((), 0.0)


def bench_groups(moved: int = PARTITIONS) -> list[str]:
    """The committing groups, 4 on each of the first ``moved`` partitions (all 50 by default)."""
    return [g for p in range(moved) for g in groups_for(p, GROUPS // PARTITIONS, "bench", PARTITIONS)]


def prepare_appends(
    logdir: Path, commits_each: int, base: int, now_ms: int, moved: int = PARTITIONS
) -> dict[Path, bytes]:
    """``commits_each`` commits per group, per partition dir, at the offsets that follow its log; a
    group's commits are for data partitions 0, 1, ... with committed offsets ``base + i``."""
    by_partition: dict[int, list] = {}
    for g in bench_groups(moved):
        commits = [(g, "orders", i % PARTITIONS, base + i) for i in range(commits_each)]
        by_partition.setdefault(partition_for(g, PARTITIONS), []).extend(commits)
    return {
        logdir / f"__consumer_offsets-{p}": commit_batches(
            commits, base_offset=next_offset(logdir / f"__consumer_offsets-{p}"), now_ms=now_ms
        )
        for p, commits in by_partition.items()
    }


def append(batches: dict[Path, bytes]) -> int:
    """Write each partition's batches at the end of its active segment; the bytes written."""
    for pdir, data in batches.items():
        with open(active_segment(pdir), "ab") as fh:
            fh.write(data)
    return sum(len(d) for d in batches.values())


def shows_round(url: str, commits_each: int, base: int, moved: int) -> bool:
    """Every group's last commit of the round is served (the body is filtered as text, not parsed, so the
    check costs the exporter's machine little while it works)."""
    last = commits_each - 1
    body = urllib.request.urlopen(url, timeout=30).read().decode()
    prefix = "offsetops_consumer_group_topic_partition_committed_offset{"
    tail = f'partition_id="{last % PARTITIONS}",topic_name="orders"}}'
    served = {}
    for line in body.splitlines():
        if line.startswith(prefix) and tail in line:
            served[line[len(prefix) : line.index(",")]] = float(line.rsplit(" ", 1)[1])
    want = float(base + last)
    return all(served.get(f'group_id="{g}"') == want for g in bench_groups(moved))


def wait_for_round(url: str, commits_each: int, base: int, moved: int, deadline_s: float) -> float | None:
    """When the round first showed (``time.monotonic``), or None when it did not within the deadline."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if shows_round(url, commits_each, base, moved):
            return time.monotonic()
        time.sleep(0.25)
    return None


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_round(url: str, pid: int, logdir: Path, args: argparse.Namespace, round_no: int) -> dict[str, float]:
    before = scrape(url)
    commits_each = max(args.append // RECORD_BYTES // len(bench_groups(args.moved)), 1)
    now_ms = int(time.time() * 1000)
    base = now_ms * 1000  # committed offsets no earlier round or run used (exact as a float)
    batches = prepare_appends(logdir, commits_each, base, now_ms, args.moved)
    cpu = cpu_seconds(pid)
    appended = append(batches)
    landed = time.time()
    if wait_for_round(url, commits_each, base, args.moved, 300) is None:
        raise SystemExit(f"round {round_no}: the commits did not show within 300 s")
    cpu = cpu_seconds(pid) - cpu
    after = scrape(url)
    resumed = after.get("offsetops_reload_resumed", {})
    return {
        "appended": appended,
        "append_to_served": one(after, "offsetops_follow_last_update_timestamp_seconds") - landed,
        "look_to_served": one(after, "offsetops_follow_lag_seconds"),
        "exporter_cpu": cpu,
        "bytes_read": one(after, "offsetops_follow_bytes_read_total")
        - one(before, "offsetops_follow_bytes_read_total"),
        "updates": one(after, "offsetops_follow_updates_total")
        - one(before, "offsetops_follow_updates_total"),
        "resumed": sum(resumed.values()),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="1GB", help="size of the simulated log dir (10MB .. 1GB)")
    p.add_argument("--append", default="10MB", help="bytes of commits appended per round")
    p.add_argument("--repeat", type=int, default=3, help="rounds")
    p.add_argument("--poll", type=float, default=0.2, help="the exporter's --poll seconds")
    p.add_argument("--moved", type=int, default=PARTITIONS, choices=range(1, PARTITIONS + 1), metavar="N",
                   help="append to the first N of the 50 partitions only (default all)")  # fmt: skip
    args = p.parse_args(argv)
    size, args.append = parse_size(args.size), parse_size(args.append)
    gen = argparse.Namespace(
        data_dir=str(DATA), kafka_version="3.9", groups=GROUPS, partitions=PARTITIONS, seed=1
    )
    source, _ = ensure_data(size, "none", gen)
    logdir = DATA / f"follow-{args.size}"
    if not (logdir / "truth.json").exists():
        shutil.rmtree(logdir, ignore_errors=True)
        shutil.copytree(source, logdir)
    on_disk = sum(f.stat().st_size for f in logdir.glob("__consumer_offsets-*/*.log"))
    started = time.monotonic()
    proc, url = start_exporter(str(logdir), "--num-partitions", str(PARTITIONS), "--interval", "86400",
                               "--follow", "--poll", str(args.poll))  # fmt: skip
    try:
        first = scrape(url)
        print(f"log dir {logdir} ({on_disk / 1e6:,.0f} MB of segments)")
        print(f"first refresh (whole log read fresh, cleaner audit, snapshot): "
              f"{one(first, 'offsetops_exporter_refresh_duration_seconds'):.2f} s "
              f"(exporter up after {time.monotonic() - started:.2f} s)")  # fmt: skip
        rows = []
        for r in range(1, args.repeat + 1):
            row = run_round(url, proc.pid, logdir, args, r)
            rows.append(row)
            print(
                f"round {r}: appended {row['appended'] / 1e6:.2f} MB; append to served "
                f"{row['append_to_served']:.3f} s; look to served {row['look_to_served']:.3f} s; "
                f"read {row['bytes_read'] / 1e6:.2f} MB in {row['updates']:.0f} update(s); "
                f"{row['resumed']:.0f} of {PARTITIONS} resumed; exporter CPU {row['exporter_cpu']:.2f} s"
            )
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"median of {len(rows)}: append to served {med['append_to_served']:.3f} s, look to served "
              f"{med['look_to_served']:.3f} s, exporter CPU {med['exporter_cpu']:.2f} s "
              f"(poll {args.poll:g} s); "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
