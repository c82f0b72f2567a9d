"""The Dagster side of Slack alerting: the sensors, and the evidence they read from the Dagster instance.

The alerts, their lifecycle, messages and delivery are framework-free, in ``offsetops.checks.alerting``.
"""
