#!/usr/bin/python3
"""Differential test: `chime rrule` against python-dateutil.

Generates random RRULEs (every part, every frequency), a DTSTART synchronized
with the rule (dateutil drops a DTSTART that does not match; RFC 5545 keeps
it, so the bulk comparison only uses DTSTARTs that match), and compares:
  - the first occurrences (limit),
  - next-after at random points, and includes at occurrences and near misses,
  - the UTC instants in a zone (python zoneinfo, fold=0 = RFC 5545 3.3.5),
  - the same rules from unsynchronized DTSTARTs with "keep_dtstart": false
    (chime's dateutil-compatible reading; the RFC reading, DTSTART always
    first, is tested against the RFC text in tests/unit/test-rrule.c).
Known, documented differences (rrule.h) are kept out of the generator:
WEEKLY with BYSETPOS, mixed plain and ordinal BYDAY, negative BYWEEKNO naming next year's week 1,
UNTIL as a DATE, BYSECOND=60.

usage: rrule_dateutil.py CHIME_BIN [count] [seed]
"""
import itertools
import json
import random
import signal
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from dateutil import rrule as du

FREQS = ["YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY"]
DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
ZONES = [None, "America/New_York", "Europe/Berlin", "Australia/Lord_Howe",
         "Asia/Kolkata", "America/Sao_Paulo", "Pacific/Chatham", "UTC"]
LIMIT = 40
import os
if os.environ.get("RRULE_NO_ZONES"):
    ZONES = [None]


def fmt(d):
    return d.strftime("%Y%m%dT%H%M%S")


def sample(rng, lo, hi, k, signed=False):
    vals = set()
    for _ in range(k):
        v = rng.randint(lo, hi)
        if signed and rng.random() < 0.35:
            v = -v
        vals.add(v)
    return ",".join(str(v) for v in sorted(vals))


def gen_rule(rng):
    freq = rng.choices(FREQS, weights=[5, 5, 4, 4, 2, 2, 1])[0]
    fi = FREQS.index(freq)
    parts = ["FREQ=" + freq]
    r = rng.random()
    if r < 0.3:
        parts.append("COUNT=%d" % rng.randint(1, 60))
    elif r < 0.45:
        parts.append("UNTIL=%d%02d%02dT%02d0000" % (rng.randint(1998, 2030), rng.randint(1, 12),
                                                   rng.randint(1, 28), rng.randint(0, 23)))
    if rng.random() < 0.5:
        parts.append("INTERVAL=%d" % rng.choice([2, 3, 4, 5, 7, 12, 13, 25, 61, 100]))
    sub = fi >= 4
    if rng.random() < (0.5 if sub else 0.25):
        parts.append("BYSECOND=" + sample(rng, 0, 59, rng.randint(1, 3)))
    if rng.random() < (0.5 if sub else 0.25):
        parts.append("BYMINUTE=" + sample(rng, 0, 59, rng.randint(1, 3)))
    if rng.random() < (0.5 if sub else 0.3):
        parts.append("BYHOUR=" + sample(rng, 0, 23, rng.randint(1, 4)))
    if rng.random() < 0.45:
        ordinal = freq in ("MONTHLY", "YEARLY") and rng.random() < 0.5
        weekno = False
        items = set()
        for _ in range(rng.randint(1, 3)):
            d = rng.choice(DAYS)
            if ordinal:
                n = rng.randint(1, 5 if freq == "MONTHLY" or rng.random() < 0.5 else 53)
                items.add("%s%d%s" % ("-" if rng.random() < 0.4 else "", n, d))
            else:
                items.add(d)
        parts.append("BYDAY=" + ",".join(sorted(items)))
    if freq != "WEEKLY" and rng.random() < 0.3:
        parts.append("BYMONTHDAY=" + sample(rng, 1, 31, rng.randint(1, 3), signed=True))
    if freq in ("YEARLY", "HOURLY", "MINUTELY", "SECONDLY") and rng.random() < 0.2:
        parts.append("BYYEARDAY=" + sample(rng, 1, 366, rng.randint(1, 3), signed=True))
    if freq == "YEARLY" and rng.random() < 0.2 and not any(
            p.startswith("BYDAY=") and any(c.isdigit() for c in p) for p in parts):
        # Negatives only down to -3: dateutil does not apply negative numbers
        # to the December days of next year's week 1 (see rrule.h).
        wk = set()
        for _ in range(rng.randint(1, 3)):
            wk.add(-rng.randint(1, 3) if rng.random() < 0.25 else rng.randint(1, 53))
        parts.append("BYWEEKNO=" + ",".join(str(v) for v in sorted(wk)))
    if rng.random() < 0.3:
        parts.append("BYMONTH=" + sample(rng, 1, 12, rng.randint(1, 4)))
    # dateutil cuts the first week at DTSTART before applying BYSETPOS; RFC
    # 5545 applies it to the whole week (rrule.h), so no WEEKLY+BYSETPOS here.
    if freq != "WEEKLY" and rng.random() < 0.2:
        parts.append("BYSETPOS=" + sample(rng, 1, 4, rng.randint(1, 2), signed=True))
    if rng.random() < 0.25:
        parts.append("WKST=" + rng.choice(DAYS))
    body = parts[1:]
    rng.shuffle(body)
    return ";".join([parts[0]] + body)


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def du_rule(text, dtstart, zone=None):
    if zone:
        dtstart = dtstart.replace(tzinfo=ZoneInfo(zone))
    return du.rrulestr(text, dtstart=dtstart)


