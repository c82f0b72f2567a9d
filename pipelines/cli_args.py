"""Command-line arguments of the pipeline jobs, without importing Spark (``offsetops --help`` stays fast).

Shared by ``offsetops pipeline JOB`` and by each job's ``main()`` under ``spark-submit``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from offsetops.coordinator_core.expiration import COORDINATORS, DEFAULT_RETENTION_MS, KIP848
from offsetops.coordinator_core.partitioner import DEFAULT_OFFSETS_PARTITIONS
from offsetops.coordinator_core.records.compression import DEFAULT_MAX_BATCH_BYTES
from offsetops.coordinator_core.sources.logdir import OFFSETS_TOPIC
from offsetops.coordinator_core.sources.ranges import DEFAULT_RANGE_OFFSETS

MODES = ("arrow", "rows")


def script_main(
    prog: str,
    doc: str | None,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    argv: list[str] | None,
) -> int:
    """A job's ``main()`` under ``spark-submit``: its own arguments, parsed, then the job."""
    p = argparse.ArgumentParser(prog=prog, description=(doc or "").strip().splitlines()[0] if doc else None)
    add_arguments(p)
    return run(p.parse_args(argv))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """``--input``, ``--output``, ``--master`` and the Spark/reload knobs every file job takes."""
    p.add_argument("--input", required=True, metavar="PATH", help="broker log dir (local, s3a://, hdfs://)")
    p.add_argument("--output", required=True, metavar="DIR", help="output dir for the Parquet tables")
    _add_spark_arguments(p)
    p.add_argument(
        "--max-batch-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_BATCH_BYTES,
        metavar="N",
        help="largest batch accepted, framed or decompressed (message.max.bytes-style; default 32 MiB)",
    )


def _add_spark_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", help="Spark master URL (default: spark-submit's, else local[*])")
    p.add_argument("--app-name", default=None, help="Spark application name")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="extra Spark setting (repeat)")
    p.add_argument("--partition", type=int, action="append", metavar="N", help="only partition N (repeat)")
    p.add_argument(
        "--partitions-per-task",
        type=int,
        default=None,
        metavar="K",
        help="__consumer_offsets partitions merged per Spark task (default: about 4 tasks per core)",
    )
    p.add_argument(
        "--num-partitions",
        type=_positive_int,
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
        type=_positive_int,
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
        type=int,
        help="evaluate expiry at this time, epoch ms (default: the input's declared clock, else now)",
    )
    p.add_argument(
        "--retention-minutes",
        type=float,
        default=DEFAULT_RETENTION_MS / 60_000,
        help="offsets.retention.minutes (default 10080 = 7 days)",
    )
    p.add_argument(
        "--coordinator", choices=COORDINATORS, default=KIP848, help="legacy (<= 3.x) or kip848 (4.x)"
    )
    p.add_argument("--forecast-hours", type=float, default=24.0, help="forecast horizon (default 24)")


def audit_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)
    p.add_argument(
        "--now-ms",
        type=int,
        help="audit as of this time, epoch ms (default: the input's declared clock, else now)",
    )


def validate_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)
    p.add_argument("--now-ms", type=int, help="upper bound for timestamps, epoch ms (default: now)")


JOB_ARGUMENTS = {
    "reload": reload_arguments,
    "expire": expire_arguments,
    "audit": audit_arguments,
    "validate": validate_arguments,
    "live": live_arguments,
}
