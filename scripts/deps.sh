#!/usr/bin/env bash
# Installs the Debian 12 packages chime needs, only those that are missing.
# `scripts/deps.sh` for building and running; `scripts/deps.sh test` adds what
# the test suite, fuzzers and benchmarks use.
set -euo pipefail

run_pkgs="build-essential pkg-config libh2o-evloop-dev libwslay-dev libssl-dev
  libjansson-dev libsqlite3-dev libpq-dev libsodium-dev libcurl4-openssl-dev
  libical-dev libhiredis-dev libicu-dev libxml2-dev"
test_pkgs="clang libclang-rt-14-dev libcmocka-dev postgresql redis-server
  python3 python3-dateutil python3-websocket curl wrk sqlite3
  python3-caldav vdirsyncer khal radicale chromium"

want="$run_pkgs"
[ "${1:-}" = "test" ] && want="$want $test_pkgs"
# The browser tests run Playwright under Node; a Node from elsewhere (with its
# own npm) will do, so only a machine with neither gets Debian's.
[ "${1:-}" = "test" ] && ! command -v npm >/dev/null && want="$want nodejs npm"

missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing="$missing $p"
done
# The browser tests' npm packages (playwright-core, pinned by the lockfile),
# installed again only when the lockfile is newer than the install.
web_deps() {
  [ "${1:-}" = "test" ] || return 0
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/web"
  [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ] && return 0
  echo "deps: npm ci in tests/web" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
}
if [ -z "$missing" ]; then web_deps "${1:-}"; exit 0; fi

echo "deps: installing$missing" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# The postgresql package would start a system cluster; tests start their own,
# so keep the packaged service from being started by the install.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >&2
web_deps "${1:-}"
