"""Command-line arguments of the pipeline jobs, without importing Spark (``offsetops --help`` stays fast).

Shared by ``offsetops pipeline JOB`` and by each job's ``main()`` under ``spark-submit``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from offsetops.coordinator_core.expiration import COORDINATORS, DEFAULT_RETENTION_MS, KIP848
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.settings import (
    MAX_DURATION_MS,
    add_max_batch_bytes,
    add_partition_filter,
    epoch_ms,
    float_range,
    hours,
    key_value,
    offsets_partitions,
    positive_int,
)
from offsetops.coordinator_core.sources.logdir import OFFSETS_TOPIC
from offsetops.coordinator_core.sources.ranges import DEFAULT_RANGE_OFFSETS

MODES = ("arrow", "rows")


def job_module(job: str) -> str:
    """The importable name of a job's module (``offsetops.pipelines.reload``)."""
    return "offsetops." + JOB_SCRIPTS[job].removesuffix(".py").replace("/", ".")


def submit_main(job: str) -> NoReturn:
    """A job file run by ``spark-submit``: parse the job's arguments and run its module's ``run``.

    The module is imported by name rather than run as ``__main__``: Spark pickles the job's functions
    by module name, so the executors must find them in the ``--py-files`` zip.
    """
    target = importlib.import_module(job_module(job))
    doc = (target.__doc__ or "").strip().splitlines()
    p = argparse.ArgumentParser(prog=f"{job}.py", description=doc[0] if doc else None)
    JOB_ARGUMENTS[job](p)
    sys.exit(int(target.run(p.parse_args())))


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """``--input``, ``--output``, ``--master`` and the Spark/reload knobs every file job takes."""
    p.add_argument("--input", required=True, metavar="PATH", help="broker log dir (local, s3a://, hdfs://)")
    p.add_argument("--output", required=True, metavar="DIR", help="output dir for the Parquet tables")
    _add_spark_arguments(p)
    add_max_batch_bytes(p)


def _add_spark_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", help="Spark master URL (default: spark-submit's, else local[*])")
    p.add_argument("--app-name", default=None, help="Spark application name")
    p.add_argument(
        "--conf", type=key_value, action="append", metavar="KEY=VALUE", help="extra Spark setting (repeat)"
    )
    add_partition_filter(p)
    p.add_argument(
        "--partitions-per-task",
        type=positive_int,
        default=None,
        metavar="K",
        help="__consumer_offsets partitions merged per Spark task (default: about 4 tasks per core)",
    )
    p.add_argument(
        "--num-partitions",
        type=offsets_partitions,
        default=DEFAULT_OFFSETS_PARTITIONS,
        help="offsets.topic.num.partitions, for partition_for checks (default 50)",
    )
    p.add_argument("--no-verify-crc", action="store_true", help="skip batch CRC checks")


def reload_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)
    p.add_argument("--mode", choices=MODES, default="arrow", help="arrow (mapInArrow, default) or rows (RDD)")
    p.add_argument("--strict", action="store_true", help="exit 1 if any decode error was found")


def live_arguments(p: argparse.ArgumentParser) -> None:
    """The live job: a cluster instead of ``--input``; the same Spark knobs."""
    p.add_argument(
        "--bootstrap", metavar="HOST:PORT", help="the cluster (or bootstrap.servers of --client-config)"
    )
    p.add_argument(
        "--client-config",
        metavar="FILE",
        help="Kafka client.properties (bootstrap.servers, security.protocol, SASL, TLS); OFFSETOPS_* "
        "variables fill what it leaves out. The executors use the same settings; TLS files must exist "
        "at the same paths on them",
    )
    p.add_argument("--topic", default=OFFSETS_TOPIC, help=argparse.SUPPRESS)
    p.add_argument("--output", required=True, metavar="DIR", help="output dir for the Parquet tables")
    _add_spark_arguments(p)
    p.add_argument(
        "--max-range-offsets",
        type=positive_int,
        default=DEFAULT_RANGE_OFFSETS,
        metavar="N",
        help=f"cut partitions into fetch ranges of at most N offsets, one Spark task each "
        f"(default {DEFAULT_RANGE_OFFSETS})",
    )
    p.add_argument("--strict", action="store_true", help="exit 1 if any decode error was found")


def expire_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)
    p.add_argument(
        "--now-ms",
        type=epoch_ms,
        help="evaluate expiry at this time, epoch ms (default: the input's declared clock, else now)",
    )
    p.add_argument(
        "--retention-minutes",
        type=float_range(0.0, MAX_DURATION_MS / 60_000, above_minimum=True),
        default=DEFAULT_RETENTION_MS / 60_000,
        help="offsets.retention.minutes (default 10080 = 7 days)",
    )
    p.add_argument(
        "--coordinator", choices=COORDINATORS, default=KIP848, help="legacy (<= 3.x) or kip848 (4.x)"
    )
    p.add_argument("--forecast-hours", type=hours, default=24.0, help="forecast horizon (default 24)")


def audit_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)
    p.add_argument(
        "--now-ms",
        type=epoch_ms,
        help="audit as of this time, epoch ms (default: the input's declared clock, else now)",
    )


def validate_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)
    p.add_argument("--now-ms", type=epoch_ms, help="upper bound for timestamps, epoch ms (default: now)")


JOB_ARGUMENTS = {
    "reload": reload_arguments,
    "expire": expire_arguments,
    "audit": audit_arguments,
    "validate": validate_arguments,
    "live": live_arguments,
}

JOB_SCRIPTS = {
    "reload": "pipelines/reload.py",
    "expire": "pipelines/expire.py",
    "audit": "pipelines/audit.py",
    # It runs the Great Expectations suites of checks/, a layer above the Spark jobs.
    "validate": "checks/validate_job.py",
    "live": "pipelines/live.py",
}
"""The file ``spark-submit`` runs for each job, relative to the source tree."""
