"""What Dagster's event log costs a run shaped like the main job, on the instance storages offsetops runs on:
SQLite (``offsetops demo``, a local ``dagster dev``) and PostgreSQL (``deploy/dagster.yaml``), with and
without Dagster's batched event writes (``DAGSTER_EVENT_BATCH_SIZE``).

    .venv/bin/python benchmarks/dagster_events.py --partitions 50 --repeat 3

The run materializes six assets partitioned like ``__consumer_offsets`` (one run over every partition,
``BackfillPolicy.single_run``), each with a dozen metadata entries per partition: the 300
materializations and 300 planned materializations of the main job's 765 events, without its work (each
asset only builds its metadata; the main job's 105 check evaluations are left out). The PostgreSQL
server is a throwaway one on loopback (Debian's ``postgresql``, as the deployment tests start it: with
``fsync=off``, so its commits cost less than a production server's), reached over TLS with
``deploy/dagster.yaml`` unchanged.

``--job main`` runs the real main job instead (``offsetops demo --resume`` in a process of its own on one
simulated log dir, local Spark): its events per run by type, the seconds from the run's creation to its
start (where Dagster writes the planned materializations, before the run starts: in the webserver or the
daemon when the run is launched from the UI or a schedule) and from its start to its end, as Dagster
recorded them, for each instance storage and each setting of ``--settings`` (``unset``, ``batch``: the image's
``DAGSTER_EVENT_BATCH_SIZE``, ``subset``: batch plus ``DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS``,
which the deployment leaves off). Each setting runs into an output dir of its own; its first run reads the
whole log dir and is not counted, the next ``--repeat`` runs resume (nothing appended between them).

    .venv/bin/python benchmarks/dagster_events.py --job main --partitions 50 --repeat 2
"""

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the repository root holds tests/ (the Postgres helper)
    sys.path.insert(0, str(ROOT))

from dagster import (  # noqa: E402  (the annotations of the assets below must resolve at import)
    AssetExecutionContext,
    BackfillPolicy,
    DagsterInstance,
    Definitions,
    MaterializeResult,
    StaticPartitionsDefinition,
    asset,
    materialize,
)

ASSETS = ("raw", "cache", "audit", "plan", "validation", "execution")


def definitions(partitions: int) -> Any:
    """Six single-run partitioned assets in a chain."""
    parts = StaticPartitionsDefinition([str(p) for p in range(partitions)])

    def make(name: str, dep: str | None) -> Any:
        @asset(
            name=name,
            partitions_def=parts,
            backfill_policy=BackfillPolicy.single_run(),
            deps=[dep] if dep else [],
        )
        def _asset(context: AssetExecutionContext) -> MaterializeResult:
            for key in context.partition_keys:
                context.add_asset_metadata(
                    {f"figure_{i}": int(key) * i for i in range(12)}, partition_key=key
                )
            return MaterializeResult(metadata={"partitions": len(context.partition_keys)})

        return _asset

    chain = [make(name, ASSETS[i - 1] if i else None) for i, name in enumerate(ASSETS)]
    return Definitions(assets=chain)


def one_run(home: Path, partitions: int) -> tuple[float, int]:
    """Seconds of one in-process run over every partition, and the events it wrote."""
    import warnings

    warnings.filterwarnings("ignore")
    defs = definitions(partitions)
    tags = {
        "dagster/asset_partition_range_start": "0",
        "dagster/asset_partition_range_end": str(partitions - 1),
    }
    with DagsterInstance.from_config(str(home)) as instance:
        started = time.perf_counter()
        # the console logger at INFO, as ``offsetops demo`` runs the main job
        config = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
        result = materialize(list(defs.assets), instance=instance, tags=tags, run_config=config)
        elapsed = time.perf_counter() - started
        assert result.success
        events = len(instance.all_logs(result.run_id))
    return elapsed, events


def measure(label: str, home: Path, partitions: int, repeat: int, batch: int) -> list[dict[str, Any]]:
    """Runs without and with batched writes, alternating (the host's load drifts alike for both)."""
    runs: dict[int, list[tuple[float, int]]] = {0: [], batch: []}
    for _ in range(repeat):
        for size in (0, batch):
            if size:
                os.environ["DAGSTER_EVENT_BATCH_SIZE"] = str(size)
            else:
                os.environ.pop("DAGSTER_EVENT_BATCH_SIZE", None)
            runs[size].append(one_run(home, partitions))
    os.environ.pop("DAGSTER_EVENT_BATCH_SIZE", None)
    return summarize(label, "batch", runs, "events")


