"""Slack alerting for offsetops: alerts, deduplication, recovery messages and a local outbox.

Pure library code (no Dagster here); the sensors in ``assets/`` build :class:`Alert`\\ s and call
:meth:`SlackNotifier.send` / :meth:`SlackNotifier.reconcile`.
"""

from assets.alerting.model import SEVERITIES, Alert, SendResult, SendStatus, Severity
from assets.alerting.notifier import SlackNotifier

__all__ = ["SEVERITIES", "Alert", "SendResult", "SendStatus", "Severity", "SlackNotifier"]
