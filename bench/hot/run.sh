#!/usr/bin/env bash
# bench/hot: the hot list at the issue's scale -- 1,000,000 posts in the
# window with 10,000,000 actions -- on SQLite: the recompute's time on one
# core, action ingest over HTTP (likes/s, views/s), GET /v1/hot against
# /healthz in the same run (wrk); and the same data in what a user would
# build instead: (a) a Redis sorted set (ZINCRBY per action, ZREVRANGE 0 49
# to read) and (b) PostgreSQL computing the score with ORDER BY ... LIMIT 50
# per request. Prints the ratios. Options go to bench.py (--posts,
# --actions, --seconds, --conns).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/deps.sh test >/dev/null
make -s build/chime
exec /usr/bin/python3 bench/hot/bench.py "$@"
