"""Command-line arguments of the pipeline jobs, without importing Spark (``offsetops --help`` stays fast).

Shared by ``offsetops pipeline JOB`` and by each job's ``main()`` under ``spark-submit``; the argument
types and options every command shares (``positive_int``, ``--partition``, ``--max-batch-bytes``) are
defined here once, over the core's plain range-checked parsers (``coordinator_core/settings.py``, which
the run model uses for the same settings from the environment and the config file), and the
``offsetops`` command uses them too: a bad value is one line and exit 2 while the command line is parsed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

from offsetops.coordinator_core import settings
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.run import RunSettings, parse_known_broker_version, resolve_options
from offsetops.coordinator_core.settings import COORDINATORS, DEFAULT_RETENTION_MS
from offsetops.coordinator_core.sources.logdir import OFFSETS_TOPIC
from offsetops.coordinator_core.sources.ranges import DEFAULT_RANGE_OFFSETS

MODES = ("arrow", "rows")

T = TypeVar("T")


def argument_type(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse type from a core parser: its ValueError becomes argparse's usage error (exit 2) with
    the parser's own message, rather than argparse's generic "invalid value"."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parse.__name__.removeprefix("parse_")
    return convert


def int_range(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: an integer in ``[minimum, maximum]``."""
    return argument_type(settings.int_in_range(minimum, maximum))


