#!/usr/bin/env bash
# pyright over the code as it is installed. setup.py maps the product folders under one namespace
# (coordinator_core/ -> offsetops.coordinator_core, likewise pipelines, checks, assets), which an
# editable install resolves at import time only; pyright reads files. So this builds that layout as a
# view of hard links under build/typecheck/offsetops/ (a copy where hard links cannot be made), runs
# pyright on it with every first-party import resolved, and prints the findings with repository paths.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VIEW="$ROOT/build/typecheck"
PYRIGHT="${PYRIGHT:-$ROOT/.venv/bin/pyright}"

rm -rf "$VIEW"
mkdir -p "$VIEW"
link_tree() { cp -al "$1" "$2" 2>/dev/null || { rm -rf "$2"; cp -a "$1" "$2"; }; }
link_tree "$ROOT/offsetops" "$VIEW/offsetops"
for package in coordinator_core pipelines checks assets; do
    link_tree "$ROOT/$package" "$VIEW/offsetops/$package"
done
find "$VIEW" -name __pycache__ -prune -exec rm -rf {} +

cd "$ROOT"
"$PYRIGHT" "$@" 2>&1 | sed -E \
    -e "s#$VIEW/offsetops/(coordinator_core|pipelines|checks|assets)/#\\1/#g" \
    -e "s#$VIEW/offsetops/#offsetops/#g"
