"""iCalendar import and export over real HTTP: files as Google Calendar,
Thunderbird, Apple Calendar and Outlook write them are imported, exported,
re-imported into a fresh calendar and compared instance by instance; re-import
updates instead of duplicating; malformed files are refused with the line and
change nothing; the secret feed URL works without sign-in, rotates and is
revocable; nobody reaches another user's calendar."""
import os
import time
import urllib.parse

from chime import ServerTest, main

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "ical")
PRODUCERS = ["google.ics", "thunderbird.ics", "apple.ics", "outlook.ics"]
WINDOW = ("2026-01-01T00:00:00Z", "2028-01-01T00:00:00Z")
BOB = "bob.ical@example.com"


def read(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def vcal(*lines):
    """A small file from content lines, CRLF-terminated."""
    return ("\r\n".join(("BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN") + lines +
                        ("END:VCALENDAR",)) + "\r\n").encode()


def vevent(uid="e1@test", start="DTSTART;TZID=America/New_York:20260105T090000",
           end="DTEND;TZID=America/New_York:20260105T100000", *extra):
    return ("BEGIN:VEVENT", "UID:" + uid, "DTSTAMP:20260101T000000Z", start, end, "SUMMARY:Event") + \
        tuple(extra) + ("END:VEVENT",)


class IcalTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The attendee the Google file names; other attendees are strangers.
        r = cls.server.post("/v1/users", {"email": BOB, "name": "Bob", "password": "correct horse battery"})
        assert r.status == 201, r

    def setUp(self):
        self.user, self.token = self.server.new_user()

    def calendar(self, zone="America/New_York", token=None):
        r = self.server.post("/v1/calendars", {"summary": "Imported", "time_zone": zone}, token=token or self.token)
        self.assertEqual(r.status, 201, r)
        return r.json["id"]

    def do_import(self, cal, body, token=None, expect=200, ctype="text/calendar; charset=utf-8"):
        r = self.server.request("POST", "/v1/calendars/%s/import" % cal, raw=body, token=token or self.token,
                                headers={"Content-Type": ctype})
        self.assertEqual(r.status, expect, r)
        return r

    def export(self, cal, token=None):
        r = self.server.get("/v1/calendars/%s/export.ics" % cal, token=token or self.token)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("content-type").startswith("text/calendar"), r.headers)
        return r

    def instances(self, cal, token=None):
        """Every instance in the window, as comparable tuples, following pages."""
        out, page = [], None
        while True:
            q = {"from": WINDOW[0], "to": WINDOW[1], "calendar_id": cal, "max_results": 500}
            if page:
                q["page_token"] = page
            r = self.server.get("/v1/events?" + urllib.parse.urlencode(q), token=token or self.token)
            self.assertEqual(r.status, 200, r)
            for i in r.json["items"]:
                out.append((i["ical_uid"], i["summary"], i["start"].get("date_time") or i["start"]["date"],
                            i["end"].get("date_time") or i["end"]["date"], i["location"], i["description"],
                            i["status"], tuple(sorted(a["email"] for a in i["attendees"])),
                            tuple((m["method"], m["minutes_before"]) for m in i["reminders"])))
            page = r.json["next_page_token"]
            if not page:
                return out

    def starts(self, insts, uid_prefix):
        return [i[2] for i in insts if i[0].startswith(uid_prefix)]


