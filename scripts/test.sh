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

mkdir -p test-artifacts
set +e
"$PY" -m pytest "$@"
rc=$?
set -e
# pytest's 5 means "no tests collected": a failure here, never a pass.
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
exit "$rc"
