#!/usr/bin/python3
"""Checks for `chime rrule` (driven by tests/sh/test-rrule-cli.sh)."""
import json
import subprocess
import sys

BIN = sys.argv[1]
NY = "America/New_York"
CASES = [
    # RFC 5545 3.8.5.3 with its zone and UTC UNTIL. The RFC lists 15:00 for
    # "every 3 hours from 9:00 AM to 5:00 PM" but its UNTIL=19970902T170000Z
    # is 13:00 EDT, so the series stops at 12:00.
    ({"dtstart": "19970902T090000", "tzid": NY, "rrule": "FREQ=HOURLY;INTERVAL=3;UNTIL=19970902T170000Z", "limit": 10},
     {"occurrences": ["19970902T090000", "19970902T120000"],
      "occurrences_utc": ["19970902T130000Z", "19970902T160000Z"]}),
    ({"dtstart": "19970902T090000", "tzid": NY, "rrule": "FREQ=WEEKLY;UNTIL=19971224T000000Z", "limit": 100},
     {"count": 17, "last": "19971223T090000"}),
    ({"dtstart": "19980101T090000", "tzid": NY, "rrule": "FREQ=DAILY;UNTIL=20000131T140000Z;BYMONTH=1", "limit": 200},
     {"count": 93, "last": "20000131T090000"}),
    ({"dtstart": "19970905T090000", "tzid": NY, "rrule": "FREQ=MONTHLY;BYDAY=1FR", "limit": 3},
     {"occurrences": ["19970905T090000", "19971003T090000", "19971107T090000"],
      "occurrences_utc": ["19970905T130000Z", "19971003T130000Z", "19971107T140000Z"]}),
    # DTSTART that the rule does not produce: still the first (RFC 5545).
    ({"dtstart": "19970902T090000", "tzid": None, "rrule": "FREQ=MONTHLY;BYDAY=1FR", "limit": 3},
     {"occurrences": ["19970902T090000", "19970905T090000", "19971003T090000"]}),
    # ... unless EXDATE removes it (the RFC's Friday the 13th).
    ({"dtstart": "19970902T090000", "tzid": NY, "rrule": "FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13",
      "exdate": ["19970902T090000"], "limit": 3},
     {"occurrences": ["19980213T090000", "19980313T090000", "19981113T090000"],
      "occurrences_utc": ["19980213T140000Z", "19980313T140000Z", "19981113T140000Z"]}),
    # Spring-forward gap: 02:30 takes the offset before the gap (07:30Z).
    ({"dtstart": "20260307T023000", "tzid": NY, "rrule": "FREQ=DAILY;COUNT=3", "limit": 5},
     {"occurrences": ["20260307T023000", "20260308T023000", "20260309T023000"],
      "occurrences_utc": ["20260307T073000Z", "20260308T073000Z", "20260309T063000Z"]}),
    # UNTIL in UTC is tested per occurrence: 02:30 (in the gap, 07:30Z) is
    # past it, 03:00 EDT (07:00Z) is not.
    ({"dtstart": "20260308T013000", "tzid": NY, "rrule": "FREQ=MINUTELY;INTERVAL=30;UNTIL=20260308T070000Z",
      "limit": 10},
     {"occurrences": ["20260308T013000", "20260308T020000", "20260308T030000"],
      "occurrences_utc": ["20260308T063000Z", "20260308T070000Z", "20260308T070000Z"]}),
    ({"dtstart": "20260308T013000", "tzid": NY, "rrule": "FREQ=MINUTELY;INTERVAL=30;UNTIL=20260308T070000Z",
      "after": "20260308T020000"}, {"next": "20260308T030000", "next_utc": "20260308T070000Z"}),
    ({"dtstart": "20260308T013000", "tzid": NY, "rrule": "FREQ=MINUTELY;INTERVAL=30;UNTIL=20260308T070000Z",
      "includes": "20260308T023000"}, {"includes": False}),
    # Fall-back overlap: 01:30 is the first (EDT) one.
    ({"dtstart": "20261031T013000", "tzid": NY, "rrule": "FREQ=DAILY;COUNT=2", "limit": 5},
     {"occurrences": ["20261031T013000", "20261101T013000"],
      "occurrences_utc": ["20261031T053000Z", "20261101T053000Z"]}),
    # UNTIL before DTSTART: the set is empty (issue 24.4), floating or zoned.
    ({"dtstart": "19970902T090000", "tzid": None, "rrule": "FREQ=DAILY;UNTIL=19970901T090000", "limit": 5},
     {"occurrences": []}),
    ({"dtstart": "19970902T090000", "tzid": NY, "rrule": "FREQ=DAILY;UNTIL=19970901T090000Z", "limit": 5},
     {"occurrences": [], "occurrences_utc": []}),
    ({"dtstart": "19970902T090000", "tzid": NY, "rrule": "FREQ=DAILY;UNTIL=19970901T090000Z",
      "includes": "19970902T090000"}, {"includes": False}),
    # RDATE merges in order, duplicates drop, EXDATE wins; COUNT counts the
    # rule before EXDATE.
    ({"dtstart": "20260101T100000", "tzid": None, "rrule": "FREQ=DAILY;COUNT=3",
      "rdate": ["20260102T100000", "20260101T120000"], "exdate": ["20260103T100000"], "limit": 10},
     {"occurrences": ["20260101T100000", "20260101T120000", "20260102T100000"]}),
    ({"dtstart": "20260101T100000", "tzid": None, "rrule": None, "rdate": ["20251231T000000"], "limit": 10},
     {"occurrences": ["20251231T000000", "20260101T100000"]}),
    # after / includes, and far from DTSTART.
    ({"dtstart": "19900101T090000", "tzid": NY, "rrule": "FREQ=YEARLY;BYMONTH=11;BYDAY=4TH", "after": "20261122T000000"},
     {"next": "20261126T090000", "next_utc": "20261126T140000Z"}),
    ({"dtstart": "19900101T090000", "tzid": None, "rrule": "FREQ=DAILY;COUNT=5", "after": "20261122T000000"},
     {"next": None}),
    ({"dtstart": "19900101T090000", "tzid": None, "rrule": "FREQ=WEEKLY;BYDAY=MO,FR;COUNT=3000", "after": "20150101T000000"},
     {"next": "20150102T090000"}),
    ({"dtstart": "19900101T090000", "tzid": None, "rrule": "FREQ=WEEKLY;BYDAY=MO,FR;COUNT=2000", "after": "20150101T000000"},
     {"next": None}),
    ({"dtstart": "19900101T090000", "tzid": None, "rrule": "FREQ=DAILY", "includes": "20261122T090000"},
     {"includes": True}),
    ({"dtstart": "19900101T090000", "tzid": None, "rrule": "FREQ=DAILY", "exdate": ["20261122T090000"],
      "includes": "20261122T090000"}, {"includes": False}),
    ({"dtstart": "19900101T090000", "tzid": None, "rrule": "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=31", "limit": 5},
     {"occurrences": ["19900101T090000"]}),
    ({"dtstart": "20260101", "tzid": None, "rrule": "FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=3", "limit": 5},
     {"occurrences": ["20260101", "20260131", "20260228"]}),
    ({"dtstart": "20260101T000000", "tzid": None, "rrule": "FREQ=DAILY", "from": "20260110T000000",
      "to": "20260113T000000", "limit": 10},
     {"occurrences": ["20260110T000000", "20260111T000000", "20260112T000000"]}),
    # Errors name the field and the reason; the run goes on.
    ({"dtstart": "20260101T000000", "rrule": "FREQ=MONTHLY;BYMONTHDAY=32", "limit": 1},
     {"error": "rrule: BYMONTHDAY: 32 is out of range (+/-1..31)"}),
    ({"dtstart": "20260101T000000", "rrule": "FREQ=DAILY;COUNT=1;UNTIL=20270101", "limit": 1},
     {"error": "rrule: UNTIL: not allowed together with COUNT"}),
    ({"dtstart": "2026", "rrule": "FREQ=DAILY", "limit": 1},
     {"error": "dtstart: not YYYYMMDD or YYYYMMDDTHHMMSS"}),
    ({"dtstart": "20260101T000000", "tzid": "No/Such_Zone", "rrule": "FREQ=DAILY", "limit": 1},
     {"error": "tzid: unknown zone 'No/Such_Zone'"}),
    ({"dtstart": "20260101T000000", "rrule": "FREQ=DAILY", "limit": 10000000},
     {"error": "limit: must be an integer 0..100000"}),
    ({"dtstart": "20260101T000000", "rrule": "FREQ=DAILY"},
     {"error": "one of limit, after, includes or explain is required"}),
    # The example, both readings of an unsynchronized DTSTART.
    ({"dtstart": "19970902T090000", "tzid": NY, "rrule": "FREQ=MONTHLY;BYDAY=1FR", "exdate": [], "rdate": [],
      "limit": 3, "keep_dtstart": False},
     {"occurrences": ["19970905T090000", "19971003T090000", "19971107T090000"],
      "occurrences_utc": ["19970905T130000Z", "19971003T130000Z", "19971107T140000Z"]}),
    ({"dtstart": "19970902T090000", "rrule": "FREQ=MONTHLY;COUNT=2;BYDAY=1FR", "keep_dtstart": False,
      "after": "19971001T000000"}, {"next": "19971003T090000"}),
    ({"dtstart": "19970902T090000", "rrule": "FREQ=MONTHLY;COUNT=2;BYDAY=1FR", "after": "19971001T000000"},
     {"next": None}),
    ({"dtstart": "19970905T090000", "rrule": "FREQ=MONTHLY;COUNT=2;BYDAY=1FR", "keep_dtstart": False,
      "includes": "19970905T090000"}, {"includes": True}),
    ({"dtstart": "19970902T090000", "rrule": "freq=weekly;interval=2;byday=su,tu,th", "explain": True},
     {"explain": "every 2 weeks on Tuesday, Thursday and Sunday at 09:00",
      "rrule": "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH,SU"}),
    ({"dtstart": "19970902T090000", "rrule": "FREQ=DAILY", "keep_dtstart": 1, "limit": 1},
     {"error": "keep_dtstart: must be true or false"}),
    ({"dtstart": "20260101T000000", "rrule": "FREQ=DAILY", "exdate": "x", "limit": 1},
     {"error": "exdate: must be an array"}),
    ({"dtstart": "20260101T000000", "rrule": "FREQ=DAILY", "after": "tomorrow"},
     {"error": "after: not YYYYMMDD or YYYYMMDDTHHMMSS"}),
]


