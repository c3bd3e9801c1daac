#!/usr/bin/env bash
# Install Azurite (the Azure Blob Storage emulator the object-store tests start) from the npm
# packages pinned in scripts/azurite/package-lock.json, once, into the user's cache; print the
# directory that holds its node_modules. Quick when already installed: the directory is named
# by the lock file's hash, so a changed lock installs anew. Needs node (20 or later) and npm.
set -euo pipefail
cd "$(dirname "$0")/azurite"
hash="$(sha256sum package-lock.json | cut -c1-12)"
root="${XDG_CACHE_HOME:-$HOME/.cache}/floe"
dir="$root/azurite-$hash"
if [ ! -f "$dir/node_modules/azurite/dist/src/blob/main.js" ]; then
  command -v npm >/dev/null || { echo "npm is not installed: Azurite needs node and npm" >&2; exit 1; }
  mkdir -p "$root"
  work="$(mktemp -d "$root/azurite-install.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  cp package.json package-lock.json "$work/"
  echo "installing Azurite into $dir ..." >&2
  # --ignore-scripts: Azurite and its dependencies need no install script
  (cd "$work" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
  # whole or not at all: a killed install leaves no half directory; when another install
  # finished first, its directory stays (a test run may be using it) and ours goes
  [ -f "$dir/node_modules/azurite/dist/src/blob/main.js" ] || rm -rf "$dir"
  mv -T "$work" "$dir" 2>/dev/null || rm -rf "$work"
  trap - EXIT
fi
echo "$dir"
