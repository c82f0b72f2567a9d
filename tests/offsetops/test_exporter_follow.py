"""``offsetops exporter --follow``: the real exporter process on a simulated log dir; commits appended to
a partition show on /metrics within a few looks, and only what was appended is read."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.appends import FOLLOW_PARTITIONS, append_commits, groups_for
from tests.support.appends import follow_logdir as follow_logdir
from tests.support.appends import follow_simulated as follow_simulated
from tests.support.exporter_process import start_exporter

REPO = Path(__file__).resolve().parents[2]
POLL_S = 0.2
DEADLINE_S = 30.0  # a bound on waiting, not a speed claim
NOW_MS = 1_700_010_000_000
PARTITIONS = FOLLOW_PARTITIONS


class Exporter:
    """One ``offsetops exporter --follow`` process on loopback, its /metrics and its stderr."""

    def __init__(self, proc: subprocess.Popen[str], url: str):
        self.proc, self.url = proc, url
        self.stderr: list[str] = []

    def scrape(self) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
        body = urllib.request.urlopen(self.url, timeout=10).read().decode()
        out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
        for fam in text_string_to_metric_families(body):
            for s in fam.samples:
                out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
        return out

    def wait_for(self, what, timeout: float = DEADLINE_S):
        """Scrape until ``what(metrics)`` is truthy; the last scrape is returned either way."""
        deadline = time.monotonic() + timeout
        metrics = self.scrape()
        while not what(metrics) and time.monotonic() < deadline:
            time.sleep(POLL_S / 2)
            metrics = self.scrape()
        return metrics


def start_following(logdir: Path, *extra: str) -> Exporter:
    proc, url = start_exporter(str(logdir), "--num-partitions", str(PARTITIONS), "--interval", "3600",
                               "--follow", "--poll", str(POLL_S), *extra)  # fmt: skip
    return Exporter(proc, url)


def stop(exporter: Exporter) -> str:
    exporter.proc.terminate()
    _out, err = exporter.proc.communicate(timeout=30)
    return err


@pytest.fixture
def exporter(follow_logdir: Path) -> Iterator[Exporter]:
    exp = start_following(follow_logdir)
    try:
        yield exp
    finally:
        if exp.proc.poll() is None:
            stop(exp)


def value(metrics, name: str, **labels: str) -> float | None:
    return metrics.get(name, {}).get(tuple(sorted(labels.items())))


def test_appended_commits_show_on_the_next_scrapes(follow_logdir: Path, exporter: Exporter) -> None:
    before = exporter.scrape()
    groups_before = value(before, "offsetops_reload_groups", partition="1")
    assert groups_before is not None
    new = groups_for(1, 3, "appended", PARTITIONS)
    commits = [(g, "payments", p, 4_000 + p) for g in new for p in range(3)]
    appended = append_commits(follow_logdir / "__consumer_offsets-1", commits, now_ms=NOW_MS)
    after = exporter.wait_for(lambda m: value(m, "offsetops_follow_updates_total") == 1)
    assert value(after, "offsetops_follow_updates_total") == 1
    assert value(after, "offsetops_reload_groups", partition="1") == groups_before + 3
    for g in new:
        assert value(after, "offsetops_consumer_group_topic_partition_committed_offset", group_id=g,
                     topic_name="payments", partition_id="2") == 4_002  # fmt: skip
    # the other partitions were not read again
    assert value(after, "offsetops_reload_groups", partition="0") == value(before, "offsetops_reload_groups",
                                                                           partition="0")  # fmt: skip
    lag = value(after, "offsetops_follow_lag_seconds")
    assert lag is not None and lag > 0
    # only the appended bytes were read, from the resume state kept since the first read
    assert value(after, "offsetops_reload_bytes_read", partition="1") == appended
    assert value(after, "offsetops_reload_resumed", partition="1") == 1
    assert value(before, "offsetops_reload_resumed", partition="1") == 0  # the first read had no state


def test_a_truncated_partition_is_read_fresh_and_the_reason_logged(
    follow_logdir: Path, exporter: Exporter
) -> None:
    segment = sorted((follow_logdir / "__consumer_offsets-2").glob("*.log"))[-1]
    append_commits(follow_logdir / "__consumer_offsets-2", [("g", "t", 0, 1)], now_ms=NOW_MS)
    exporter.wait_for(lambda m: value(m, "offsetops_follow_updates_total") == 1)
    with open(segment, "r+b") as fh:  # an unclean leader election cut the log back
        fh.truncate(segment.stat().st_size // 2)
    after = exporter.wait_for(lambda m: value(m, "offsetops_follow_fresh_reads_total", reason="truncated"))
    assert value(after, "offsetops_follow_fresh_reads_total", reason="truncated") == 1
    assert value(after, "offsetops_reload_resumed", partition="2") == 0
    whole = sum(seg.stat().st_size for seg in (follow_logdir / "__consumer_offsets-2").glob("*.log"))
    assert value(after, "offsetops_reload_bytes_read", partition="2") == whole
    assert value(after, "offsetops_exporter_up") == 1
    err = stop(exporter)
    (line,) = [line for line in err.splitlines() if "read from its start" in line]
    assert "__consumer_offsets-2 read from its start (truncated)" in line
    assert "Traceback" not in err


def test_following_refreshes_audit_the_cleaner_in_the_background(follow_logdir: Path) -> None:
    from offsetops.cli import build_parser
    from offsetops.commands._run import resolve_args
    from offsetops.commands.exporter import ExporterSnapshots

    args = build_parser().parse_args(["exporter", str(follow_logdir), "--num-partitions", str(PARTITIONS),
                                      "--follow"])  # fmt: skip
    resolve_args(args)
    args.offsets_topic = "__consumer_offsets"
    snapshots = ExporterSnapshots(args)
    try:
        first = snapshots.full()
        assert first.audit is not None and len(first.audit.partitions) == PARTITIONS
        second = snapshots.full()  # serves the audit it has while the next one runs
        assert second.audit is first.audit
        auditing = snapshots._auditing
        assert auditing is not None
        auditing.join(timeout=DEADLINE_S)
        assert not auditing.is_alive()
        third = snapshots.full()
        assert third.audit is not first.audit and third.audit is not None
        assert [p.partition for p in third.audit.partitions] == [p.partition for p in first.audit.partitions]
    finally:
        snapshots.close()


def test_follow_with_once_is_a_usage_error(follow_logdir: Path, capsys) -> None:
    from offsetops.cli import main

    assert (
        main(["exporter", str(follow_logdir), "--num-partitions", str(PARTITIONS), "--follow", "--once"]) == 2
    )
    err = capsys.readouterr().err
    assert "cannot be combined with --once" in err and "Traceback" not in err


@pytest.mark.parametrize("poll", ["0", "-1", "nan", "3601"])
def test_a_poll_out_of_range_is_a_usage_error(follow_logdir: Path, capsys, poll: str) -> None:
    from offsetops.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["exporter", str(follow_logdir), "--follow", "--poll", poll])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--poll" in err and "Traceback" not in err


def test_the_served_exposition_after_appends_is_the_whole_render_of_the_snapshot(follow_logdir: Path) -> None:
    """Following renders only the partitions and groups that moved; what it serves is, byte for byte,
    what rendering the collector's families whole gives (``--once`` renders them so)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from offsetops.cli import build_parser
    from offsetops.commands._run import resolve_args
    from offsetops.commands.exporter import ExporterSnapshots, OffsetsCollector

    args = build_parser().parse_args(["exporter", str(follow_logdir), "--num-partitions", str(PARTITIONS),
                                      "--follow"])  # fmt: skip
    resolve_args(args)
    args.offsets_topic = "__consumer_offsets"
    snapshots = ExporterSnapshots(args)
    collector = OffsetsCollector(snapshots.full, follow=snapshots.follow, exposition=snapshots.exposition)
    try:
        collector.refresh()
        for step, partition in enumerate((1, 3, 1)):
            new = groups_for(partition, 2, f"served{step}", PARTITIONS)
            commits = [(g, 'we"ird\\topic', p, 10 + step) for g in new for p in range(2)]
            append_commits(follow_logdir / f"__consumer_offsets-{partition}", commits, now_ms=NOW_MS)
            collector.follow()
            registry = CollectorRegistry(auto_describe=False)
            registry.register(collector)
            whole = generate_latest(registry)
            served = collector.exposition()
            assert served.startswith(whole) and whole.count(b"\n") > 100
            line = f'group_id="{new[0]}",partition_id="1",topic_name="we\\"ird\\\\topic"}} {10 + step}.0'
            assert line.encode() in whole
    finally:
        snapshots.close()


def test_following_with_state_files_keeps_the_decoded_survivors_between_reads(
    follow_logdir: Path, tmp_path: Path
) -> None:
    from offsetops.cli import build_parser
    from offsetops.commands._run import resolve_args
    from offsetops.commands.exporter import ExporterSnapshots

    args = build_parser().parse_args(["exporter", str(follow_logdir), "--num-partitions", str(PARTITIONS),
                                      "--follow", "--state", str(tmp_path / "state")])  # fmt: skip
    resolve_args(args)
    args.offsets_topic = "__consumer_offsets"
    snapshots = ExporterSnapshots(args)
    try:
        snapshots.full()
        append_commits(follow_logdir / "__consumer_offsets-2", [("g", "t", 0, 3)], now_ms=NOW_MS)
        update = snapshots.follow()
        assert update is not None and update.step.read == (2,) and update.step.resumed == 1
        store = snapshots._follower.source.state_store if snapshots._follower else None
        memo = store.survivors("__consumer_offsets", 2) if store is not None else None
        assert memo is not None and memo.reused > 0
        assert sorted(p.name for p in (tmp_path / "state").glob("*.state")) == [
            f"__consumer_offsets-{p}.state" for p in range(PARTITIONS)
        ]
    finally:
        snapshots.close()
