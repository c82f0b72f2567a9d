"""The offsetops code location: one module per domain, merged, with the deployment's resources.

``workspace.yaml`` loads ``defs`` from here. The domains are reload, expiration, cleaner audit,
validation, the topic summary, metrics, following and alerting; which resources they get (local or
cluster) is decided in one place, :func:`offsetops.assets.resources.build_resources`.
"""

from __future__ import annotations

import warnings

from dagster import (
    AssetSelection,
    BetaWarning,
    Definitions,
    PreviewWarning,
    define_asset_job,
    in_process_executor,
)

# BackfillPolicy.single_run() (one run, one Spark job for many partitions) is a beta parameter, and
# partitioned asset checks (one check result per offsets partition) are a preview feature.
warnings.filterwarnings("ignore", category=BetaWarning)
warnings.filterwarnings("ignore", category=PreviewWarning)

from offsetops.assets import (  # noqa: E402
    cleaner_audit,
    expiration,
    follow,
    metrics,
    reload,
    summary,
    validation,
)
from offsetops.assets.alerting import sensors  # noqa: E402
from offsetops.assets.partitions import OFFSETS_PARTITIONS  # noqa: E402
from offsetops.assets.resources import build_resources  # noqa: E402

MAIN_JOB = "offsetops_main_job"

main_job = define_asset_job(
    MAIN_JOB,
    selection=AssetSelection.all(),
    partitions_def=OFFSETS_PARTITIONS,
    description="Every asset and check: inventory, reload, expiration plan, tombstone execution (dry run "
    "unless configured), cleaner audit, validation, topic summary. `offsetops demo` runs this in-process.",
)


DOMAINS = (
    reload.defs,
    expiration.defs,
    cleaner_audit.defs,
    validation.defs,
    summary.defs,
    metrics.defs,
    follow.defs,
    sensors.defs,
)


def all_assets_and_checks() -> list:
    """Every asset and asset check of the domains, without resources (for ``materialize``)."""
    out: list = []
    for d in DOMAINS:
        out += list(d.assets or []) + list(d.asset_checks or [])
    return out


def build_definitions(deployment: str | None = None) -> Definitions:
    """The whole code location with ``deployment``'s resources (default: ``$OFFSETOPS_DEPLOYMENT``)."""
    return Definitions.merge(
        *DOMAINS,
        Definitions(
            jobs=[main_job],
            resources=build_resources(deployment),
            # One process per run: one SparkSession (getOrCreate) serves every step of the run.
            executor=in_process_executor,
        ),
    )


defs = build_definitions()