class TestProducers(IcalTest):
    def test_google(self):
        cal = self.calendar()
        r = self.do_import(cal, read("google.ics"))
        self.assertEqual((r.json["imported"], r.json["updated"]), (4, 0), r)
        self.assertEqual(r.json["ignored_attendees"], 1)  # the stranger
        insts = self.instances(cal)
        standup = [i for i in insts if i[0].startswith("7kukuqrfedlm")]
        starts = [i[2] for i in standup]
        # EXDATEs (MLK day, Presidents' day, Memorial day) and the cancelled Friday are gone.
        for gone in ("2026-01-19T09:30:00-05:00", "2026-02-16T09:30:00-05:00", "2026-05-25T09:30:00-04:00",
                     "2026-03-06T09:30:00-05:00", "2026-03-04T09:30:00-05:00"):
            self.assertNotIn(gone, starts)
        moved = [i for i in standup if i[2] == "2026-03-04T11:00:00-05:00"]
        self.assertEqual(len(moved), 1, standup[:30])
        self.assertEqual(moved[0][1], "Standup (moved for the all-hands)")
        self.assertEqual(moved[0][3], "2026-03-04T11:30:00-05:00")
        self.assertIn("2026-03-09T09:30:00-04:00", starts)  # after the DST change, same wall time
        first = standup[0]
        self.assertEqual(first[1:5], ("Standup", "2026-01-05T09:30:00-05:00", "2026-01-05T10:00:00-05:00",
                                      "Room 4, Floor 2"))
        self.assertTrue(first[5].startswith("Daily standup.\nJoin with Google Meet: https://meet.google.com/abc-"))
        self.assertEqual(first[7], (BOB,))
        self.assertEqual(first[8], (("push", 10),))
        lunch = [i for i in insts if i[1] == "Lunch with Ana"]
        self.assertEqual(lunch[0][2:5], ("2026-03-12T13:00:00-04:00", "2026-03-12T14:00:00-04:00",
                                         "Café Olé, 12 Main St"))
        self.assertEqual(self.starts(insts, "20260704_"), ["2026-07-04", "2027-07-04"])
        demo = self.starts(insts, "5q9r8s")
        self.assertEqual(len(demo), 18)
        self.assertEqual(demo[:2], ["2026-01-30T16:00:00-05:00", "2026-02-27T16:00:00-05:00"])

    def test_thunderbird(self):
        cal = self.calendar(zone="Europe/Berlin")
        r = self.do_import(cal, read("thunderbird.ics"))
        self.assertEqual(r.json["imported"], 4, r)
        self.assertEqual([s["uid"] for s in r.json["skipped"]], ["todo-5566-7788"], r)
        insts = self.instances(cal)
        chor = self.starts(insts, "040a6b5c")
        self.assertEqual(chor[0], "2026-01-08T19:00:00+01:00")
        self.assertNotIn("2026-12-24T19:00:00+01:00", chor)
        self.assertNotIn("2026-12-31T19:00:00+01:00", chor)
        self.assertEqual(chor[-1], "2027-06-24T19:00:00+02:00")  # UNTIL is 19:00 Berlin in UTC
        self.assertIn("2026-07-02T19:00:00+02:00", chor)
        chor_desc = [i[5] for i in insts if i[0].startswith("040a6b5c")][0]
        self.assertEqual(chor_desc, "Bitte Noten mitbringen. Übung macht den Meister – auch wenn es lange dauert; "
                                    "wirklich.")
        # Floating: the calendar's zone.
        self.assertEqual(self.starts(insts, "9b1c2d3e")[:2], ["2026-02-10T07:00:00+01:00",
                                                              "2026-02-12T07:00:00+01:00"])
        self.assertEqual(len(self.starts(insts, "9b1c2d3e")), 10)
        self.assertEqual([i[2:4] for i in insts if i[0].startswith("1f2e3d4c")], [("2026-08-10", "2026-08-15")])
        self.assertEqual(self.starts(insts, "77aa88bb"), ["2026-04-01T10:00:00+02:00", "2026-04-15T10:00:00+02:00",
                                                           "2026-05-06T10:00:00+02:00"])

    def test_apple(self):
        cal = self.calendar(zone="America/Los_Angeles")
        r = self.do_import(cal, read("apple.ics"))
        self.assertEqual(r.json["imported"], 4, r)
        self.assertEqual(len(r.json["skipped"]), 1, r)  # a RECURRENCE-ID that is no instance
        self.assertIn("not an instance", r.json["skipped"][0]["reason"])
        insts = self.instances(cal)
        climbing = [i for i in insts if i[0].startswith("A1B2C3D4")]
        starts = [i[2] for i in climbing]
        self.assertNotIn("2026-03-17T17:30:00-07:00", starts)
        self.assertIn("2026-03-10T17:30:00-07:00", starts)
        wed = [i for i in climbing if i[2] == "2026-03-18T17:30:00-07:00"]
        self.assertEqual(wed[0][1], "Climbing (Wednesday this week)")
        # A location is one line: Apple's line break becomes a space.
        self.assertEqual(climbing[0][4], "Mission Cliffs 2295 Harrison St, San Francisco")
        self.assertEqual(climbing[0][8], (("push", 30),))
        self.assertEqual(self.starts(insts, "5E6F7A8B"), ["2026-11-26", "2027-11-25"])
        dentist = [i for i in insts if i[1] == "Dentist"]
        self.assertEqual(dentist[0][2:4], ("2026-06-01T12:00:00-07:00", "2026-06-01T12:45:00-07:00"))

    def test_outlook(self):
        cal = self.calendar()
        r = self.do_import(cal, read("outlook.ics"))
        self.assertEqual(r.json["imported"], 3, r)
        insts = self.instances(cal)
        review = [i for i in insts if i[1] == "Quarterly review"]
        self.assertEqual([i[2] for i in review],
                         ["2026-01-15T14:00:00-05:00", "2026-04-16T14:00:00-04:00", "2026-10-15T16:00:00-04:00",
                          "2027-01-21T14:00:00-05:00", "2027-04-15T14:00:00-04:00", "2027-07-15T14:00:00-04:00",
                          "2027-10-21T14:00:00-04:00"])
        self.assertEqual(review[2][4], "Conference Room B")
        berlin = [i[2] for i in insts if i[1] == "Daily mit Berlin"]
        self.assertEqual(len(berlin), 40)
        self.assertEqual(berlin[0], "2026-02-09T09:00:00+01:00")  # a Windows zone name, kept as its zone
        self.assertEqual([i[2:4] for i in insts if i[1] == "Offsite"], [("2026-02-23", "2026-02-24")])

    def test_round_trip_every_producer(self):
        for name in PRODUCERS:
            with self.subTest(name):
                zone = {"thunderbird.ics": "Europe/Berlin", "apple.ics": "America/Los_Angeles"}.get(
                    name, "America/New_York")
                first = self.calendar(zone)
                self.do_import(first, read(name))
                text = self.export(first).body
                self.assertIn("BEGIN:VTIMEZONE", text)
                for line in text.split("\r\n"):
                    self.assertLessEqual(len(line.encode()), 75, line)
                second = self.calendar(zone)
                r = self.do_import(second, text.encode())
                self.assertEqual(r.json["skipped"], [], r)
                a, b = self.instances(first), self.instances(second)
                self.assertGreater(len(a), 5)
                self.assertEqual(a, b)

    def test_export_shape(self):
        cal = self.calendar()
        self.do_import(cal, read("google.ics"))
        r = self.export(cal)
        self.assertIn("attachment", r.header("content-disposition"))
        text = r.body
        self.assertTrue(text.startswith("BEGIN:VCALENDAR\r\nPRODID:"))
        self.assertTrue(text.endswith("END:VCALENDAR\r\n"))
        unfolded = text.replace("\r\n ", "")
        self.assertIn("TZID:America/New_York\r\n", unfolded)
        self.assertIn("RECURRENCE-ID;TZID=America/New_York:20260304T093000\r\n", unfolded)
        self.assertIn("EXDATE;TZID=America/New_York:20260119T093000,20260216T093000,20260306T093000,"
                      "20260525T093000\r\n", unfolded)
        self.assertIn("PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:" + BOB, unfolded)
        self.assertIn("ORGANIZER:mailto:" + self.user["email"], unfolded)
        self.assertIn("DTSTART;VALUE=DATE:20260704\r\n", unfolded)
        self.assertIn("LOCATION:Room 4\\, Floor 2\r\n", unfolded)
        self.assertEqual(unfolded.count("BEGIN:VEVENT"), 5)  # 4 series + 1 moved instance

    def test_events_made_over_the_api_export(self):
        cal = self.calendar()
        ev = self.server.post("/v1/events", {"calendar_id": cal, "summary": "Made here",
                                             "start": {"date_time": "2026-06-01T09:00:00", "time_zone": "Asia/Tokyo"},
                                             "end": {"date_time": "2026-06-01T10:00:00", "time_zone": "Asia/Tokyo"},
                                             "recurrence": ["RRULE:FREQ=DAILY;COUNT=5"]}, token=self.token)
        self.assertEqual(ev.status, 201, ev)
        self.assertEqual(self.server.delete("/v1/events/%s/instances/20260602T000000Z" % ev.json["id"],
                                            token=self.token).status, 204)
        r = self.server.patch("/v1/events/%s/instances/20260603T000000Z" % ev.json["id"], {"summary": "Renamed"},
                              token=self.token)
        self.assertEqual(r.status, 200, r)
        text = self.export(cal).body.replace("\r\n ", "")
        self.assertIn("DTSTART;TZID=Asia/Tokyo:20260601T090000", text)
        self.assertIn("EXDATE;TZID=Asia/Tokyo:20260602T090000", text)
        self.assertIn("RECURRENCE-ID;TZID=Asia/Tokyo:20260603T090000", text)
        self.assertIn("SUMMARY:Renamed", text)
        self.assertIn("UID:" + ev.json["ical_uid"], text)
        # Text survives the trip (controls other than tab, and newline
        # outside descriptions, are refused on the way in).
        odd = self.server.post("/v1/events", {"calendar_id": cal, "summary": "Tab\there; semi, comma \\ back",
                                              "description": "two\nlines; and \\ more",
                                              "start": {"date": "2026-07-01"}, "end": {"date": "2026-07-02"}},
                               token=self.token)
        self.assertEqual(odd.status, 201, odd)
        again = self.calendar()
        r = self.do_import(again, self.export(cal).body.encode())
        self.assertEqual(r.json["imported"], 2, r)
        expected = self.instances(cal)
        self.assertIn("Tab\there; semi, comma \\ back", [i[1] for i in expected])
        self.assertIn("two\nlines; and \\ more", [i[5] for i in expected])
        self.assertEqual(self.instances(again), expected)


    def test_sparse_overrides(self):
        """Overrides that leave out DTSTART (keep the time) or DTEND (keep the length)."""
        cal = self.calendar()
        body = vcal(*vevent("s@test", "DTSTART;TZID=America/New_York:20260105T090000",
                            "DTEND;TZID=America/New_York:20260105T100000", "RRULE:FREQ=DAILY;COUNT=3"),
                    "BEGIN:VEVENT", "UID:s@test", "RECURRENCE-ID;TZID=America/New_York:20260106T090000",
                    "SUMMARY:Renamed only", "END:VEVENT",
                    "BEGIN:VEVENT", "UID:s@test", "RECURRENCE-ID:20260107T140000Z",
                    "DTSTART;TZID=Europe/London:20260107T170000", "SUMMARY:Moved, no end", "END:VEVENT")
        r = self.do_import(cal, body)
        self.assertEqual((r.json["imported"], r.json["skipped"]), (1, []), r)
        self.assertEqual([i[1:4] for i in self.instances(cal)],
                         [("Event", "2026-01-05T09:00:00-05:00", "2026-01-05T10:00:00-05:00"),
                          ("Renamed only", "2026-01-06T09:00:00-05:00", "2026-01-06T10:00:00-05:00"),
                          ("Moved, no end", "2026-01-07T12:00:00-05:00", "2026-01-07T13:00:00-05:00")])


