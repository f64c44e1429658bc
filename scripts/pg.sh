#!/usr/bin/env bash
# Throwaway PostgreSQL for tests and benchmarks, on a private Unix socket.
#   scripts/pg.sh start DIR   -> initdb + start; prints the connection URI
#   scripts/pg.sh stop DIR
# PostgreSQL refuses to run as root, so as root the cluster belongs to the
# `postgres` system user; the superuser inside the cluster is `chime`, with
# trust authentication on the socket (nothing listens on TCP).
# Tests run it without fsync; PG_DURABLE=1 keeps PostgreSQL's durable
# defaults (fsync, synchronous commit) and gives it 512 MB of shared
# buffers, for benchmarks.
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?directory}
bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case $cmd in
start)
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  chmod 700 "$dir"
  as_pg "$bindir/initdb" -D "$dir/data" -U chime --auth=trust -E UTF8 \
    --locale=C.UTF-8 >"$dir/initdb.log" 2>&1
  opts="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  [ "${PG_DURABLE:-0}" = 1 ] && opts="-c shared_buffers=512MB -c max_wal_size=4GB"
  as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o \
    "-c listen_addresses='' -c unix_socket_directories='$dir' $opts -c max_connections=300" \
    start >/dev/null
  chmod 755 "$dir"
  echo "postgresql://chime@/postgres?host=$dir"
  ;;
stop)
  [ -d "$dir/data" ] && as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
