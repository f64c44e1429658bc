#!/usr/bin/env bash
# bench/http: requests/s of chime's /healthz and authenticated GET /v1/me
# (SQLite), with wrk, against Node's http module serving the same /healthz.
# Usage: bench/http/run.sh [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}; conns=${2:-100}
scripts/deps.sh test >/dev/null
make -s build/chime
tmp=$(mktemp -d); port=18080; peer=19099
cleanup() { kill "$pid" "$ppid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

build/chime serve --listen 127.0.0.1:$port --db "sqlite:$tmp/bench.db" --access-log off \
  --log-level warn & pid=$!
node bench/http/peer.js $peer & ppid=$!
for _ in $(seq 100); do curl -sf localhost:$port/healthz >/dev/null && curl -sf localhost:$peer/healthz >/dev/null && break; sleep 0.1; done

curl -sf -X POST localhost:$port/v1/users -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","name":"Bench","password":"bench password"}' >/dev/null
token=$(curl -sf -X POST localhost:$port/v1/sessions -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","password":"bench password"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')

rps() { wrk -t2 -c"$conns" -d"${secs}s" "$@" | awk '/Requests\/sec/ {print $2}'; }

ours_h=$(rps http://127.0.0.1:$port/healthz)
peer_h=$(rps http://127.0.0.1:$peer/healthz)
ours_me=$(rps -H "Authorization: Bearer $token" http://127.0.0.1:$port/v1/me)

echo "machine: $(nproc) cores, $(uname -r); date: $(date -u +%F)"
printf '%-34s %12s\n' "chime GET /healthz (req/s)" "$ours_h"
printf '%-34s %12s\n' "node http GET /healthz (req/s)" "$peer_h"
printf '%-34s %12s\n' "chime GET /v1/me, SQLite (req/s)" "$ours_me"
awk -v a="$ours_h" -v b="$peer_h" 'BEGIN { printf "ratio chime/node on /healthz: %.2fx\n", a / b }'