def summarize(
    label: str, by: str, runs: dict[Any, list[tuple[float, Any]]], what: str
) -> list[dict[str, Any]]:
    """One row per setting: the median and every run's seconds, and ``what`` the last run counted."""
    return [
        {
            "label": label,
            by: setting,
            "median_s": statistics.median(r[0] for r in got),
            "runs": [round(r[0], 2) for r in got],
            what: got[-1][1],
        }
        for setting, got in runs.items()
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1000, help="DAGSTER_EVENT_BATCH_SIZE of the batched rows")
    ap.add_argument("--no-postgres", action="store_true", help="SQLite only")
    ap.add_argument("--job", choices=("synthetic", "main"), default="synthetic", help="which run to measure")
    ap.add_argument(
        "--settings",
        default="unset,batch",
        help="--job main: comma-separated settings among unset, batch, subset (default unset,batch)",
    )
    args = ap.parse_args(argv)
    if args.partitions < 1 or args.repeat < 1 or args.batch < 1:
        ap.error("--partitions, --repeat and --batch must be at least 1")
    if args.job == "main":
        return main_job(args, ap)
    rows = []
    scratch = Path(tempfile.mkdtemp(prefix="offsetops-dagster-events-"))
    try:
        sqlite_home = write_instance(scratch / "sqlite", "SQLite")
        rows += measure("SQLite", sqlite_home, args.partitions, args.repeat, args.batch)
        if not args.no_postgres:
            rows += postgres_rows(scratch, args)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{args.partitions} partitions, {len(ASSETS)} assets, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| instance storage | DAGSTER_EVENT_BATCH_SIZE | events per run | run s (median) | runs |")
    print("|---|---:|---:|---:|---|")
    for r in rows:
        batch = r["batch"] or "unset"
        print(f"| {r['label']} | {batch} | {r['events']} | {r['median_s']:.2f} | {r['runs']} |")
    return 0


@contextlib.contextmanager
def postgres_env() -> Iterator[bool]:
    """A throwaway PostgreSQL whose ``DAGSTER_PG_*`` variables are set while inside; False without one."""
    from tests.deploy.postgres import postgres_bin_dir, run_postgres

    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        print("PostgreSQL is not installed (Debian's postgresql): SQLite only")
        yield False
        return
    saved = dict(os.environ)
    try:
        with contextlib.contextmanager(run_postgres)(bin_dir) as pg:
            os.environ.update(pg.env())
            yield True
    finally:
        os.environ.clear()
        os.environ.update(saved)


