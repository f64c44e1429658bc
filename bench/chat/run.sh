#!/usr/bin/env bash
# bench/chat: chime's chat (SQLite, every message durable before its 201)
# against ejabberd 23.01 from Debian over its XMPP WebSocket endpoint
# (RFC 7395), without an archive and with mod_mam on SQLite, with the same
# load client (chatload.c, one epoll loop), counts and pattern:
#   - 10,000 idle WebSocket connections, then as many as the server process
#     may hold: count and server RSS per connection;
#   - 1,000 pairs exchanging 1:1 messages at 200/s, then 5,000/s: send ->
#     push (chime's sync frame) and send -> pulled (the message in the
#     receiver's /v1/sync; for XMPP the stanza itself), median and p99;
#   - a 500-member group / MUC room: time until the last member has it.
# Prints the settings, the machine, the load average and the ratios.
# Options go to bench.py (--users, --idle, --no-max, --pairs, --rates,
# --seconds, --rounds, --repeat, --only chime|ejabberd, --phases, --keep,
# --reminders N: N in-app reminders due during each of chime's pairs
# phases, fired by the same process into the same database; their
# lateness is printed beside the chat's).
# Each server runs all its phases back to back, one server at a time.
# CHIME_BIN=path runs another chime build (A/B runs; it is not rebuilt);
# CHATLOAD_BIN=path another load client build.
# CHIME_ARGS="--flag value ..." adds flags to chime (printed as not the
# defaults).
# CHATLOAD_DUMP=prefix writes a line a message, a file a pairs phase (after
# a "# t0_monotonic_ms" line: the first send on CLOCK_MONOTONIC), and a line
# a round for the group phase.
set -euo pipefail
cd "$(dirname "$0")/../.."

# What it needs: chime and the client, ejabberd and the SQLite driver for
# its archive (installed behind a policy-rc.d so that Debian does not start
# the system's ejabberd service), sqlite3 to load ejabberd's schema.
scripts/deps.sh >/dev/null
make -s build/chime build/bench/chatload
need=()
for p in ejabberd erlang-p1-sqlite3 sqlite3; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made_policy=1
  fi
  rc=0
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${need[@]}" >/dev/null || rc=$?
  [ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ "$rc" = 0 ] || { echo "bench/chat: apt-get install ${need[*]} failed" >&2; exit 1; }
fi

# File descriptors: one per connection on each side. Raise the soft limit
# to the hard one, and the hard one too where the kernel lets us (it needs
# CAP_SYS_RESOURCE; without it the hard limit caps each process).
ulimit -Hn 1048576 2>/dev/null || ulimit -Hn 262144 2>/dev/null || true
ulimit -n "$(ulimit -Hn)"

exec /usr/bin/python3 bench/chat/bench.py "$@"
