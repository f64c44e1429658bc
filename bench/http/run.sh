#!/usr/bin/env bash
# bench/http: requests/s of chime's /healthz against a bare h2o server (the
# floor: bench/http/bare.c, same library, same loops, nothing on top) and
# Node's http module, plus authenticated GET /v1/me (SQLite).
#
# chime runs with its DEFAULT settings -- the access log on, to stderr
# (here a file, as under a supervisor that keeps logs) -- and a second
# chime with --access-log off shows what the log costs. The three /healthz
# servers are measured in turns, ROUNDS times, so each ratio compares runs
# of the same minute on a shared machine; the medians are printed.
# Usage: bench/http/run.sh [seconds] [connections] [rounds]
# (CHIME=path runs another chime binary, e.g. an older build, the same way.)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-5}; conns=${2:-64}; rounds=${3:-3}
scripts/deps.sh test >/dev/null
make -s build/chime build/bench/bare-h2o
chime=${CHIME:-build/chime}
tmp=$(mktemp -d)
# Four free ports (the machine may be running other servers).
read -r port quiet bare peer < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

"$chime" serve --listen 127.0.0.1:$port --db "sqlite:$tmp/bench.db" 2>"$tmp/chime.log" & pids+=($!)
"$chime" serve --listen 127.0.0.1:$quiet --db "sqlite:$tmp/quiet.db" --access-log off --log-level warn & pids+=($!)
build/bench/bare-h2o $bare "$(nproc)" & pids+=($!)
node bench/http/peer.js $peer & pids+=($!)
for p in $port $quiet $bare $peer; do
  for _ in $(seq 100); do curl -sf localhost:$p/healthz >/dev/null && break; sleep 0.1; done
done

curl -sf -X POST localhost:$port/v1/users -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","name":"Bench","password":"bench password"}' >/dev/null
token=$(curl -sf -X POST localhost:$port/v1/sessions -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","password":"bench password"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')

rps() { wrk -t2 -c"$conns" -d"${secs}s" "$@" | awk '/Requests\/sec/ {print $2}'; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

: >"$tmp/rounds"
for r in $(seq "$rounds"); do
  b=$(rps http://127.0.0.1:$bare/healthz)
  d=$(rps http://127.0.0.1:$port/healthz)
  o=$(rps http://127.0.0.1:$quiet/healthz)
  echo "$b $d $o" >>"$tmp/rounds"
  awk -v b="$b" -v d="$d" -v o="$o" -v r="$r" \
    'BEGIN { printf "round %d: bare %.0f, chime default %.0f (%.2f), chime log off %.0f (%.2f)\n", r, b, d, d / b, o, o / b }'
done
peer_h=$(rps http://127.0.0.1:$peer/healthz)
ours_me=$(rps -H "Authorization: Bearer $token" http://127.0.0.1:$port/v1/me)
lines=$(grep -c ' access id=' "$tmp/chime.log" || true)

echo "machine: $(nproc) cores, $(uname -r); date: $(date -u +%F); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "wrk -t2 -c$conns, ${secs}s per run, $rounds rounds; medians:"
printf '%-44s %12s\n' "bare h2o GET /healthz (req/s)" "$(awk '{print $1}' "$tmp/rounds" | median)"
printf '%-44s %12s\n' "chime default, access log on (req/s)" "$(awk '{print $2}' "$tmp/rounds" | median)"
printf '%-44s %12s\n' "chime --access-log off (req/s)" "$(awk '{print $3}' "$tmp/rounds" | median)"
printf '%-44s %12s\n' "node http GET /healthz (req/s)" "$peer_h"
printf '%-44s %12s\n' "chime GET /v1/me, SQLite (req/s)" "$ours_me"
printf '%-44s %12s\n' "access log lines written" "$lines"
awk '{print $2 / $1}' "$tmp/rounds" | median | awk '{printf "ratio chime default / bare h2o: %.2f\n", $1}'
awk '{print $3 / $1}' "$tmp/rounds" | median | awk '{printf "ratio chime log off / bare h2o: %.2f\n", $1}'
awk -v a="$(awk '{print $2}' "$tmp/rounds" | median)" -v b="$peer_h" \
  'BEGIN { printf "ratio chime default / node: %.2fx\n", a / b }'
