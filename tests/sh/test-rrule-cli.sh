#!/usr/bin/env bash
# `chime rrule`: JSON lines in, one JSON line out per input in order, errors
# on their line without stopping the run; zoned series with RFC 5545 UNTIL
# in UTC, gaps and overlaps; the human form and --explain.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${CHIME_BIN:-build/san/chime}
[ -x "$bin" ] || make -s build/san/chime
exec /usr/bin/python3 tests/sh/rrule_cli_check.py "$bin"