class TestReimport(IcalTest):
    def test_reimport_updates_not_duplicates(self):
        cal = self.calendar()
        self.do_import(cal, read("google.ics"))
        before = self.instances(cal)
        r = self.do_import(cal, read("google.ics"))
        self.assertEqual((r.json["imported"], r.json["updated"]), (0, 4), r)
        self.assertEqual(self.instances(cal), before)
        # An edited file changes the event in place.
        edited = read("google.ics").replace(b"SUMMARY:Demo day", b"SUMMARY:Demo day (new room)")
        r = self.do_import(cal, edited)
        self.assertEqual(r.json["updated"], 4, r)
        after = self.instances(cal)
        self.assertEqual(len(after), len(before))
        self.assertEqual(len([i for i in after if i[1] == "Demo day (new room)"]), 18)

    def test_reimport_of_own_export_into_same_calendar(self):
        cal = self.calendar()
        self.do_import(cal, read("outlook.ics"))
        before = self.instances(cal)
        r = self.do_import(cal, self.export(cal).body.encode())
        self.assertEqual((r.json["imported"], r.json["updated"]), (0, 3), r)
        self.assertEqual(self.instances(cal), before)

    def test_bob_keeps_his_answer_across_reimport(self):
        cal = self.calendar()
        self.do_import(cal, read("google.ics"))
        bob = self.server.signin(BOB)
        q = {"from": WINDOW[0], "to": WINDOW[1], "max_results": 200}
        items = self.server.get("/v1/events?" + urllib.parse.urlencode(q), token=bob).json["items"]
        mine = [i for i in items if i["ical_uid"].startswith("7kukuqrfedlm") and i["organizer"]["email"] ==
                self.user["email"]]
        self.assertTrue(mine, items)
        eid = mine[0]["recurring_event_id"]
        r = self.server.post("/v1/events/%s/rsvp" % eid, {"status": "declined"}, token=bob)
        self.assertEqual(r.status, 200, r)
        self.do_import(cal, read("google.ics"))
        ev = self.server.get("/v1/events/" + eid, token=bob).json
        self.assertEqual([a["response_status"] for a in ev["attendees"]], ["declined"])


