#!/usr/bin/env bash
# Create/refresh the project virtualenv at <repo>/.venv: the pinned dependencies from
# requirements-dev.lock (scripts/lock.sh writes it from pyproject.toml), then offsetops itself,
# editable and without dependencies, so nothing unpinned slips in. Plain pip is enough.
# Idempotent and quick on a second run: the install is skipped while pyproject.toml and the lockfile
# hash to the value recorded in .venv/.offsetops-setup-stamp (OFFSETOPS_FORCE_SETUP=1 reinstalls).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
STAMP="$VENV/.offsetops-setup-stamp"
LOCK="$ROOT/requirements-dev.lock"
PYTHON="${PYTHON:-python3}"

log() { printf '[setup] %s\n' "$*"; }

if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV with $($PYTHON --version 2>&1)"
    "$PYTHON" -m venv "$VENV"
fi

# The stamp covers what decides the install: pyproject.toml, the lockfile and the interpreter version.
want="$(cat pyproject.toml "$LOCK" | sha256sum | cut -d' ' -f1) $("$VENV/bin/python" -c 'import sys; print(sys.version.split()[0])')"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [ "$want" = "$have" ] && [ "${OFFSETOPS_FORCE_SETUP:-0}" != "1" ]; then
    log "venv up to date (pyproject.toml and lockfile unchanged); skipping install"
    exit 0
fi

log "upgrading pip"
"$VENV/bin/python" -m pip install -qq --disable-pip-version-check --upgrade pip
log "pip install -r $(basename "$LOCK")"
"$VENV/bin/python" -m pip install -qq --disable-pip-version-check -r "$LOCK"
log "pip install -e . --no-deps"
"$VENV/bin/python" -m pip install -qq --disable-pip-version-check --no-deps -e .
printf '%s\n' "$want" > "$STAMP"
log "done"