def check_lines():
    lines = [json.dumps(req) for req, _ in CASES]
    lines.insert(3, "this is not json")
    lines.insert(5, "")
    out = subprocess.run([BIN, "rrule"], input="\n".join(lines) + "\n", capture_output=True,
                         text=True, timeout=120, check=True).stdout.splitlines()
    assert len(out) == len(lines), (len(out), len(lines))
    assert json.loads(out.pop(5)) == {"error": "not valid JSON"}
    assert json.loads(out.pop(3)) == {"error": "not valid JSON"}
    bad = 0
    for (req, want), line in zip(CASES, out):
        got = json.loads(line)
        if "count" in want:
            ok = len(got.get("occurrences", [])) == want["count"] and got["occurrences"][-1] == want["last"]
        else:
            ok = got == want
        if not ok:
            bad += 1
            print("FAIL", json.dumps(req), "\n  want", json.dumps(want), "\n  got ", line[:400])
    return bad


def check_human():
    bad = 0
    out = subprocess.run([BIN, "rrule", "--dtstart", "19970615T090000", "--tz", "America/New_York",
                          "--rule", "FREQ=YEARLY;BYMONTH=6;BYDAY=3SU", "--count", "3"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    want = ["19970615T090000  19970615T130000Z", "19980621T090000  19980621T130000Z",
            "19990620T090000  19990620T130000Z", ""]
    if out != want:
        bad += 1
        print("FAIL human form:", out)
    out = subprocess.run([BIN, "rrule", "--dtstart", "19970615T090000", "--rule",
                          "FREQ=YEARLY;BYMONTH=6;BYDAY=3SU", "--explain"],
                         capture_output=True, text=True, check=True).stdout
    if out != "yearly on the third Sunday of June at 09:00\n":
        bad += 1
        print("FAIL explain:", out)
    # With a count as well: the English, then the occurrences.
    out = subprocess.run([BIN, "rrule", "--dtstart", "19970615T090000", "--rule",
                          "FREQ=YEARLY;BYMONTH=6;BYDAY=3SU", "--count", "2", "--explain"],
                         capture_output=True, text=True, check=True).stdout
    if out != "yearly on the third Sunday of June at 09:00\n19970615T090000\n19980621T090000\n":
        bad += 1
        print("FAIL explain with --count:", out)
    r = subprocess.run([BIN, "rrule", "--dtstart", "19970615T090000", "--rule", "FREQ=YEARLY;BYHOUR=24"],
                       capture_output=True, text=True)
    if r.returncode != 1 or "BYHOUR: 24 is out of range" not in r.stderr:
        bad += 1
        print("FAIL human error:", r.returncode, r.stderr)
    return bad


def main():
    bad = check_lines() + check_human()
    print("%d failures" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
