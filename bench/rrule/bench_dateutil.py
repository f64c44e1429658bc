#!/usr/bin/python3
"""python-dateutil on the same work as bench.c: (a) parse + first 1,000
occurrences of each rule in rules.txt; (b) next-after queries from
queries.txt (a sample: dateutil walks from DTSTART), checked against the
answers bench.c wrote. Prints one line per measure and a RATES line."""
import itertools
import sys
import time
from datetime import datetime

from dateutil import rrule as du

d = sys.argv[1]
rules = [line.split(" ", 1) for line in open(d + "/rules.txt").read().splitlines()]
queries = [line.split(" ", 3) for line in open(d + "/queries.txt").read().splitlines()]
P = lambda s: datetime.strptime(s, "%Y%m%dT%H%M%S")

total, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < 3:
    for dt, text in rules:
        total += sum(1 for _ in itertools.islice(du.rrulestr(text, dtstart=P(dt)), 1000))
a = total / (time.perf_counter() - t0)
print("expand  dateutil %12.0f occurrences/s" % a)

n, wrong, t0 = 0, 0, time.perf_counter()
for dt, t, want, text in queries[:int(sys.argv[2]) if len(sys.argv) > 2 else 60]:
    got = du.rrulestr(text, dtstart=P(dt)).after(P(t))
    wrong += (got.strftime("%Y%m%dT%H%M%S") if got else "none") != want
    n += 1
b = n / (time.perf_counter() - t0)
print("next    dateutil %12.1f queries/s   (%d wrong of %d)" % (b, wrong, n))
print("RATES dateutil_expand=%.0f dateutil_next=%.2f" % (a, b))
