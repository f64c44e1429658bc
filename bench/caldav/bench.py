"""bench/caldav driver: one calendar of 1,000 events (100 recurring, in
Europe/Paris, some with EXDATEs and moved instances) put into a CalDAV
server, then the requests a syncing client makes, each repeated and timed
server-side from the server's own log:

  propfind   PROPFIND Depth 1 getetag on the collection
  query      calendar-query for November 2026 with expand
  multiget   calendar-multiget of 100 resources with calendar-data
  sync0      sync-collection from nothing (getetag)
  sync1      sync-collection from a token, after 10 events changed

Usage: bench.py BASE_URL COLLECTION_PATH USER PASSWORD LOGFILE KIND REPEATS
(KIND chime: the access log; radicale: its "in N seconds" lines). Prints
one JSON object: per operation the server-side median and p90 in ms, and
what the answers held."""
import base64
import datetime
import http.client
import json
import random
import re
import sys
import time
import urllib.parse

TZ = ["BEGIN:VTIMEZONE", "TZID:Europe/Paris", "BEGIN:DAYLIGHT", "TZOFFSETFROM:+0100", "TZOFFSETTO:+0200",
      "TZNAME:CEST", "DTSTART:19700329T020000", "RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU", "END:DAYLIGHT",
      "BEGIN:STANDARD", "TZOFFSETFROM:+0200", "TZOFFSETTO:+0100", "TZNAME:CET", "DTSTART:19701025T030000",
      "RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU", "END:STANDARD", "END:VTIMEZONE"]
RULES = ["FREQ=DAILY;COUNT=%d", "FREQ=WEEKLY;BYDAY=MO,WE,FR", "FREQ=WEEKLY;BYDAY=TU;INTERVAL=2",
         "FREQ=MONTHLY;BYMONTHDAY=%d", "FREQ=MONTHLY;BYDAY=1TH", "FREQ=YEARLY"]


def local(d, h, m):
    return "%04d%02d%02dT%02d%02d00" % (d[0], d[1], d[2], h, m)


def day_of(rng, year):
    return (year, rng.randint(1, 12), rng.randint(1, 28))


def recurring(rng, i):
    start = (rng.choice([2025, 2026]), rng.randint(1, 10), rng.randint(1, 28))
    h = rng.randint(7, 18)
    rule = rng.choice(RULES)
    if i % 3 == 0 or i % 5 == 0:  # these get an EXDATE or a moved instance in November
        rule = "FREQ=WEEKLY;BYDAY=MO,WE,FR"
    if "%d" in rule:
        rule = rule % (rng.randint(60, 400) if "COUNT" in rule else start[2])
    ev = ["UID:series-%03d@bench" % i, "DTSTAMP:20260101T000000Z",
          "DTSTART;TZID=Europe/Paris:" + local(start, h, 0), "DTEND;TZID=Europe/Paris:" + local(start, h, 45),
          "RRULE:" + rule, "SUMMARY:Series %d" % i]
    out = [ev]
    if i % 3 == 0:  # a deleted Wednesday in November
        ev.append("EXDATE;TZID=Europe/Paris:" + local((2026, 11, rng.choice([4, 11, 18, 25])), h, 0))
    if i % 5 == 0:  # a Monday in November moved an hour later
        d = (2026, 11, rng.choice([2, 9, 16, 23]))
        out.append(["UID:series-%03d@bench" % i, "DTSTAMP:20260101T000000Z",
                    "RECURRENCE-ID;TZID=Europe/Paris:" + local(d, h, 0),
                    "DTSTART;TZID=Europe/Paris:" + local(d, h + 1, 0),
                    "DTEND;TZID=Europe/Paris:" + local(d, h + 1, 45), "SUMMARY:Series %d (moved)" % i])
    return out


def single(rng, i):
    d = day_of(rng, 2026)
    if i % 10 == 0:
        nxt = datetime.date(*d) + datetime.timedelta(days=1)
        times = ["DTSTART;VALUE=DATE:%04d%02d%02d" % d, "DTEND;VALUE=DATE:" + nxt.strftime("%Y%m%d")]
    else:
        h = rng.randint(6, 20)
        times = ["DTSTART;TZID=Europe/Paris:" + local(d, h, 30), "DTEND;TZID=Europe/Paris:" + local(d, h + 1, 0)]
    return [["UID:single-%03d@bench" % i, "DTSTAMP:20260101T000000Z"] + times +
            ["SUMMARY:Event %d" % i, "LOCATION:Room %d" % (i % 7)]]


def ics(vevents):
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//chime bench//EN"] + TZ
    for ev in vevents:
        lines += ["BEGIN:VEVENT"] + ev + ["END:VEVENT"]
    return "\r\n".join(lines + ["END:VCALENDAR"]) + "\r\n"


def dataset():
    rng = random.Random(7)
    out = {}
    for i in range(100):
        out["series-%03d.ics" % i] = recurring(rng, i)
    for i in range(900):
        out["single-%03d.ics" % i] = single(rng, i)
    return out


