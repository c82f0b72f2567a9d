"""Slack alerting for offsetops.

``model`` (alerts, observations, transitions), ``lifecycle`` (the per-condition state machine),
``evidence`` (the assets' results as observations), ``blocks`` (escaped Block Kit messages),
``notifier`` / ``outbox`` / ``transport`` (time-bounded delivery through a durable outbox) and
``state`` (what is firing, shared by sensor processes). ``sensors`` holds the Dagster sensors.
"""

from offsetops.assets.alerting.model import SEVERITIES, Alert, SendResult, SendStatus, Severity
from offsetops.assets.alerting.notifier import SlackNotifier

__all__ = ["SEVERITIES", "Alert", "SendResult", "SendStatus", "Severity", "SlackNotifier"]
