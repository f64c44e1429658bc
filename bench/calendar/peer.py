"""The peer: a month view the way a Python service would build it with
python-dateutil (rrulestr + rruleset.between per recurring event), over the
same 520 events, in process (no HTTP, no database: that favours the peer).
Prints queries/s and the median and p99 per query in ms."""
import json
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr

events = json.load(open(sys.argv[1]))
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
frm = datetime(2026, 11, 1, tzinfo=timezone.utc)
to = datetime(2026, 12, 1, tzinfo=timezone.utc)


def parse(e):
    zone = ZoneInfo(e["start"]["time_zone"])
    start = datetime.fromisoformat(e["start"]["date_time"]).astimezone(zone).replace(tzinfo=None)
    end = datetime.fromisoformat(e["end"]["date_time"]).astimezone(zone).replace(tzinfo=None)
    return zone, start, end - start


def month_view():
    out = []
    for e in events:
        zone, start, dur = parse(e)
        if not e["recurrence"]:
            s = start.replace(tzinfo=zone)
            if s < to and s + dur > frm:
                out.append((s, e["id"]))
            continue
        rule = rrulestr(e["recurrence"][0][6:].replace("Z", ""), dtstart=start)
        lo = (frm - dur).astimezone(zone).replace(tzinfo=None)
        hi = to.astimezone(zone).replace(tzinfo=None)
        for occ in rule.between(lo, hi, inc=True):
            s = occ.replace(tzinfo=zone)
            if s < to and s + dur > frm:
                out.append((s, e["id"]))
    out.sort()
    return out


lat = []
deadline = time.time() + seconds
n = 0
while time.time() < deadline:
    t0 = time.perf_counter()
    items = month_view()
    lat.append((time.perf_counter() - t0) * 1000)
    n += 1
lat.sort()
print(json.dumps({"queries_per_s": n / sum(lat) * 1000, "median_ms": statistics.median(lat),
                  "p99_ms": lat[int(len(lat) * 0.99) - 1 if len(lat) > 1 else 0], "items": len(items)}))
