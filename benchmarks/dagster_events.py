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
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
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
    return [
        {
            "label": label,
            "batch": size,
            "median_s": statistics.median(r[0] for r in got),
            "runs": [round(r[0], 2) for r in got],
            "events": got[-1][1],
        }
        for size, got in runs.items()
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1000, help="DAGSTER_EVENT_BATCH_SIZE of the batched rows")
    ap.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = ap.parse_args(argv)
    rows = []
    scratch = Path(tempfile.mkdtemp(prefix="offsetops-dagster-events-"))
    try:
        sqlite_home = scratch / "sqlite"
        sqlite_home.mkdir()
        (sqlite_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
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


def postgres_rows(scratch: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The same runs on a throwaway PostgreSQL with ``deploy/dagster.yaml``."""
    from contextlib import contextmanager

    from tests.deploy.postgres import postgres_bin_dir, run_postgres

    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        print("PostgreSQL is not installed (Debian's postgresql): SQLite only")
        return []
    home = scratch / "postgres"
    home.mkdir()
    shutil.copy2(ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
    rows = []
    with contextmanager(run_postgres)(bin_dir) as pg:
        os.environ.update(pg.env())
        rows += measure("PostgreSQL", home, args.partitions, args.repeat, args.batch)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
