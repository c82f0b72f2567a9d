"""The names of the assets the checks and the alerts watch, defined once, free of any orchestrator.

``checks/dagster_checks.py`` and the Dagster assets use them as asset keys; Slack alerting (run by
Dagster's sensors and by Airflow's DAGs alike) names them in its observations.
"""

VALIDATION_ASSET = "cache_validation"
AUDIT_ASSET = "cleaner_audit"
EXPIRATION_ASSET = "expiration_plan"
SUMMARY_ASSET = "offsets_topic_summary"
