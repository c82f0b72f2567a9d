#!/usr/bin/env bash
# Create/refresh the project virtualenv at <repo>/.venv with every extra installed (editable).
# Idempotent and quick on a second run: the install is skipped while pyproject.toml hashes to the
# value recorded in .venv/.offsetops-setup-stamp (set OFFSETOPS_FORCE_SETUP=1 to reinstall anyway).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
STAMP="$VENV/.offsetops-setup-stamp"
PYTHON="${PYTHON:-python3}"

log() { printf '[setup] %s\n' "$*"; }

if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV with $($PYTHON --version 2>&1)"
    "$PYTHON" -m venv "$VENV"
fi

# The stamp covers what decides the install: pyproject.toml and the interpreter version.
want="$(cat pyproject.toml | sha256sum | cut -d' ' -f1) $("$VENV/bin/python" -c 'import sys; print(sys.version.split()[0])')"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [ "$want" = "$have" ] && [ "${OFFSETOPS_FORCE_SETUP:-0}" != "1" ]; then
    log "venv up to date (pyproject unchanged); skipping install"
    exit 0
fi

log "upgrading pip"
"$VENV/bin/python" -m pip install -qq --disable-pip-version-check --upgrade pip
log "pip install -e '.[all]'"
"$VENV/bin/python" -m pip install -qq --disable-pip-version-check -e '.[all]'
printf '%s\n' "$want" > "$STAMP"
log "done"
