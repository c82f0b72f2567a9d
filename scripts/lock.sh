#!/usr/bin/env bash
# Regenerate the lockfiles from pyproject.toml (run after changing a dependency, commit the result):
#   requirements.lock      what the image installs: offsetops[spark,gx,dagster,deploy]
#   requirements-dev.lock  what CI and `make setup` install: the above plus offsetops[test]
#   deploy/airflow/requirements.lock  Airflow's own environment (deploy/airflow/README.md)
# Pinned for CPython 3.11 on x86_64 Linux, the image's and CI's platform. Needs uv (https://docs.astral.sh/uv/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
common=(--python-version 3.11 --python-platform x86_64-unknown-linux-gnu --custom-compile-command "scripts/lock.sh" -q)
runtime=(--extra spark --extra gx --extra dagster --extra deploy)
uv pip compile pyproject.toml "${runtime[@]}" "${common[@]}" -o requirements.lock
uv pip compile pyproject.toml "${runtime[@]}" --extra test "${common[@]}" -o requirements-dev.lock
uv pip compile deploy/airflow/requirements.in "${common[@]}" -o deploy/airflow/requirements.lock