def float_range(minimum: float, maximum: float, *, above_minimum: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in ``[minimum, maximum]`` (``(minimum, maximum]`` if
    ``above_minimum``); NaN and infinities are refused."""
    return argument_type(settings.float_in_range(minimum, maximum, above_minimum=above_minimum))


#: An argparse type: an integer from 1 to 2^63-1 (Kafka's long).
positive_int = argument_type(settings.parse_positive_int)
#: An argparse type: an integer from 0 to 2^63-1 (an offset, an epoch-ms time).
non_negative_int = argument_type(settings.parse_non_negative_int)
#: An argparse type: a finite number >= 0.
non_negative_float = argument_type(settings.parse_non_negative_float)
#: An argparse type: a duration in ms, from 1 ms to 100 years.
duration_ms = argument_type(settings.parse_duration_ms)
#: An argparse type: the offsets retention in ms (up to offsets.retention.minutes' 2^31-1 minutes).
retention_duration_ms = argument_type(settings.parse_retention_ms)
#: An argparse type: offsets.topic.num.partitions (1 to 10,000).
offsets_partitions = argument_type(settings.parse_offsets_partitions)
#: An argparse type: a ``__consumer_offsets`` partition number.
partition_number = argument_type(settings.parse_partition_number)
#: An argparse type: a broker id (node.id / broker.id).
broker_id = argument_type(settings.parse_broker_id)
#: An argparse type: a number of hours, from 0 to 100 years.
hours = argument_type(settings.parse_hours)
#: An argparse type: the expiry forecast's horizon in hours (above 0, at most a leap year).
forecast_hours = argument_type(settings.parse_forecast_hours)
#: An argparse type: the expiry forecast's horizon in ms (above 0, at most a leap year).
forecast_horizon_ms = argument_type(settings.parse_forecast_horizon_ms)
#: An argparse type: a whole number of minutes, from 1 to 100 years.
minutes = argument_type(settings.parse_minutes)
#: An argparse type: an instant in epoch ms, from 1970 to the year 9999.
epoch_ms = argument_type(settings.parse_epoch_ms)
#: An argparse type: a time (epoch ms, ISO-8601, or relative like -2h) from 1970 to the year 9999.
epoch_time = argument_type(settings.parse_epoch_time)
#: An argparse type: ``KEY=VALUE`` with a non-empty key.
key_value = argument_type(settings.parse_key_value)
#: An argparse type: a bounded regular expression, compiled.
bounded_regex = argument_type(settings.parse_bounded_regex)
#: An argparse type: an http(s) URL with a host.
http_url = argument_type(settings.parse_http_url)
#: An argparse type: a share from 0 to 1.
fraction = argument_type(settings.parse_fraction)
# The simulator's knobs (offsetops simulate, offsetops demo).
simulated_groups = int_range(0, 1_000_000)
simulated_days = float_range(0.0, 3650.0, above_minimum=True)


#: An argparse type: a released Kafka version like ``3.9`` or ``4.0.0`` (0.8 up to 4.x).
broker_version = argument_type(parse_known_broker_version)


def add_partition_filter(p: argparse.ArgumentParser) -> None:
    """``--partition N`` (repeat): only these ``__consumer_offsets`` partitions."""
    p.add_argument(
        "--partition", type=partition_number, action="append", metavar="N", help="only partition N (repeat)"
    )


def add_max_batch_bytes(p: argparse.ArgumentParser, *, default: int | None = DEFAULT_MAX_BATCH_BYTES) -> None:
    """``--max-batch-bytes``: the bound on one batch, framed or decompressed (hostile input stops there).

    ``default=None`` leaves it to the run model (``OFFSETOPS_MAX_BATCH_BYTES``, the config file)."""
    p.add_argument(
        "--max-batch-bytes",
        type=argument_type(settings.parse_max_batch_bytes),
        default=default,
        metavar="N",
        help="largest batch accepted, framed or decompressed (message.max.bytes-style; default 32 MiB)",
    )


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
    args = p.parse_args()
    try:
        resolve_job_settings(args)
    except ValueError as exc:  # SettingsError, ClockError: the message names the source
        print(f"{job}.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.exit(int(target.run(args)))


def resolve_job_settings(args: argparse.Namespace) -> RunSettings:
    """The job's run model (:mod:`offsetops.coordinator_core.run`): its flags over ``OFFSETOPS_*``, the
    config file, server.properties and Kafka's defaults; a local ``--input`` declares the clock and the
    broker version. ``offsetops pipeline JOB`` resolves the same way before the job runs."""
    local = getattr(args, "input", None)
    return resolve_options(args, log_dir=local if local and "://" not in local else None)


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """``--input``, ``--output``, ``--master`` and the Spark/reload knobs every file job takes."""
    p.add_argument("--input", required=True, metavar="PATH", help="broker log dir (local, s3a://, hdfs://)")
    p.add_argument("--output", required=True, metavar="DIR", help="output dir for the Parquet tables")
    _add_spark_arguments(p)
    add_max_batch_bytes(p, default=None)


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
        help="offsets.topic.num.partitions, for partition_for checks (default: $OFFSETOPS_NUM_PARTITIONS, "
        "the config file, server.properties, else 50)",
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
    p.add_argument(
        "--allow-unencrypted-secrets",
        action="store_true",
        help="ship the SASL/TLS key password to the executors even when Spark neither authenticates nor "
        "encrypts (spark.authenticate, spark.network.crypto.enabled, spark.io.encryption.enabled); "
        "for test clusters only",
    )


def expire_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)
    p.add_argument(
        "--now-ms",
        type=epoch_ms,
        help="evaluate expiry at this time, epoch ms (default: the input's declared clock, else now)",
    )
    p.add_argument(
        "--retention-minutes",
        type=float_range(0.0, settings.INT32_MAX, above_minimum=True),
        help="offsets.retention.minutes (default: $OFFSETOPS_RETENTION_MINUTES, the config file, "
        f"server.properties, else Kafka's default for the broker version, {DEFAULT_RETENTION_MS // 60_000})",
    )
    p.add_argument(
        "--coordinator",
        choices=COORDINATORS,
        help="legacy (<= 3.x) or kip848 (4.x); default: $OFFSETOPS_COORDINATOR, else the broker version",
    )
    p.add_argument(
        "--forecast-hours",
        type=forecast_hours,
        help="forecast horizon (default: $OFFSETOPS_FORECAST_HOURS, else 24)",
    )


def audit_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)
    p.add_argument(
        "--now-ms",
        type=epoch_ms,
        help="audit as of this time, epoch ms (default: the input's declared clock, else now)",
    )
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="the audit history (audits.jsonl; the --state-dir of `offsetops audit`, the Dagster "
        "deployment's audit history): read to judge the cleaner's progress since the previous audit, and "
        "this audit appended. Without it a stalled cleaner (no progress since the last audit, CRITICAL) "
        "cannot be told from a slow one (DEGRADED)",
    )
    p.add_argument(
        "--no-record",
        action="store_true",
        help="with --state-dir: read the history but do not append this audit",
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