def synchronized(rng, text, zone):
    """A DTSTART that dateutil keeps as the first occurrence, or None."""
    start = datetime(rng.randint(1995, 2025), rng.randint(1, 12), rng.randint(1, 28),
                     rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
    if "UNTIL" in text:
        start = start.replace(year=rng.randint(1990, 1999))
    r = du_rule(text, start, zone)
    first = r.after(r._dtstart, inc=True)
    if first is None:
        return None
    first = first.replace(tzinfo=None)
    r2 = du_rule(text, first, zone)
    if r2.after(r2._dtstart, inc=True) != r2._dtstart:
        return None
    return first


def utc_of(local, zone):
    z = ZoneInfo(zone)
    return local.replace(tzinfo=z, fold=0).astimezone(timezone.utc)


def main():
    chime = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 5545
    rng = random.Random(seed)
    signal.signal(signal.SIGALRM, on_alarm)
    cases = []  # (request, expected reply, description)
    rules = 0
    while rules < count:
        text = gen_rule(rng)
        zone = rng.choice(ZONES)
        if zone and "UNTIL" in text:
            text = text.replace("0000;", "0000Z;") if "0000;" in text else text + "Z" \
                if text.endswith("0000") else text
            # With a zone, UNTIL is a UTC instant (RFC 5545 3.3.10).
            if "UNTIL" in text and "Z" not in text.split("UNTIL=")[1].split(";")[0]:
                zone = None
        signal.alarm(1)
        try:
            start = synchronized(rng, text, zone)
            if start is None:
                signal.alarm(0)
                continue
            rules += 1
            r = du_rule(text, start, zone)
            occ = []
            for d in r:
                occ.append(d.replace(tzinfo=None))
                if len(occ) >= LIMIT:
                    break
            r = du_rule(text, start)  if not zone or "UNTIL" not in text else None
            base = {"dtstart": fmt(start), "tzid": zone, "rrule": text}
            exp = {"occurrences": [fmt(d) for d in occ]}
            if zone:
                exp["occurrences_utc"] = [fmt(utc_of(d, zone)) + "Z" for d in occ]
            cases.append((dict(base, limit=LIMIT), exp, text))
            # The same rule from a DTSTART it may not yield, read as dateutil
            # does (keep_dtstart false), floating.
            raw = start.replace(day=rng.randint(1, 28), hour=rng.randint(0, 23))
            ru = du_rule(text, raw)
            occ_u = [fmt(d) for d in itertools.islice(ru, LIMIT)]
            cases.append(({"dtstart": fmt(raw), "tzid": None, "rrule": text, "keep_dtstart": False,
                           "limit": LIMIT}, {"occurrences": occ_u}, text))
            if r is None:
                continue  # queries below use a floating rule
            span = (occ[-1] - start) if len(occ) > 1 else timedelta(days=800)
            # Probe points stay inside datetime's range: a sparse rule's
            # span can reach past year 9999 (an OverflowError, seen once).
            room = int((datetime(9999, 1, 1) - start).total_seconds())
            for _ in range(2):
                t = start + timedelta(seconds=rng.randint(-3600, min(room, int(span.total_seconds() * 1.2) + 3600)))
                t = t.replace(microsecond=0)
                nxt = r.after(t)
                cases.append((dict(base, tzid=None, after=fmt(t)),
                              {"next": fmt(nxt) if nxt else None}, text))
            probe = rng.choice(occ)
            cases.append((dict(base, tzid=None, includes=fmt(probe)), {"includes": True}, text))
            miss = probe + timedelta(seconds=rng.choice([1, 60, 3600, 86400]))
            cases.append((dict(base, tzid=None, includes=fmt(miss)),
                          {"includes": miss in set(r.between(miss, miss, inc=True))}, text))
        except (Timeout, IndexError, ValueError):
            pass  # dateutil gave up or crashed (large BYDAY ordinals)
        finally:
            signal.alarm(0)
    lines = "".join(json.dumps(req) + "\n" for req, _, _ in cases)
    out = subprocess.run([chime, "rrule"], input=lines, capture_output=True, text=True, timeout=600)
    replies = out.stdout.splitlines()
    if len(replies) != len(cases):
        print("expected %d replies, got %d; stderr:\n%s" % (len(cases), len(replies), out.stderr[-3000:]))
        return 1
    bad = 0
    for (req, exp, text), line in zip(cases, replies):
        got = json.loads(line)
        if got != exp:
            bad += 1
            if bad <= 15:
                print("MISMATCH", json.dumps(req))
                print("  dateutil:", json.dumps(exp)[:600])
                print("  chime:   ", json.dumps(got)[:600])
    print("%d cases (%d rules), %d mismatches" % (len(cases), count, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
