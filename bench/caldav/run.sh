#!/usr/bin/env bash
# bench/caldav: a calendar of 1,000 events (100 recurring) served over
# CalDAV by chime (SQLite, release build) and by Radicale (Debian's, on
# loopback with its own storage folder), the same data put into both
# through PUT. Then PROPFIND Depth 1 getetag, a month calendar-query with
# expand, a calendar-multiget of 100, an initial and an incremental
# sync-collection, each repeated and timed server-side (chime's access log,
# Radicale's "in N seconds" log lines). Prints both and the ratios.
# Usage: bench/caldav/run.sh [repeats]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeats=${1:-20}
scripts/deps.sh test >/dev/null
make -s build/chime
tmp=$(mktemp -d); cport=18095; rport=18096
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

build/chime serve --listen 127.0.0.1:$cport --db "sqlite:$tmp/chime.db" --access-log "$tmp/chime.log" \
  --log-level warn --password-ops 1 --password-mem 8192 & pids+=($!)
for _ in $(seq 100); do curl -sf localhost:$cport/healthz >/dev/null && break; sleep 0.1; done
b=http://127.0.0.1:$cport
curl -sf -X POST $b/v1/users -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","name":"Bench","password":"correct horse"}' >/dev/null
token=$(curl -sf -X POST $b/v1/sessions -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","password":"correct horse"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
app=$(curl -sf -X POST $b/v1/me/app-passwords -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"label":"bench"}' | sed 's/.*"password":"\([^"]*\)".*/\1/')
home=$(curl -sf -X PROPFIND $b/dav/ -u "bench@example.com:$app" -H 'Depth: 0' |
  grep -o '/dav/principals/[0-9a-f]*/' | head -1 | sed 's|principals|calendars|')
curl -sf -X MKCALENDAR "$b${home}bench/" -u "bench@example.com:$app" >/dev/null

cat > "$tmp/radicale.conf" <<EOF
[server]
hosts = 127.0.0.1:$rport
[auth]
type = none
[rights]
type = owner_only
[storage]
filesystem_folder = $tmp/radicale
[logging]
level = info
EOF
radicale -C "$tmp/radicale.conf" >>"$tmp/radicale.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null localhost:$rport/ && break; sleep 0.1; done
curl -sf -X MKCALENDAR "http://127.0.0.1:$rport/bench/cal/" -u bench:x >/dev/null

ours=$(/usr/bin/python3 bench/caldav/bench.py "$b" "${home}bench/" bench@example.com "$app" "$tmp/chime.log" chime "$repeats")
peer=$(/usr/bin/python3 bench/caldav/bench.py "http://127.0.0.1:$rport" /bench/cal/ bench x "$tmp/radicale.log" radicale "$repeats")

echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u +%F)"
echo "chime $(build/chime version 2>/dev/null | head -1), radicale $(radicale --version)"
/usr/bin/python3 - "$ours" "$peer" <<'PY'
import json, sys
ours, peer = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("upload of 1,000 events by PUT: chime %.1f s, radicale %.1f s" % (ours["upload_s"], peer["upload_s"]))
print("first PROPFIND after the upload: chime %.1f ms, radicale %.1f ms"
      % (ours["first_propfind_ms"], peer["first_propfind_ms"]))
print("%-10s %24s %24s %8s  %s" % ("operation", "chime median/p90 ms", "radicale median/p90 ms", "ratio",
                                   "answers (responses, VEVENTs) chime | radicale"))
for op in ("propfind", "query", "multiget", "sync0", "sync1"):
    o, p = ours[op], peer[op]
    print("%-10s %15.2f / %6.2f %15.2f / %6.2f %7.1fx  %d, %d | %d, %d" % (
        op, o["median_ms"], o["p90_ms"], p["median_ms"], p["p90_ms"], p["median_ms"] / max(o["median_ms"], 0.001),
        o["responses"], o["vevents"], p["responses"], p["vevents"]))
PY