def write_instance(home: Path, storage: str) -> Path:
    """``home`` as a DAGSTER_HOME: the deployment's ``dagster.yaml`` for PostgreSQL, SQLite otherwise."""
    home.mkdir(parents=True)
    if storage == "PostgreSQL":
        shutil.copy2(ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
    else:
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return home


def postgres_rows(scratch: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The same runs on a throwaway PostgreSQL with ``deploy/dagster.yaml``."""
    with postgres_env() as up:
        if not up:
            return []
        home = write_instance(scratch / "postgres", "PostgreSQL")
        return measure("PostgreSQL", home, args.partitions, args.repeat, args.batch)


# -- the real main job ------------------------------------------------------------------------------

CLI = "import sys; from offsetops.cli import main; sys.exit(main(sys.argv[1:]))"
PLANNED_SUBSET = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"


def setting_env(name: str, batch: int) -> dict[str, str]:
    """The Dagster variables of one ``--settings`` entry."""
    return {
        "unset": {},
        "batch": {"DAGSTER_EVENT_BATCH_SIZE": str(batch)},
        "subset": {"DAGSTER_EVENT_BATCH_SIZE": str(batch), PLANNED_SUBSET: "true"},
    }[name]


def offsetops(argv: list[str], env: dict[str, str], log: Path) -> None:
    """One ``offsetops`` command in a process of its own; its output to ``log``, its tail on failure."""
    with log.open("ab") as out:
        rc = subprocess.run([sys.executable, "-c", CLI, *argv], env=env, stdout=out, stderr=out).returncode
    if rc != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise SystemExit(f"offsetops {argv[0]} exited {rc}:\n{tail}")


def run_figures(home: Path) -> tuple[float, float, Counter[str]]:
    """The latest run of the instance in ``home``: seconds from its creation to its start (where Dagster
    writes the planned materializations), from its start to its end, and its events by type."""
    import warnings

    from dagster import DagsterInstance

    warnings.filterwarnings("ignore")
    with DagsterInstance.from_config(str(home)) as instance:
        [record] = instance.get_run_records(limit=1)
        run = record.dagster_run
        stats = instance.get_run_stats(run.run_id)
        kinds = Counter(
            e.dagster_event.event_type_value if e.is_dagster_event else "log message"
            for e in instance.all_logs(run.run_id)
        )
    if run.status.value != "SUCCESS" or stats.start_time is None or stats.end_time is None:
        raise SystemExit(f"the main job's run {run.run_id} ended {run.status.value}")
    planning = stats.start_time - record.create_timestamp.timestamp()
    return planning, stats.end_time - stats.start_time, kinds


def main_job_rows(
    storage: str, scratch: Path, log_dir: Path, args: argparse.Namespace, settings: list[str]
) -> list[dict[str, Any]]:
    """Per setting: a first run (not counted), then ``--repeat`` resumed runs; the settings alternate."""
    runs: dict[str, list[tuple[float, Counter[str]]]] = {s: [] for s in settings}
    planning: dict[str, list[float]] = {s: [] for s in settings}
    demo = ["demo", "--log-dir", str(log_dir), "--partitions", str(args.partitions), "--resume"]
    for round_ in range(args.repeat + 1):
        for name in settings:
            out = scratch / f"{storage}-{name}"
            if round_ == 0:
                write_instance(out / "dagster_home", storage)
            # only this setting's Dagster variables: none inherited from the caller's environment
            inherited = {k: v for k, v in os.environ.items() if k not in setting_env("subset", args.batch)}
            env = {**inherited, **setting_env(name, args.batch)}
            offsetops([*demo, "--out", str(out)], env, scratch / f"{storage}-{name}.log")
            plan_s, seconds, kinds = run_figures(out / "dagster_home")
            print(f"{storage} {name} run {round_}: planned in {plan_s:.2f} s, ran {seconds:.2f} s, "
                  f"{sum(kinds.values())} events", flush=True)  # fmt: skip
            if round_:
                runs[name].append((seconds, kinds))
                planning[name].append(plan_s)
    rows = summarize(storage, "setting", runs, "kinds")
    for row in rows:
        row["planning_s"] = statistics.median(planning[row["setting"]])
    return rows


def main_job(args: argparse.Namespace, ap: argparse.ArgumentParser) -> int:
    """``--job main``: the real main job's events and run seconds per storage and setting."""
    settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    unknown = sorted(set(settings) - {"unset", "batch", "subset"})
    if unknown or not settings:
        ap.error(f"--settings: unknown {unknown or 'empty'} (unset, batch, subset)")
    scratch = Path(tempfile.mkdtemp(prefix="offsetops-dagster-events-"))
    rows: list[dict[str, Any]] = []
    try:
        log_dir = scratch / "logdir"
        simulate = ["simulate", str(log_dir), "--partitions", str(args.partitions), "--groups", "60"]
        simulate += ["--days", "0.25", "--seed", "7", "--segment-bytes", "2MiB", "--kafka-version", "4.2"]
        offsetops(simulate, dict(os.environ), scratch / "simulate.log")
        rows += main_job_rows("SQLite", scratch, log_dir, args, settings)
        if not args.no_postgres:
            with postgres_env() as up:
                if up:
                    rows += main_job_rows("PostgreSQL", scratch, log_dir, args, settings)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print_main_job(rows, args)
    return 0


def print_main_job(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Two tables: run seconds per storage and setting, then events per run by type."""
    print(f"\nthe main job, {args.partitions} partitions, resumed runs, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| instance storage | setting | events per run | created to started s | run s (median) | runs |")
    print("|---|---|---:|---:|---:|---|")
    for r in rows:
        events = sum(r["kinds"].values())
        print(f"| {r['label']} | {r['setting']} | {events} | {r['planning_s']:.2f} | {r['median_s']:.2f} "
              f"| {r['runs']} |")  # fmt: skip
    kinds = sorted({k for r in rows for k in r["kinds"]}, key=lambda k: -max(r["kinds"][k] for r in rows))
    print("\n| event type | " + " | ".join(f"{r['label']} {r['setting']}" for r in rows) + " |")
    print("|---|" + "---:|" * len(rows))
    for k in kinds:
        print(f"| {k} | " + " | ".join(str(r["kinds"][k]) for r in rows) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
