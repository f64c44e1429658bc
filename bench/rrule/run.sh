#!/usr/bin/env bash
# The recurrence benchmark: our engine against libical (C, same process),
# python-dateutil and rrule.js, on the same rules and queries:
#   (a) parse + first 1,000 occurrences of 20 representative rules;
#   (b) next-after queries, DTSTART in 1990 and t in 2026, fresh parse each.
# Prints occurrences/s and queries/s for each and our ratio to each peer.
# The slow peers answer (b) by walking from 1990, so they get a sample of the
# queries (NQ_SLOW, default 60) and their rate is per query all the same.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(mktemp -d /tmp/chime-bench-rrule.XXXXXX)
trap 'rm -rf "$out"' EXIT
nq=${NQ_SLOW:-60}

make -s build/chime >/dev/null
objs="build/rel/src/time/civil.o build/rel/src/time/rrule_parse.o build/rel/src/time/rrule_expand.o build/rel/src/time/time_err.o"
# shellcheck disable=SC2046
cc -std=gnu11 -O2 -g -Isrc -Wall -Wextra -Werror -o "$out/bench" bench/rrule/bench.c $objs \
  $(pkg-config --cflags --libs libical)

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
"$out/bench" "$out" | tee "$out/c.txt"
/usr/bin/python3 bench/rrule/bench_dateutil.py "$out" "$nq" | tee "$out/py.txt"
if command -v node >/dev/null && (cd bench/rrule && npm ci --silent --no-audit --no-fund >/dev/null 2>&1); then
  node bench/rrule/bench_rrulejs.js "$out" "$nq" | tee "$out/js.txt"
else
  echo "rrule.js: skipped (node or npm ci unavailable)" | tee "$out/js.txt"
fi

/usr/bin/python3 - "$out" <<'PY'
import re, sys
d = sys.argv[1]
rates = {}
for f in ("c.txt", "py.txt", "js.txt"):
    for line in open(f"{d}/{f}"):
        if line.startswith("RATES"):
            for k, v in re.findall(r"(\w+)=([\d.]+)", line):
                rates[k] = float(v)
print("\n== ratios (ours / peer)")
for peer, name in (("libical", "libical"), ("dateutil", "python-dateutil"), ("rrulejs", "rrule.js")):
    for what, unit in (("expand", "occurrences/s"), ("next", "queries/s")):
        k = f"{peer}_{what}"
        if k in rates and rates[k] > 0:
            print(f"{what:7s} {name:16s} {rates[k]:14.1f} {unit:14s} ours {rates['ours_' + what]:12.0f}  ratio {rates['ours_' + what] / rates[k]:10.0f}x")
PY