class TestBadInput(IcalTest):
    def assertRefused(self, cal, body, line, words=()):
        before = self.instances(cal)
        r = self.do_import(cal, body, expect=422)
        self.assertError(r, 422, field="body", code="invalid_ical")
        self.assertEqual(r.json["error"]["line"], line, r)
        self.assertTrue(r.json["error"]["message"].startswith("line %d: " % line), r)
        for w in words:
            self.assertIn(w, r.json["error"]["message"])
        self.assertEqual(self.instances(cal), before)

    def test_malformed_files_name_the_line_and_change_nothing(self):
        cal = self.calendar()
        self.do_import(cal, read("google.ics"))
        good = vevent("good@test")
        # Unbalanced: the VEVENT is never closed; END:VCALENDAR does not close it.
        body = vcal(*good, "BEGIN:VEVENT", "UID:x@test", "DTSTART:20260105T090000")
        self.assertRefused(cal, body, 14, ["END:VCALENDAR", "BEGIN:VEVENT"])
        body = vcal(*good)[:-len(b"END:VCALENDAR\r\n")]
        self.assertRefused(cal, body, 1, ["never closed"])
        # A bad DTSTART, after a good event (which must not be saved either).
        body = vcal(*good, *vevent("bad@test", "DTSTART;TZID=America/New_York:2026013T0900"))
        self.assertRefused(cal, body, 14, ["DTSTART", "2026013T0900"])
        body = vcal(*good, *vevent("bad@test", "DTSTART:20260230T090000"))
        self.assertRefused(cal, body, 14, ["DTSTART"])
        # A bad RRULE.
        body = vcal(*good, *vevent("bad@test", "DTSTART:20260105T090000", "DTEND:20260105T100000",
                                   "RRULE:FREQ=SOMETIMES"))
        self.assertRefused(cal, body, 17, ["RRULE", "FREQ"])
        body = vcal(*vevent("bad@test", "DTSTART:20260105T090000", "DTEND:20260105T100000",
                            "RRULE:FREQ=MONTHLY;BYMONTHDAY=32"))
        self.assertRefused(cal, body, 10, ["BYMONTHDAY"])
        # Content-line shape.
        self.assertRefused(cal, vcal("BEGIN:VEVENT", "UID x", "END:VEVENT"), 5, ["UID"])
        self.assertRefused(cal, vcal("BEGIN:VEVENT", 'ATTENDEE;CN="Bob:mailto:b@x', "END:VEVENT"), 5,
                           ["unterminated"])
        self.assertRefused(cal, vcal("", " folded", "BEGIN:VEVENT", "END:VEVENT"), 5, ["continuation"])
        body = vcal("BEGIN:VEVENT", "SUMMARY:cafX", "END:VEVENT").replace(b"cafX", b"caf\xe9")
        self.assertRefused(cal, body, 5, ["UTF-8"])
        self.assertRefused(cal, b"hello world\r\n", 1)

    def test_empty_and_wrong_type(self):
        cal = self.calendar()
        r = self.do_import(cal, b"", expect=422)
        self.assertError(r, 422, code="invalid_ical")
        r = self.do_import(cal, read("google.ics"), ctype="application/json", expect=415)
        self.assertError(r, 415)
        self.assertEqual(self.instances(cal), [])

    def test_too_many_events(self):
        cal = self.calendar()
        lines = []
        for i in range(5001):
            lines += ["BEGIN:VEVENT", "UID:%d" % i, "DTSTART;VALUE=DATE:20260101", "END:VEVENT"]
        r = self.do_import(cal, vcal(*lines), expect=422)
        self.assertIn("5000", r.json["error"]["message"])
        self.assertEqual(self.instances(cal), [])

    def test_skips_what_cannot_be_stored(self):
        # One event that cannot be stored is skipped and listed; the rest of
        # the file is imported (issue 24.3), never a 422 for the whole file.
        cal = self.calendar()
        body = vcal(*vevent("ok@test"),
                    "BEGIN:VJOURNAL", "UID:j@test", "END:VJOURNAL",
                    *vevent("backwards@test", "DTSTART:20260105T090000", "DTEND:20260105T080000"),
                    # In the spring-forward gap, 02:30 is 03:30 EDT: after its end.
                    *vevent("gap@test", "DTSTART;TZID=America/New_York:20260308T023000",
                            "DTEND;TZID=America/New_York:20260308T031500"),
                    *vevent("mars@test", "DTSTART;TZID=Mars/Olympus_Mons:20260105T090000",
                            "DTEND;TZID=Mars/Olympus_Mons:20260105T100000"),
                    *vevent("nowhere@test", 'DTSTART;TZID="(UTC+04:00) Nowhere Standard":20260105T090000',
                            'DTEND;TZID="(UTC+04:00) Nowhere Standard":20260105T100000'),
                    *vevent("three@test", "DTSTART:20260105T090000", "DTEND:20260105T100000",
                            "RRULE:FREQ=DAILY;COUNT=2", "RRULE:FREQ=WEEKLY;COUNT=2", "RRULE:FREQ=YEARLY;COUNT=2"))
        r = self.do_import(cal, body)
        self.assertEqual(r.json["imported"], 1, r)
        skipped = {s["uid"]: s for s in r.json["skipped"]}
        self.assertEqual(sorted(skipped), ["backwards@test", "gap@test", "j@test", "mars@test", "nowhere@test",
                                           "three@test"])
        self.assertIn("before", skipped["backwards@test"]["reason"])
        self.assertIn("Mars/Olympus_Mons", skipped["mars@test"]["reason"])
        self.assertIn("Nowhere", skipped["nowhere@test"]["reason"])
        self.assertIn("RRULE", skipped["three@test"]["reason"])
        self.assertEqual(skipped["backwards@test"]["line"], 18)  # its DTEND
        self.assertEqual([i[0] for i in self.instances(cal)], ["ok@test"])


    def test_lone_instance(self):
        cal = self.calendar()
        weekly = vevent("w@test", "DTSTART;TZID=America/New_York:20260105T090000",
                        "DTEND;TZID=America/New_York:20260105T100000", "RRULE:FREQ=WEEKLY;COUNT=4")
        one = ("BEGIN:VEVENT", "UID:w@test", "RECURRENCE-ID;TZID=America/New_York:20260112T090000",
               "DTSTART;TZID=America/New_York:20260112T150000", "DTEND;TZID=America/New_York:20260112T160000",
               "SUMMARY:Just this one", "END:VEVENT")
        # Alone in a file (as Google exports a single invitation): a single event.
        other = self.calendar()
        r = self.do_import(other, vcal(*one))
        self.assertEqual(r.json["imported"], 1, r)
        self.assertEqual([i[1:3] for i in self.instances(other)],
                         [("Just this one", "2026-01-12T15:00:00-05:00")])
        # It never replaces a whole series already stored under its UID.
        self.do_import(cal, vcal(*weekly))
        before = self.instances(cal)
        r = self.do_import(cal, vcal(*one))
        self.assertEqual((r.json["imported"], r.json["updated"]), (0, 0), r)
        self.assertIn("already in this calendar", r.json["skipped"][0]["reason"])
        self.assertEqual(self.instances(cal), before)
        self.assertEqual(len(before), 4)


