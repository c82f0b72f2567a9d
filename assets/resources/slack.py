"""``slack``: paging to Slack, with dedupe, an outbox and links to the UI and the operator report."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from dagster import ConfigurableResource, InitResourceContext
from offsetops.assets.resources.state import StateResource
from offsetops.checks.operator_report import REPORT_FILE
from pydantic import Field, PrivateAttr, field_validator

if TYPE_CHECKING:
    from offsetops.checks.alerting import SlackNotifier
    from offsetops.checks.alerting.blocks import AlertLinks

DEFAULT_SLACK_CHANNEL = "#offsetops-alerts"
DEFAULT_DAGSTER_URL = "http://localhost:3000"
ENV_SLACK_TOKEN = "SLACK_BOT_TOKEN"
ENV_SLACK_TOKEN_FILE = "SLACK_BOT_TOKEN_FILE"
log = logging.getLogger(__name__)


class SlackResource(ConfigurableResource):
    """Slack paging: a bot token (from ``SLACK_BOT_TOKEN``), a channel, and dedupe settings.

    A missing or invalid token never fails a run: :class:`~offsetops.checks.alerting.SlackNotifier` logs one
    line and appends the alert to the outbox in the state dir.
    """

    token: str | None = Field(default=None, description="Slack bot token (xoxb-...).")
    token_file: str | None = Field(
        default=None,
        description="A file holding the bot token (a Kubernetes Secret key mounted as a file); read when "
        "the notifier is built, so the token is never part of the resource's config. Used when token is "
        "unset.",
    )
    channel: str = Field(default=DEFAULT_SLACK_CHANNEL, min_length=1)
    base_url: str | None = Field(default=None, description="Slack Web API base URL (tests, proxies).")
    dedupe_window_s: int = Field(default=3600, ge=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    dagster_url: str = Field(default=DEFAULT_DAGSTER_URL, description="Base URL of the Dagster UI.")
    reports_url: str | None = Field(
        default=None,
        description="Base URL where the output dir's reports/ folder is served (web server, object "
        "store); alerts link the operator report there. No link when unset.",
    )
    report_path: str = Field(
        default=REPORT_FILE, min_length=1, description="The operator report, under reports_url."
    )
    budget_s: float = Field(
        default=20, gt=0, le=300, description="Total seconds one evaluation may spend on Slack."
    )
    timeout_s: float = Field(default=10, gt=0, le=120, description="Seconds for one request to Slack.")
    max_retry_after_s: float = Field(
        default=5, ge=0, le=120, description="Longest Retry-After honoured; longer waits outbox instead."
    )

    _notifier: Any = PrivateAttr(default=None)

    @field_validator("base_url", "dagster_url", "reports_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value

    @field_validator("base_url")
    @classmethod
    def _slack_url(cls, value: str | None) -> str | None:
        from offsetops.checks.alerting.transport import check_slack_base_url

        return None if value is None else check_slack_base_url(value)

    @field_validator("channel")
    @classmethod
    def _channel(cls, value: str) -> str:
        if any(c.isspace() for c in value):
            raise ValueError(f"channel {value!r} contains whitespace")
        return value

    def run_url(self, run_id: str) -> str:
        return self.links().run(run_id)

    def links(self) -> AlertLinks:
        """Where alerts link: the Dagster UI (asset partitions, runs) and the operator report."""
        from offsetops.checks.alerting.blocks import AlertLinks

        return AlertLinks(
            dagster_url=self.dagster_url or DEFAULT_DAGSTER_URL,
            reports_url=self.reports_url,
            report_path=self.report_path,
        )

    def _token_from_file(self) -> str | None:
        """The token in ``token_file`` (a regular file of at most 64 KiB), or None without one. An
        unreadable file is logged by name and treated as no token: the alert goes to the outbox."""
        if not self.token_file:
            return None
        from offsetops.coordinator_core.untrusted import read_regular_text

        try:
            return read_regular_text(self.token_file, kind="secret").strip() or None
        except OSError as exc:
            log.warning("Slack token file unreadable (%s); alerts go to the outbox", exc)
            return None

    def notifier(self, state: StateResource) -> SlackNotifier:
        """A :class:`SlackNotifier` whose dedupe state and outbox live in ``state``'s state dir."""
        from offsetops.checks.alerting import SlackNotifier

        base_url = self.base_url
        if base_url and not base_url.endswith("/"):
            base_url += "/"
        return SlackNotifier(
            self.token or self._token_from_file(),
            self.channel,
            base_url=base_url,
            state_path=state.alert_state_file,
            outbox_path=state.outbox_file,
            dedupe_window_s=self.dedupe_window_s,
            max_retries=self.max_retries,
            budget_s=self.budget_s,
            timeout_s=self.timeout_s,
            max_retry_after_s=self.max_retry_after_s,
        )

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if not (self.token or "").strip() and context.log is not None:
            context.log.warning(
                f"{ENV_SLACK_TOKEN} is not set: alerts go to the outbox in the state dir, not to Slack"
            )
