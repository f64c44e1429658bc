#!/usr/bin/env bash
# bench/store: SQLite commits through chime's WAL-write VFS
# (src/store/store_sqlite_vfs.c) against SQLite's own unix VFS, in turns on
# the same disk: a commit of 20 pages, synchronous=FULL, with the WAL file
# growing, written over while cached, and written over after its pages
# (and the database's) left the page cache. See bench/store/walwrite.c.
# Usage: bench/store/run.sh [commits] [rounds]   (defaults 5000 and 3)
# The files go under var/ (the disk chime's database would be on); TMPDIR
# is often a RAM disk, where none of this shows.
set -euo pipefail
cd "$(dirname "$0")/../.."
commits=${1:-5000}; rounds=${2:-3}
scripts/deps.sh >/dev/null
make -s build/bench/walwrite
mkdir -p var
dir=$(mktemp -d var/walwrite.XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo "bench/store: $(date -u '+%F %T') UTC; $(nproc) cores; $(uname -srm); load $(cut -d' ' -f1-3 /proc/loadavg);" \
     "SQLite $(sqlite3 --version 2>/dev/null | cut -d' ' -f1 || echo '?'); $commits commits x $rounds rounds;" \
     "file system: $(df -T "$dir" | awk 'NR==2 {print $2}')"
build/bench/walwrite "$dir" "$commits" "$rounds"
