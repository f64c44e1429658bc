#!/usr/bin/env bash
# bench/feed: chime's feed (one node, SQLite, release build, default feed
# options) on a 100,000-user power-law follow graph, against (a) Mastodon's
# home-feed design (a Redis sorted set per user; ZADD per follower on post,
# trim at 400; ZREVRANGE + MGET to read) driven by a Python worker on
# Debian's redis-server, its follows and posts in PostgreSQL, and (b) plain
# fan-out on read on PostgreSQL (WHERE author IN (followees) ORDER BY id
# DESC LIMIT 20), on the same graph and posts. The graph is written into
# each store with SQL (graph.py), not through the API.
# Prints the settings, the machine, the load average and the ratios.
# Options go to bench.py (--seconds, --posts, --interval, --burst, --reads,
# --only chime|peers, --keep).
set -euo pipefail
cd "$(dirname "$0")/../.."

# wrk, redis-server and PostgreSQL come with the test dependencies (the
# script keeps PostgreSQL's system cluster from starting); the peers'
# Python worker needs the two client libraries on top.
scripts/deps.sh test >/dev/null
make -s build/chime
need=()
for p in python3-redis python3-psycopg2; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q "${need[@]}" >/dev/null
fi
exec /usr/bin/python3 bench/feed/bench.py "$@"
