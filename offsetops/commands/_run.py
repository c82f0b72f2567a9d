"""The CLI's adapter of the run model: the flags a command was given, resolved once per run with the
environment, the config file and the broker's own configuration
(:func:`offsetops.coordinator_core.run.resolve_run`).

``offsetops --config FILE --server-properties FILE COMMAND ...`` name the config file and a broker's
``server.properties``; each command's own flags (``--retention-ms``, ``--num-partitions``,
``--semantics``, ``--coordinator``, ``--broker-version``, ``--forecast-hours``, ``--max-batch-bytes``,
``--now``) beat both. After :func:`resolve_args`, those attributes of ``args`` hold the resolved
values, and ``args.run`` the settings with their sources, so every command computes with the same
numbers it reports.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:  # add_run_args is part of the top-level parser, which imports nothing it can avoid
    from typing import Any

    from offsetops.coordinator_core.run import RunSettings


def add_run_args(parser: argparse.ArgumentParser) -> None:
    """The top-level options every command shares: the config file and the broker's server.properties."""
    parser.add_argument(
        "--config",
        dest="settings_file",
        metavar="FILE",
        help="settings file (.properties, Kafka's names: offsets.retention.minutes=120, "
        "offsets.topic.num.partitions=50, offsetops.forecast.hours=24 ...); default $OFFSETOPS_CONFIG. "
        "Flags beat OFFSETOPS_* variables, which beat this file, which beats the broker's configuration",
    )
    parser.add_argument(
        "--server-properties",
        metavar="FILE",
        help="the brokers' server.properties (default $OFFSETOPS_SERVER_PROPERTIES): "
        "offsets.retention.minutes, offsets.topic.num.partitions and inter.broker.protocol.version "
        "from it, where no flag, variable or config file sets them",
    )


def _log_dir(args: argparse.Namespace) -> str | None:
    """The log dir whose declarations (clock, broker version) speak for the run: PATH, else the first
    broker's log dir (``--log-dir`` means data-topic dirs to the group views and the exporter)."""
    if getattr(args, "path", None):
        return str(args.path)
    targets = getattr(args, "targets", None)  # describe: [PATH] GROUP..., PATH first unless live
    if targets and not (getattr(args, "bootstrap", None) or getattr(args, "client_config", None)):
        return str(targets[0])
    if getattr(args, "input", None) and "://" not in str(args.input):
        return str(args.input)  # a pipeline job's log dir
    specs = getattr(args, "broker_log_dirs", None)
    if not specs and getattr(args, "command", None) in ("audit", "broker-scan"):
        specs = getattr(args, "log_dir", None)
    if not specs:
        return None
    first = str(specs[0] if isinstance(specs, list) else specs)
    head, sep, tail = first.partition("=")
    return tail if sep and head.strip().isdigit() else first


def resolve_args(args: argparse.Namespace) -> RunSettings:
    """Resolve the run's settings from ``args`` and write the resolved values back into it."""
    from offsetops.coordinator_core.run import resolve_options

    return resolve_options(
        args,
        log_dir=_log_dir(args),
        config_file=getattr(args, "settings_file", None),
        server_properties=getattr(args, "server_properties", None),
    )


def with_settings(doc: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """``doc`` with the run's ``"settings"`` (each value and its source) added last."""
    run: RunSettings | None = getattr(args, "run", None)
    return doc if run is None else {**doc, "settings": run.to_json()}
