#!/usr/bin/env bash
# bench/chat/writer.sh [batches]: the chat writer's instructions a 1:1
# message (callgrind on bench/chat/writer.c: SQLite, batches of 20 sends
# in one transaction, 2,000 users in 1,000 pairs). Instruction counts are
# what stays put on a guest whose speed swings through the day; compare
# two builds with this, and the whole server with run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/deps.sh >/dev/null
command -v valgrind >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q valgrind >/dev/null
make -s build/bench/chatwriter
batches=${1:-250}
dir=$(mktemp -d /tmp/chatwriter.XXXXXX)
trap 'rm -rf "$dir"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" --toggle-collect=run_batches \
  build/bench/chatwriter "$dir/w.db" "$batches" 2>"$dir/vg.log"
ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/vg.log")
msgs=$(( (batches + 200) * 20 ))   # the toggle counts the warm-up batches too
echo "chat writer: $ir instructions in $msgs messages: $(( ir / msgs )) a message (batches of 20, $(date -u +%F) $(git rev-parse --short HEAD))"
