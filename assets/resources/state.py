"""``state``: where offsetops writes its reports, tables, alert state and journals."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource
from offsetops.checks.alerting.follow import FOLLOW_PLANS
from pydantic import Field

DEFAULT_OUTPUT_DIR = "out/demo"


class StateResource(ConfigurableResource):
    """Where offsetops writes: reports (Data Docs, audit, plan), Parquet tables and its own state."""

    output_dir: str = Field(default=DEFAULT_OUTPUT_DIR, min_length=1, description="Reports and tables.")
    state_dir: str | None = Field(
        default=None, description="Alert state, outbox, journals; output_dir/state."
    )
    tables_uri: str | None = Field(
        default=None, description="Where the reload tables go (file path or s3a://...); output_dir/tables."
    )

    @property
    def output_path(self) -> Path:
        return Path(self.output_dir).absolute()

    @property
    def state_path(self) -> Path:
        return Path(self.state_dir).absolute() if self.state_dir else self.output_path / "state"

    @property
    def reports_path(self) -> Path:
        """Every human-readable report lives here (``offsetops.checks.suite`` writes Data Docs below)."""
        return self.output_path / "reports"

    @property
    def tables_location(self) -> str:
        return self.tables_uri.rstrip("/") if self.tables_uri else str(self.output_path / "tables")

    def table_location(self, table: str) -> str:
        return f"{self.tables_location}/{table}"

    @property
    def alert_state_file(self) -> Path:
        return self.state_path / "alerts" / "state.json"

    @property
    def outbox_file(self) -> Path:
        return self.state_path / "alerts" / "outbox.jsonl"

    @property
    def journal_dir(self) -> Path:
        return self.state_path / "tombstone-journals"

    @property
    def audit_history_dir(self) -> Path:
        return self.state_path / "cleaner-audit"

    @property
    def resume_dir(self) -> Path:
        """Each ``__consumer_offsets`` partition's resume state (``offsetops.coordinator_core.resume``)."""
        return self.state_path / "resume"

    @property
    def expiration_plans_dir(self) -> Path:
        """Each partition's latest ``expiration_plan`` (what the tombstone execution replays)."""
        return self.state_path / "expiration"

    @property
    def follow_plans_dir(self) -> Path:
        """Each partition's plan as the ``offsets_follow`` sensor last saw it (alert evidence only)."""
        return self.state_path / FOLLOW_PLANS

    def ensure(self) -> None:
        for path in (self.reports_path, self.state_path):
            path.mkdir(parents=True, exist_ok=True)
