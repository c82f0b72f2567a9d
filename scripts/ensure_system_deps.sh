#!/usr/bin/env bash
# Make sure the system packages offsetops' tests need are present:
#   - Java 17+ (PySpark's local SparkSession)
#   - Debian's chromium + chromium-driver (browser checks of Data Docs / the Dagster UI)
#   - Debian's postgresql server binaries (the Dagster-on-Postgres deployment test starts a throwaway
#     cluster with initdb/pg_ctl on a free loopback port; no system-wide cluster is created)
#   - Debian's stunnel4 (the TLS listener in front of the test broker, for the SSL tests)
#   - a C compiler (gcc) and the Python headers, to build the native reload fold
#     (coordinator_core/records/_cfold.c); without them the install falls back to pure Python
# Idempotent: when everything is already there it only runs a few version checks.
# Installs with apt-get (as root, or through sudo when available); `apt-get update` runs at most once.
set -euo pipefail

log() { printf '[system-deps] %s\n' "$*"; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else SUDO="__none__"; fi
fi

missing=()

# Java: `java -version` prints e.g. 'openjdk version "17.0.15"' (or "1.8.0_x" for Java 8) on stderr.
java_major() {
    local v
    v=$(java -version 2>&1 | awk -F '"' '/version/ {print $2; exit}') || return 1
    [ -n "$v" ] || return 1
    case "$v" in
        1.*) echo "$v" | cut -d. -f2 ;;
        *) echo "$v" | cut -d. -f1 ;;
    esac
}
if command -v java >/dev/null 2>&1 && major=$(java_major) && [ "${major:-0}" -ge 17 ]; then
    log "java ${major} present"
else
    log "java 17+ missing (found: $(java -version 2>&1 | head -n1 || echo none))"
    # default-jre-headless is 17 on Debian 12; name 17 explicitly so a newer default cannot surprise Spark.
    missing+=(openjdk-17-jre-headless)
fi

if command -v chromium >/dev/null 2>&1; then
    log "chromium present ($(chromium --version 2>/dev/null | head -n1 || echo 'version unknown'))"
else
    log "chromium missing"
    missing+=(chromium)
fi
if command -v chromedriver >/dev/null 2>&1; then
    log "chromedriver present"
else
    log "chromedriver missing"
    missing+=(chromium-driver)
fi

# The tests run initdb/pg_ctl from /usr/lib/postgresql/<major>/bin themselves.
if compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null; then
    log "postgresql present ($(ls -d /usr/lib/postgresql/*/bin | tr '\n' ' '))"
else
    log "postgresql missing"
    missing+=(postgresql)
    need_pg=1
fi

if command -v stunnel4 >/dev/null 2>&1 || command -v stunnel >/dev/null 2>&1; then
    log "stunnel present"
else
    log "stunnel4 missing"
    missing+=(stunnel4)
fi

if command -v gcc >/dev/null 2>&1; then
    log "gcc present ($(gcc -dumpfullversion 2>/dev/null || gcc -dumpversion))"
else
    log "gcc missing"
    missing+=(gcc libc6-dev)
fi
# The headers of the interpreter that builds the venv: a pyenv or python.org build ships its own,
# Debian's python3 needs python3-dev.
py_include=$("${PYTHON:-python3}" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null || true)
if [ -n "$py_include" ] && [ -f "$py_include/Python.h" ]; then
    log "Python headers present ($py_include)"
else
    log "Python headers missing (no Python.h in ${py_include:-?})"
    missing+=(python3-dev)
fi

if [ ${#missing[@]} -eq 0 ]; then
    log "nothing to install"
    exit 0
fi

if [ "$SUDO" = "__none__" ]; then
    log "ERROR: need to install ${missing[*]} but not root and no sudo" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if [ "${need_pg:-0}" = "1" ] && [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    # Debian's postinst would create and start a "main" cluster on port 5432; nothing here needs it.
    $SUDO mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.conf >/dev/null
fi
log "apt-get update"
$SUDO apt-get update -qq
log "apt-get install ${missing[*]}"
$SUDO apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}" >/dev/null
log "installed: ${missing[*]}"
