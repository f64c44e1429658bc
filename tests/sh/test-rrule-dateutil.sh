#!/usr/bin/env bash
# Differential test of `chime rrule` against python-dateutil: generated rules
# of every frequency and part, synchronized DTSTARTs, zones with DST
# transitions (see tests/sh/rrule_dateutil.py for what is compared).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${CHIME_BIN:-build/san/chime}
[ -x "$bin" ] || make -s build/san/chime
/usr/bin/python3 tests/sh/rrule_dateutil.py "$bin" "${RRULE_DIFF_RULES:-700}" "${RRULE_DIFF_SEED:-5545}"
