"""``offsetops pipeline reload|expire|audit|validate|live``: the Spark jobs (``pipelines/``, and the
validation job of ``checks/``, which runs the Great Expectations suites).

Each job runs on embedded ``local[*]`` Spark unless ``--master`` names a cluster. Spark is imported
only when a pipeline command runs, so the other subcommands stay fast.
"""

from __future__ import annotations

import argparse
import importlib

from offsetops.pipelines.cli_args import JOB_ARGUMENTS, job_module

JOBS = {
    "reload": "rebuild the coordinator cache with Spark and write it as Parquet tables",
    "expire": "plan the offset/group tombstones of one cleanup pass, as Parquet tables",
    "audit": "audit Log Cleaner health per partition, as Parquet tables",
    "validate": "run the Great Expectations suite and write Data Docs under OUTPUT/reports/",
    "live": "rebuild the coordinator cache from a live cluster, fetched and folded on the Spark executors",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pipeline",
        description="Spark jobs over a broker log dir on any Hadoop-compatible path (local, s3a://, "
        "hdfs://), or (live) a cluster read over the Kafka protocol by the executors. Local[*] Spark by "
        "default; --master spark://..., yarn or k8s://... for a cluster.",
    )
    jobs = p.add_subparsers(dest="job", metavar="JOB")
    jobs.required = True
    for name, help_text in JOBS.items():
        jp = jobs.add_parser(name, help=help_text, description=help_text)
        jp.set_defaults(func=_runner(name), _job=name)
        JOB_ARGUMENTS[name](jp)


def _runner(name: str):
    def run(args: argparse.Namespace) -> int:
        module = importlib.import_module(job_module(name))
        return int(module.run(args))

    return run
