"""Slack alerting for offsetops, free of any orchestrator (Dagster's sensors and Airflow's DAGs both use it).

``model`` (alerts, observations, transitions), ``lifecycle`` (the per-condition state machine),
``evidence`` (the assets' results as observations), ``blocks`` (escaped Block Kit messages),
``notifier`` / ``outbox`` / ``transport`` (time-bounded delivery through a durable outbox) and
``state`` (what is firing, shared by sensor processes). The Dagster sensors are in
``offsetops.assets.alerting``.
"""

from offsetops.checks.alerting.model import SEVERITIES, Alert, SendResult, SendStatus, Severity
from offsetops.checks.alerting.notifier import SlackNotifier

__all__ = ["SEVERITIES", "Alert", "SendResult", "SendStatus", "Severity", "SlackNotifier"]