class TestRealWorldShapes(IcalTest):
    """What Facebook, Outlook, Google and Evolution write that was refused
    (issues 24.2, 24.3, 24.3b): imported, exported, re-imported the same."""

    def round_trip(self, cal, zone="America/New_York"):
        text = self.export(cal).body
        again = self.calendar(zone)
        r = self.do_import(again, text.encode())
        self.assertEqual(r.json["skipped"], [], r)
        self.assertEqual(self.instances(cal), self.instances(again))
        return text

    def test_facebook_zero_length_events(self):
        cal = self.calendar()
        r = self.do_import(cal, read("facebook.ics"))
        self.assertEqual((r.json["imported"], r.json["skipped"]), (2, []), r)
        insts = self.instances(cal)
        self.assertEqual([(i[1], i[2], i[3]) for i in insts],
                         [("City Marathon: start", "2026-03-14T10:00:00-04:00", "2026-03-14T10:00:00-04:00"),
                          ("Ticket sale opens", "2026-04-01T13:00:00-04:00", "2026-04-01T13:00:00-04:00")])
        # An instant is in [from, to) when from <= start < to.
        q = "/v1/events?from=%s&to=%s&calendar_id=" + cal
        r = self.server.get(q % ("2026-03-14T14:00:00Z", "2026-03-14T14:00:01Z"), token=self.token)
        self.assertEqual([i["summary"] for i in r.json["items"]], ["City Marathon: start"])
        r = self.server.get(q % ("2026-03-14T13:00:00Z", "2026-03-14T14:00:00Z"), token=self.token)
        self.assertEqual(r.json["items"], [])
        text = self.round_trip(cal)
        block = text.split("UID:e1234567890123456@facebook.com")[0].rsplit("BEGIN:VEVENT", 1)[1] + \
            text.split("UID:e1234567890123456@facebook.com")[1].split("END:VEVENT")[0]
        self.assertIn("DTSTART", block)
        self.assertNotIn("DTEND", block)   # RFC 5545: DTEND must be after DTSTART
        self.assertNotIn("DURATION", block)

    def test_outlook_customized_time_zone(self):
        cal = self.calendar()
        r = self.do_import(cal, read("outlook-custom-tz.ics"))
        self.assertEqual((r.json["imported"], r.json["skipped"]), (2, []), r)
        insts = self.instances(cal)
        # Its definition is US Eastern's: the series is in America/New_York,
        # 09:00 on both sides of the March change.
        planning = [(i[2], i[3]) for i in insts if i[1] == "Planning"]
        self.assertEqual(planning, [("2026-03-02T09:00:00-05:00", "2026-03-02T09:30:00-05:00"),
                                    ("2026-03-09T09:00:00-04:00", "2026-03-09T09:30:00-04:00"),
                                    ("2026-03-16T09:00:00-04:00", "2026-03-16T09:30:00-04:00"),
                                    ("2026-03-23T09:00:00-04:00", "2026-03-23T09:30:00-04:00")])
        ev = [e for e in self.server.get("/v1/events?from=2026-03-01T00:00:00Z&to=2026-03-03T00:00:00Z&calendar_id="
                                         + cal, token=self.token).json["items"]][0]
        self.assertEqual(ev["start"]["time_zone"], "America/New_York")
        # No IANA zone has the other definition (+05:30, and +06:30 from the
        # first Sunday of April to the first of October): kept in UTC at the
        # instant it gives -- 10:00 at +05:30 is 04:30Z -- and repeated there.
        odd = [(i[2], i[3]) for i in insts if i[1] == "Odd zone"]
        self.assertEqual(odd, [("2026-04-03T04:30:00Z", "2026-04-03T05:30:00Z"),
                               ("2026-04-04T04:30:00Z", "2026-04-04T05:30:00Z"),
                               ("2026-04-05T04:30:00Z", "2026-04-05T05:30:00Z")])
        self.round_trip(cal)

    def test_google_rdate_dates_with_z(self):
        cal = self.calendar()
        r = self.do_import(cal, read("google-rdate-z.ics"))
        self.assertEqual((r.json["imported"], r.json["skipped"]), (1, []), r)
        q = "/v1/events?from=2013-12-01T00:00:00Z&to=2014-01-01T00:00:00Z&calendar_id=" + cal
        items = self.server.get(q, token=self.token).json["items"]
        self.assertEqual([i["start"]["date"] for i in items], ["2013-12-03", "2013-12-10", "2013-12-17", "2013-12-24"])

    def test_two_rrules_are_their_union(self):
        cal = self.calendar()
        r = self.do_import(cal, read("two-rrules.ics"))
        self.assertEqual((r.json["imported"], r.json["skipped"]), (1, []), r)
        self.assertEqual([i[2][:10] for i in self.instances(cal)],
                         ["2026-01-05", "2026-01-12", "2026-01-15", "2026-01-19", "2026-02-15", "2026-03-15"])
        text = self.round_trip(cal)
        self.assertIn("RRULE:FREQ=WEEKLY;COUNT=3;BYDAY=MO\r\n", text)
        self.assertIn("RRULE:FREQ=MONTHLY;UNTIL=20260401T000000Z;BYMONTHDAY=15\r\n", text)


