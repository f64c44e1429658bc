"""Seeds one user with 500 events (100 recurring, some since 2015) and 20
invitations from another user, over chime's HTTP API, and HISTORY more
single events in 2016-2025 (none in the month viewed), and INVITED single
events in 2016-2025 by the other user with this one invited (past
meetings). Writes the events as created to events.json for the peer.
Usage: seed.py PORT OUTDIR [HISTORY [INVITED]]"""
import http.client
import json
import random
import sys

port, outdir = int(sys.argv[1]), sys.argv[2]
history = int(sys.argv[3]) if len(sys.argv) > 3 else 0
invited = int(sys.argv[4]) if len(sys.argv) > 4 else 0
rnd = random.Random(42)
ZONES = ["America/New_York", "Europe/London", "Europe/Berlin", "Asia/Tokyo", "UTC"]
RULES = ["FREQ=WEEKLY;BYDAY=MO,WE,FR", "FREQ=DAILY", "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH",
         "FREQ=MONTHLY;BYDAY=-1FR", "FREQ=MONTHLY;BYMONTHDAY=1,15", "FREQ=YEARLY;BYMONTH=6;BYDAY=3SU",
         "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", "FREQ=WEEKLY;BYDAY=MO;COUNT=400",
         "FREQ=DAILY;INTERVAL=3", "FREQ=WEEKLY;BYDAY=SA;UNTIL=20291231T000000Z"]


def call(method, path, body=None, token=None):
    c = http.client.HTTPConnection("127.0.0.1", port)
    h = {"Content-Type": "application/json"}
    if token:
        h["Authorization"] = "Bearer " + token
    c.request(method, path, json.dumps(body) if body is not None else None, h)
    r = c.getresponse()
    data = r.read()
    assert r.status in (200, 201), (r.status, data[:300])
    return json.loads(data)


def user(email):
    call("POST", "/v1/users", {"email": email, "name": email, "password": "bench password"})
    return call("POST", "/v1/sessions", {"email": email, "password": "bench password"})["token"]


def event(i, recurring):
    zone = rnd.choice(ZONES)
    if recurring:
        year = rnd.choice([2015, 2017, 2019, 2021, 2023, 2025])
    else:
        year = 2026
    month, day, hour = rnd.randint(1, 12), rnd.randint(1, 28), rnd.randint(7, 19)
    if not recurring and rnd.random() < 0.3:
        month = 11
    start = "%04d-%02d-%02dT%02d:%02d:00" % (year, month, day, hour, rnd.choice([0, 30]))
    end = "%04d-%02d-%02dT%02d:%02d:00" % (year, month, day, hour + 1, rnd.choice([0, 30]))
    body = {"summary": "event %d" % i, "description": "bench " * 20,
            "start": {"date_time": start, "time_zone": zone}, "end": {"date_time": end, "time_zone": zone},
            "reminders": [{"method": "push", "minutes_before": 10}]}
    if recurring:
        body["recurrence"] = ["RRULE:" + rnd.choice(RULES)]
    return body


me = user("bench@example.com")
other = user("other@example.com")
created = []
for i in range(500):
    body = event(i, recurring=i < 100)
    created.append(call("POST", "/v1/events", body, me))
for i in range(20):
    body = event(1000 + i, recurring=i < 5)
    body["attendees"] = [{"email": "bench@example.com"}]
    created.append(call("POST", "/v1/events", body, other))


def past(i, organizer, attendees):
    y, m, d, h = rnd.randint(2016, 2025), rnd.randint(1, 12), rnd.randint(1, 28), rnd.randint(7, 19)
    day = "%04d-%02d-%02dT%02d:00:00" % (y, m, d, h)
    body = {"summary": "past %d" % i, "description": "history " * 10,
            "start": {"date_time": day, "time_zone": "Europe/Berlin"},
            "end": {"date_time": day.replace(":00:00", ":30:00"), "time_zone": "Europe/Berlin"}}
    if attendees:
        body["attendees"] = attendees
    created.append(call("POST", "/v1/events", body, organizer))


for i in range(history):
    past(i, me, None)
for i in range(invited):
    past(history + i, other, [{"email": "bench@example.com"}])
with open(outdir + "/events.json", "w") as f:
    json.dump(created, f)
print(me)
