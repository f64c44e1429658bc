#!/usr/bin/env bash
# bench/jobs: 10,000 cron jobs with second-level schedules on 3 nodes --
# chime's scheduler on a shared PostgreSQL, then BullMQ job schedulers
# (npm) on Debian's redis-server. Prints start lateness (median, p99) and
# the load per node. Options go to bench.py (--jobs, --every, --nodes,
# --seconds, --only chime|bullmq, --bin PATH). CHIME_BIN=path (or --bin)
# runs that chime binary instead of build/chime, for A/B runs of two builds;
# with CHIME_BIN set, build/chime is not built.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/deps.sh test >/dev/null
[ -n "${CHIME_BIN:-}" ] || make -s build/chime
[ -d bench/jobs/node_modules/bullmq ] || (cd bench/jobs && npm install --no-audit --no-fund >/dev/null)
exec /usr/bin/python3 bench/jobs/bench.py "$@"
