#!/usr/bin/env bash
# bench/chat/writer.sh [batches [group]]: the chat writer's instructions a
# 1:1 message (callgrind on bench/chat/writer.c: SQLite, batches of 20
# sends in one transaction, 2,000 users in 1,000 pairs); with "group", a
# message to a group of 500, one a transaction. Instruction counts are
# what stays put on a guest whose speed swings through the day; compare
# two builds with this, and the whole server with run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/deps.sh >/dev/null
command -v valgrind >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q valgrind >/dev/null
make -s build/bench/chatwriter
batches=${1:-250}
mode=${2:-pairs}
dir=$(mktemp -d /tmp/chatwriter.XXXXXX)
trap 'rm -rf "$dir"' EXIT
if [ "$mode" = group ]; then
  fn=run_group msgs=$(( batches + 20 )) what="a message to a group of 500, one a transaction"
else
  fn=run_batches msgs=$(( (batches + 200) * 20 )) what="batches of 20"
fi
# (the toggle counts the warm-up messages too)
valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" --toggle-collect=$fn \
  build/bench/chatwriter "$dir/w.db" "$batches" "$mode" 2>"$dir/vg.log"
ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/vg.log")
echo "chat writer: $ir instructions in $msgs messages: $(( ir / msgs )) a message ($what, $(date -u +%F) $(git rev-parse --short HEAD))"
[ -n "${CG_KEEP:-}" ] && cp "$dir/cg.out" "$CG_KEEP"
exit 0
