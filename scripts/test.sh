#!/usr/bin/env bash
# `make test`: set up what the tests need, then run every test (unit, interop, web).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

# The reference implementation (Spark + Iceberg Java, PyIceberg, DuckDB) in its own venv.
# When shared/ is beside the checkout (always in CI) the interop tests must run, not skip.
ORACLE_DIR="$(cd .. && pwd)/shared/tools/iceberg-oracle"
if [ -d "$ORACLE_DIR" ]; then
  FLOE_ORACLE_PY="$("$ORACLE_DIR/setup")" || { echo "iceberg-oracle setup failed" >&2; exit 1; }
  export FLOE_ORACLE_PY FLOE_ORACLE_DIR="$ORACLE_DIR" FLOE_REQUIRE_ORACLE=1
fi

# PostgreSQL for the SQL catalog tests, on loopback. Installed (Debian's `postgresql`) and
# started when missing, which needs root; quick when it already runs. The tests then fail,
# not skip, when it is unreachable. FLOE_TEST_POSTGRES_URL points them at another server.
pg_login() {  # $1: a libpq URI; succeeds when we can log in
  "$PY" -c 'import sys, psycopg; psycopg.connect(sys.argv[1], connect_timeout=5).close()' \
    "$1" >/dev/null 2>&1
}
ensure_postgres() {
  if ! pg_isready -q -h 127.0.0.1 -p 5432 >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "PostgreSQL is not running on 127.0.0.1:5432 (run as root to set it up)" >&2
      return 0
    fi
    if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
      echo "installing PostgreSQL ..." >&2
      { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
          && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >/dev/null \
        || echo "could not install PostgreSQL" >&2
    fi
    for cluster in /etc/postgresql/*/main; do
      version="$(basename "$(dirname "$cluster")")"
      pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    done
    for _ in $(seq 60); do
      pg_isready -q -h 127.0.0.1 -p 5432 >/dev/null 2>&1 && break
      sleep 0.5
    done
  fi
  if pg_login "postgresql://postgres@127.0.0.1:5432/postgres"; then
    return 0  # trust authentication on loopback: the tests' default URL works
  fi
  # A fresh Debian cluster wants passwords on TCP: a test role that may create databases.
  local url="postgresql://floe_test:floe_test@127.0.0.1:5432/postgres"
  if ! pg_login "$url" && [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- psql -qAt -d postgres -c "DO \$\$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'floe_test') THEN
        CREATE ROLE floe_test LOGIN CREATEDB PASSWORD 'floe_test';
      END IF; END \$\$;" >/dev/null || true
  fi
  export FLOE_TEST_POSTGRES_URL="postgresql+psycopg://floe_test:floe_test@127.0.0.1:5432/postgres"
}
if [ -z "${FLOE_TEST_POSTGRES_URL:-}" ]; then ensure_postgres; fi
export FLOE_REQUIRE_POSTGRES=1

# Headless Chromium for the browser tests: Debian's `chromium` (Playwright drives it through
# executable_path; `playwright install` is never used). Installed when missing, which needs
# root (CI runs as root); the tests then fail, not skip, when it cannot start.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" -eq 0 ]; then
  echo "installing Chromium ..." >&2
  { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null \
    || echo "could not install Chromium" >&2
fi
export FLOE_REQUIRE_BROWSER=1

# Apache HttpClient 5 (Debian's jars), which the oracle's stripped Iceberg runtime jar lacks
# and Iceberg Java's REST catalog needs: tests/interop/http_client_jar.py relocates it.
if [ ! -f /usr/share/java/httpcore5-h2.jar ] && [ "$(id -u)" -eq 0 ]; then
  echo "installing Apache HttpClient 5 ..." >&2
  { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libhttpclient5-java \
           libhttpcore5-java; } >/dev/null \
    || echo "could not install Apache HttpClient 5" >&2
fi

# Lint and type-check the metadata core first: seconds, and a failure names the line.
"$PY" -m ruff check floe/
"$PY" -m mypy

mkdir -p test-artifacts
set +e
"$PY" -m pytest "$@"
rc=$?
set -e
# pytest's 5 means "no tests collected": a failure here, never a pass.
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
exit "$rc"
