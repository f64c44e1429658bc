#!/usr/bin/env bash
# bench/reminders: 1,000,000 in-app reminders due within one minute, fired by
# chime on one node with SQLite; with --pg URI, on --nodes N nodes sharing
# PostgreSQL; --kill-at S SIGKILLs node 0 S seconds in and restarts it after
# --downtime. --method webhook delivers to a local webhook receiver
# (receiver.c, or receiver.js with --receiver node) instead of the in-app inbox. Prints fired/s and lateness
# (median, p99, max). Options go to bench.py (--reminders, --seconds,
# --workers, --window, --only chime|bullmq, --method push|webhook).
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s build/chime build/bench/receiver
[ -d bench/reminders/node_modules/bullmq ] || (cd bench/reminders && npm install --no-audit --no-fund >/dev/null)
exec /usr/bin/python3 bench/reminders/bench.py "$@"
