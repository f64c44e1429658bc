#!/usr/bin/env bash
# bench/calendar: a user with 500 events (100 recurring, some since 2015)
# and 20 invitations; the November 2026 month view (GET /v1/events) on
# SQLite. Server-side latency from the access log (median, p99), requests/s
# with wrk, and the python-dateutil month view over the same events as the
# peer. Usage: bench/calendar/run.sh [seconds [history [invited]]]: history
# adds that many single events in 2016-2025 (none in the month viewed), to
# show what a long past costs a month view; invited adds that many such
# events organized by the other user with this one invited (past meetings).
# CHIME_BIN=path runs that chime binary instead of building and running
# build/chime (for A/B runs of two builds); the measurement is the same.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
history=${2:-0}
invited=${3:-0}
scripts/deps.sh test >/dev/null
bin=${CHIME_BIN:-build/chime}
[ -n "${CHIME_BIN:-}" ] || make -s build/chime
tmp=$(mktemp -d); port=18090
cleanup() { kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
"$bin" serve --listen 127.0.0.1:$port --db "sqlite:$tmp/bench.db" --access-log "$tmp/access.log" \
  --log-level warn --password-ops 1 --password-mem 8192 & pid=$!
for _ in $(seq 100); do curl -sf localhost:$port/healthz >/dev/null && break; sleep 0.1; done
token=$(/usr/bin/python3 bench/calendar/seed.py $port "$tmp" "$history" "$invited")
url="http://127.0.0.1:$port/v1/events?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z&max_results=2500"
items=$(curl -sf "$url" -H "Authorization: Bearer $token" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')

: > "$tmp/access.log"
wrk -t1 -c1 -d"${secs}s" -H "Authorization: Bearer $token" "$url" >/dev/null
read -r median p99 <<<"$(grep -o 'GET /v1/events?from[^ ]* 200 [0-9]*B [0-9.]*ms' "$tmp/access.log" |
  awk '{sub("ms","",$5); print $5}' | sort -n | awk '{a[NR]=$1} END {print a[int(NR/2)+1], a[int(NR*0.99)]}')"
# The same with the default page (250 items), what a client sees first.
: > "$tmp/access.log"
wrk -t1 -c1 -d"${secs}s" -H "Authorization: Bearer $token" "${url%&max_results=2500}" >/dev/null
read -r pmedian pp99 <<<"$(grep -o 'GET /v1/events?from[^ ]* 200 [0-9]*B [0-9.]*ms' "$tmp/access.log" |
  awk '{sub("ms","",$5); print $5}' | sort -n | awk '{a[NR]=$1} END {print a[int(NR/2)+1], a[int(NR*0.99)]}')"
rps=$(wrk -t2 -c32 -d"${secs}s" -H "Authorization: Bearer $token" "$url" | awk '/Requests\/sec/ {print $2}')
peer=$(/usr/bin/python3 bench/calendar/peer.py "$tmp/events.json" "$secs")

echo "machine: $(nproc) cores, $(uname -r); date: $(date -u +%F)"
echo "month view: $items items from $((520 + history + invited)) events ($history of them past ones, $invited past invitations)"
printf 'chime server-side latency: median %s ms, p99 %s ms (SQLite, one connection)\n' "$median" "$p99"
printf 'chime first page (250 items): median %s ms, p99 %s ms\n' "$pmedian" "$pp99"
printf 'chime throughput: %s req/s (wrk -t2 -c32)\n' "$rps"
echo "peer (python-dateutil, in process): $peer"
/usr/bin/python3 - "$median" "$peer" <<'PY'
import json, sys
ours = float(sys.argv[1]); peer = json.loads(sys.argv[2])
print("ratio peer/chime median latency: %.1fx" % (peer["median_ms"] / ours))
PY
