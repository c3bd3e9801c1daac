#!/usr/bin/env bash
# Rebuild frontend/static/floe/plotly-partial.min.js, the plotly.js the site serves: its
# core plus the traces the site draws (scripts/plotly/entry.js), from the npm packages pinned
# in scripts/plotly/package-lock.json. Needs node (20 or later) and npm; the output is
# committed, so running the site needs neither. The same lock file builds the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/frontend/static/floe/plotly-partial.min.js"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp scripts/plotly/package.json scripts/plotly/package-lock.json scripts/plotly/entry.js \
   scripts/plotly/build.mjs "$work/"
cd "$work"
# --ignore-scripts: no package needs its install script here (esbuild finds its binary
# package without it)
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
node build.mjs "$out"
echo "$(wc -c < "$out") bytes, $(gzip -9 -c "$out" | wc -c) gzipped: $out"