class TestBodyLimit(IcalTest):
    server_args = ("--max-body", "4096")

    def test_body_limit_applies(self):
        cal = self.calendar()
        r = self.do_import(cal, read("google.ics") + b" " * 4096, expect=413)
        self.assertError(r, 413)
        self.assertEqual(self.instances(cal), [])


class TestAccessAndFeed(IcalTest):
    def test_other_users_calendar_is_404(self):
        cal = self.calendar()
        self.do_import(cal, read("google.ics"))
        _, other = self.server.new_user()
        self.assertError(self.server.get("/v1/calendars/%s/export.ics" % cal, token=other), 404)
        r = self.do_import(cal, read("apple.ics"), token=other, expect=404)
        self.assertError(r, 404)
        self.assertError(self.server.post("/v1/calendars/%s/feed" % cal, token=other), 404)
        self.assertError(self.server.delete("/v1/calendars/%s/feed" % cal, token=other), 404)
        self.assertError(self.server.get("/v1/calendars/zzzz/export.ics", token=self.token), 404)
        self.assertEqual(self.server.get("/v1/calendars/%s/export.ics" % cal).status, 401)
        self.assertEqual(len([i for i in self.instances(cal) if i[1] == "Climbing"]), 0)

    def test_feed_works_without_auth_rotates_and_revokes(self):
        cal = self.calendar()
        self.do_import(cal, read("outlook.ics"))
        r = self.server.post("/v1/calendars/%s/feed" % cal, token=self.token)
        self.assertEqual(r.status, 201, r)
        url = r.json["url"]
        self.assertRegex(url, r"^/v1/feeds/[0-9a-f]{64}\.ics$")
        feed = self.server.get(url)
        self.assertEqual(feed.status, 200, feed)
        self.assertTrue(feed.header("content-type").startswith("text/calendar"))
        self.assertIn("SUMMARY:Quarterly review", feed.body)
        self.assertEqual(feed.body.count("BEGIN:VEVENT"), 4)
        self.assertIsNone(feed.header("content-disposition"))
        # The token is a key: the access log shows the route, not the path.
        secret = url.split("/")[-1][:-4]
        rid = feed.header("x-request-id")
        deadline = time.time() + 5
        while time.time() < deadline and ("id=" + rid) not in self.server.log():
            time.sleep(0.05)
        self.assertIn("GET /v1/feeds/{token} 200", self.server.log())
        self.assertNotIn(secret, self.server.log())
        # Subscribers polling an unchanged calendar get 304.
        etag = feed.header("etag")
        self.assertTrue(etag)
        again = self.server.get(url, headers={"If-None-Match": etag})
        self.assertEqual(again.status, 304, again)
        self.assertEqual(again.body, "")
        ev = self.server.post("/v1/events", {"calendar_id": cal, "summary": "New",
                                             "start": {"date": "2026-09-01"}, "end": {"date": "2026-09-02"}},
                              token=self.token)
        self.assertEqual(ev.status, 201, ev)
        changed = self.server.get(url, headers={"If-None-Match": etag})
        self.assertEqual(changed.status, 200, changed)
        self.assertIn("SUMMARY:New", changed.body)
        # Rotation: a new URL, the old one is dead.
        r2 = self.server.post("/v1/calendars/%s/feed" % cal, token=self.token)
        self.assertEqual(r2.status, 201, r2)
        self.assertNotEqual(r2.json["url"], url)
        self.assertError(self.server.get(url), 404)
        self.assertEqual(self.server.get(r2.json["url"]).status, 200)
        # Revocation.
        self.assertEqual(self.server.delete("/v1/calendars/%s/feed" % cal, token=self.token).status, 204)
        self.assertError(self.server.get(r2.json["url"]), 404)
        self.assertError(self.server.get("/v1/feeds/nonsense.ics"), 404)
        self.assertError(self.server.get("/v1/feeds/" + "0" * 64 + ".ics"), 404)


if __name__ == "__main__":
    main()