class Dav:
    def __init__(self, base, user, password):
        u = urllib.parse.urlparse(base)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
        self.auth = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()

    def req(self, method, path, body=None, depth=None, ctype="application/xml; charset=utf-8"):
        h = {"Authorization": self.auth}
        if depth is not None:
            h["Depth"] = str(depth)
        if body is not None:
            h["Content-Type"] = ctype
        self.conn.request(method, path, body=body.encode() if body else None, headers=h)
        r = self.conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")


PROPFIND = '<d:propfind xmlns:d="DAV:"><d:prop><d:getetag/></d:prop></d:propfind>'
QUERY = ('<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/>'
         '<c:calendar-data><c:expand start="20261101T000000Z" end="20261201T000000Z"/></c:calendar-data></d:prop>'
         '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT"><c:time-range '
         'start="20261101T000000Z" end="20261201T000000Z"/></c:comp-filter></c:comp-filter></c:filter>'
         '</c:calendar-query>')
SYNC = ('<d:sync-collection xmlns:d="DAV:"><d:sync-token>%s</d:sync-token><d:sync-level>1</d:sync-level>'
        '<d:prop><d:getetag/></d:prop></d:sync-collection>')


def multiget(collection, names):
    hrefs = "".join("<d:href>%s%s</d:href>" % (collection, n) for n in names)
    return ('<c:calendar-multiget xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/>'
            '<c:calendar-data/></d:prop>%s</c:calendar-multiget>' % hrefs)


def server_ms(logfile, kind):
    """Server-side times of the requests logged since the log was emptied."""
    with open(logfile, errors="replace") as f:
        text = f.read()
    if kind == "chime":
        return [float(m) for m in re.findall(r" (?:PROPFIND|REPORT) /dav/\S+ 207 \d+B ([0-9.]+)ms", text)]
    return [float(s) * 1000 for s in re.findall(r"(?:PROPFIND|REPORT) response status for .* in ([0-9.]+) seconds: 207",
                                                 text)]


def logged_ms(logfile, kind, n):
    """The n server-side times, once the log has them: lines are written
    after the answer, and chime's access log is buffered (flushed about
    every second, like nginx's access_log flush=)."""
    deadline = time.time() + 5
    while True:
        ms = server_ms(logfile, kind)
        if len(ms) >= n or time.time() > deadline:
            assert len(ms) >= n, ("%d of %d requests logged in %s" % (len(ms), n, logfile))
            return ms
        time.sleep(0.1)


def timed(dav, logfile, kind, repeats, method, path, body, depth):
    open(logfile, "w").close()
    status = text = None
    for _ in range(repeats):
        status, text = dav.req(method, path, body, depth)
        assert status == 207, (status, text[:500])
    ms = sorted(logged_ms(logfile, kind, repeats))
    return {"median_ms": ms[len(ms) // 2], "p90_ms": ms[int(len(ms) * 0.9)], "n": len(ms),
            "responses": text.count("<d:response>") + text.count("<D:response>") + text.count("<response>"),
            "vevents": text.count("BEGIN:VEVENT"), "bytes": len(text)}


def token_of(text):
    return re.search(r"<(?:\w+:)?sync-token>([^<]*)<", text).group(1)


def upload(dav, collection, data):
    t0 = time.time()
    for name, vevents in data.items():
        status, text = dav.req("PUT", collection + name, ics(vevents), ctype="text/calendar; charset=utf-8")
        assert status in (201, 204), (name, status, text[:300])
    return time.time() - t0


def main():
    base, collection, user, password, logfile, kind, repeats = sys.argv[1:8]
    repeats = int(repeats)
    dav = Dav(base, user, password)
    data = dataset()
    out = {"upload_s": round(upload(dav, collection, data), 1)}
    open(logfile, "w").close()
    dav.req("PROPFIND", collection, PROPFIND, 1)
    out["first_propfind_ms"] = logged_ms(logfile, kind, 1)[0]
    out["propfind"] = timed(dav, logfile, kind, repeats, "PROPFIND", collection, PROPFIND, 1)
    out["query"] = timed(dav, logfile, kind, repeats, "REPORT", collection, QUERY, 1)
    names = sorted(data)[::10][:100]
    out["multiget"] = timed(dav, logfile, kind, repeats, "REPORT", collection, multiget(collection, names), 1)
    out["sync0"] = timed(dav, logfile, kind, repeats, "REPORT", collection, SYNC % "", 1)
    _, text = dav.req("REPORT", collection, SYNC % "", 1)
    token = token_of(text)
    changed = dict(list(data.items())[100:110])
    for vevents in changed.values():
        vevents[0] = [line if not line.startswith("SUMMARY:") else line + " (changed)" for line in vevents[0]]
    upload(dav, collection, changed)
    out["sync1"] = timed(dav, logfile, kind, repeats, "REPORT", collection, SYNC % token, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
