"""Calendar over real HTTP: events, recurring series across DST, exceptions,
pagination, invitations, visibility, free/busy, and bad input that changes
nothing."""
import json
import urllib.parse

from chime import ServerTest, main

NY = "America/New_York"
LONDON = "Europe/London"


def timed(local, zone):
    return {"date_time": local, "time_zone": zone}


class CalendarTest(ServerTest):
    def setUp(self):
        self.user, self.token = self.server.new_user()

    def create(self, token=None, expect=201, **body):
        body.setdefault("summary", "Event")
        r = self.server.post("/v1/events", body, token=token or self.token)
        self.assertEqual(r.status, expect, r)
        return r.json

    def weekly(self, start, end, zone, rule, token=None, **kw):
        return self.create(token=token, start=timed(start, zone), end=timed(end, zone), recurrence=[rule], **kw)

    def listing(self, frm, to, token=None, **params):
        q = dict(params, **{"from": frm, "to": to})
        r = self.server.get("/v1/events?" + urllib.parse.urlencode(q), token=token or self.token)
        self.assertEqual(r.status, 200, r)
        return r.json

    def starts(self, frm, to, token=None, **params):
        return [i["start"].get("date_time") or i["start"].get("date")
                for i in self.listing(frm, to, token=token, **params)["items"]]


class TestEvents(CalendarTest):
    def test_create_get_patch_delete_with_etags(self):
        ev = self.create(summary="Lunch", description="tacos", location="cafe",
                         start=timed("2026-11-03T12:00:00", NY), end=timed("2026-11-03T13:00:00", NY),
                         reminders=[{"method": "email", "minutes_before": 10}])
        self.assertRegex(ev["id"], r"^[0-9a-f]{16}$")
        self.assertEqual(ev["start"], {"date_time": "2026-11-03T12:00:00-05:00", "time_zone": NY})
        self.assertEqual(ev["organizer"]["email"], self.user["email"])
        self.assertEqual(ev["reminders"], [{"method": "email", "minutes_before": 10}])
        self.assertTrue(ev["ical_uid"])
        got = self.server.get("/v1/events/" + ev["id"], token=self.token)
        self.assertEqual(got.status, 200)
        self.assertEqual(got.json["etag"], ev["etag"])
        self.assertEqual(got.header("etag"), '"%s"' % ev["etag"])

        r = self.server.patch("/v1/events/" + ev["id"], {"summary": "Long lunch"}, token=self.token,
                              headers={"If-Match": '"%s"' % ev["etag"]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["summary"], "Long lunch")
        self.assertEqual(r.json["description"], "tacos")
        self.assertNotEqual(r.json["etag"], ev["etag"])
        stale = self.server.patch("/v1/events/" + ev["id"], {"summary": "Lost update"}, token=self.token,
                                  headers={"If-Match": '"%s"' % ev["etag"]})
        self.assertError(stale, 412)
        self.assertEqual(self.server.get("/v1/events/" + ev["id"], token=self.token).json["summary"], "Long lunch")

        self.assertEqual(self.server.delete("/v1/events/" + ev["id"], token=self.token).status, 204)
        self.assertError(self.server.get("/v1/events/" + ev["id"], token=self.token), 404)

    def test_offset_and_utc_inputs(self):
        ev = self.create(start={"date_time": "2026-07-01T09:00:00-04:00", "time_zone": LONDON},
                         end={"date_time": "2026-07-01T14:00:00Z", "time_zone": LONDON})
        self.assertEqual(ev["start"]["date_time"], "2026-07-01T14:00:00+01:00")
        self.assertEqual(ev["end"]["date_time"], "2026-07-01T15:00:00+01:00")
        # No zone at all: the calendar's (UTC for a primary calendar).
        ev = self.create(start={"date_time": "2026-07-01T09:00:00"}, end={"date_time": "2026-07-01T10:00:00"})
        self.assertEqual(ev["start"], {"date_time": "2026-07-01T09:00:00Z", "time_zone": "UTC"})

    def test_all_day(self):
        ev = self.create(start={"date": "2026-12-24"}, end={"date": "2026-12-26"},
                         recurrence=["RRULE:FREQ=YEARLY"])
        items = self.listing("2027-12-01T00:00:00Z", "2028-01-01T00:00:00Z")["items"]
        self.assertEqual(len(items), 1)
        self.assertEqual(items[0]["start"], {"date": "2027-12-24"})
        self.assertEqual(items[0]["end"], {"date": "2027-12-26"})
        self.assertEqual(items[0]["id"], ev["id"] + "_20271224")


class TestRecurrence(CalendarTest):
    def test_weekly_new_york_keeps_wall_time_across_dst(self):
        ev = self.weekly("2026-10-26T09:00:00", "2026-10-26T09:30:00", NY, "RRULE:FREQ=WEEKLY;BYDAY=MO")
        items = self.listing("2026-10-20T00:00:00Z", "2026-11-20T00:00:00Z")["items"]
        self.assertEqual([i["start"]["date_time"] for i in items],
                         ["2026-10-26T09:00:00-04:00", "2026-11-02T09:00:00-05:00",
                          "2026-11-09T09:00:00-05:00", "2026-11-16T09:00:00-05:00"])
        self.assertEqual(items[1]["id"], ev["id"] + "_20261102T140000Z")
        self.assertEqual(items[1]["recurring_event_id"], ev["id"])
        self.assertEqual(items[1]["original_start"]["date_time"], "2026-11-02T09:00:00-05:00")
        self.assertEqual(items[1]["end"]["date_time"], "2026-11-02T09:30:00-05:00")
        # Spring forward too.
        self.assertEqual(self.starts("2027-03-05T00:00:00Z", "2027-03-20T00:00:00Z"),
                         ["2027-03-08T09:00:00-05:00", "2027-03-15T09:00:00-04:00"])

    def test_weekly_london_across_both_changes(self):
        self.weekly("2026-03-23T18:00:00", "2026-03-23T19:00:00", LONDON, "RRULE:FREQ=WEEKLY;COUNT=6")
        self.assertEqual(self.starts("2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"),
                         ["2026-03-23T18:00:00Z", "2026-03-30T18:00:00+01:00", "2026-04-06T18:00:00+01:00",
                          "2026-04-13T18:00:00+01:00", "2026-04-20T18:00:00+01:00", "2026-04-27T18:00:00+01:00"])
        self.weekly("2026-10-19T08:00:00", "2026-10-19T09:00:00", LONDON, "RRULE:FREQ=WEEKLY;COUNT=3")
        self.assertEqual(self.starts("2026-10-01T00:00:00Z", "2026-11-30T00:00:00Z"),
                         ["2026-10-19T08:00:00+01:00", "2026-10-26T08:00:00Z", "2026-11-02T08:00:00Z"])

    def test_fathers_day(self):
        self.weekly("2026-06-21T10:00:00", "2026-06-21T11:00:00", NY, "RRULE:FREQ=YEARLY;BYMONTH=6;BYDAY=3SU")
        self.assertEqual([s[:10] for s in self.starts("2026-01-01T00:00:00Z", "2030-01-01T00:00:00Z")],
                         ["2026-06-21", "2027-06-20", "2028-06-18", "2029-06-17"])

    def test_last_weekday_of_month(self):
        self.weekly("2026-11-30T17:00:00", "2026-11-30T17:30:00", NY,
                    "RRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1")
        self.assertEqual([s[:10] for s in self.starts("2026-11-01T00:00:00Z", "2027-05-01T00:00:00Z")],
                         ["2026-11-30", "2026-12-31", "2027-01-29", "2027-02-26", "2027-03-31", "2027-04-30"])

    def test_exdate_and_rdate_lines(self):
        ev = self.weekly("2026-01-05T09:00:00", "2026-01-05T10:00:00", NY, "RRULE:FREQ=WEEKLY;COUNT=4")
        r = self.server.patch("/v1/events/" + ev["id"], {"recurrence": [
            "RRULE:FREQ=WEEKLY;COUNT=4", "EXDATE;TZID=America/New_York:20260112T090000",
            "RDATE;TZID=America/New_York:20260103T150000"]}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertIn("EXDATE;TZID=America/New_York:20260112T090000", r.json["recurrence"])
        self.assertEqual(self.starts("2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z"),
                         ["2026-01-03T15:00:00-05:00", "2026-01-05T09:00:00-05:00",
                          "2026-01-19T09:00:00-05:00", "2026-01-26T09:00:00-05:00"])

    def test_until_before_start_is_an_empty_series(self):
        # As libical, dateutil and rrule.js read it (issue 24.4): the rule
        # bounds DTSTART too. The event is kept (and can be edited), with no
        # instance to list.
        ev = self.weekly("2026-09-02T09:00:00", "2026-09-02T10:00:00", NY,
                         "RRULE:FREQ=DAILY;UNTIL=20260901T130000Z")
        self.assertEqual(self.starts("2026-08-01T00:00:00Z", "2026-10-01T00:00:00Z"), [])
        r = self.server.get("/v1/events/%s/instances?from=2026-08-01T00:00:00Z&to=2026-10-01T00:00:00Z" % ev["id"],
                            token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["items"], [])
        self.assertEqual(self.server.get("/v1/events/" + ev["id"], token=self.token).status, 200)

    def test_two_rules_are_their_union(self):
        # As some producers still write (issue 24.3b); kept as given.
        rules = ["RRULE:FREQ=WEEKLY;COUNT=3;BYDAY=MO", "RRULE:FREQ=MONTHLY;UNTIL=20260401T000000Z;BYMONTHDAY=15"]
        ev = self.create(start=timed("2026-01-05T09:00:00", NY), end=timed("2026-01-05T10:00:00", NY),
                         recurrence=rules)
        self.assertEqual(ev["recurrence"], rules)
        self.assertEqual([s[:10] for s in self.starts("2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z")],
                         ["2026-01-05", "2026-01-12", "2026-01-15", "2026-01-19", "2026-02-15", "2026-03-15"])
        # "This and following" cuts both rules.
        r = self.server.delete("/v1/events/%s/instances/20260115T140000Z?scope=following" % ev["id"],
                               token=self.token)
        self.assertEqual(r.status, 204, r)
        self.assertEqual([s[:10] for s in self.starts("2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z")],
                         ["2026-01-05", "2026-01-12"])

    def test_pagination_and_infinite_series_bound(self):
        self.weekly("2020-01-01T08:00:00", "2020-01-01T08:10:00", "UTC", "RRULE:FREQ=DAILY")
        seen, token, pages = [], None, 0
        while True:
            params = {"max_results": 7}
            if token:
                params["page_token"] = token
            page = self.listing("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", **params)
            seen += [i["id"] for i in page["items"]]
            token = page["next_page_token"]
            pages += 1
            if not token:
                break
        self.assertEqual(len(seen), 31)
        self.assertEqual(len(set(seen)), 31)
        self.assertEqual(pages, 5)
        # A ten-year window over a never-ending series is one bounded page.
        page = self.listing("2026-01-01T00:00:00Z", "2035-12-31T00:00:00Z")
        self.assertEqual(len(page["items"]), 250)
        self.assertTrue(page["next_page_token"])
        bad = self.server.get("/v1/events?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z&page_token=nonsense",
                              token=self.token)
        self.assertError(bad, 400, field="page_token")


class TestExceptions(CalendarTest):
    def series(self):
        return self.weekly("2026-11-02T09:00:00", "2026-11-02T10:00:00", NY, "RRULE:FREQ=WEEKLY;BYDAY=MO",
                           summary="Sync")

    def test_override_moves_out_of_and_into_ranges(self):
        ev = self.series()
        # Move Nov 9 to Nov 20 (outside the week of Nov 9).
        r = self.server.patch("/v1/events/%s/instances/20261109T140000Z" % ev["id"],
                              {"summary": "Moved", "start": timed("2026-11-20T15:00:00", NY),
                               "end": timed("2026-11-20T16:00:00", NY)}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["original_start"]["date_time"], "2026-11-09T09:00:00-05:00")
        self.assertEqual(self.starts("2026-11-08T00:00:00Z", "2026-11-12T00:00:00Z"), [])
        week = self.listing("2026-11-19T00:00:00Z", "2026-11-22T00:00:00Z")["items"]
        self.assertEqual(len(week), 1)
        self.assertEqual(week[0]["summary"], "Moved")
        self.assertEqual(week[0]["id"], ev["id"] + "_20261109T140000Z")
        # Sorted among the others by its new time.
        self.assertEqual(self.starts("2026-11-15T00:00:00Z", "2026-11-25T00:00:00Z"),
                         ["2026-11-16T09:00:00-05:00", "2026-11-20T15:00:00-05:00", "2026-11-23T09:00:00-05:00"])
        # An instance moved to before the series started is still found.
        r = self.server.patch("/v1/events/%s/instances/20261116T140000Z" % ev["id"],
                              {"start": timed("2026-10-01T09:00:00", NY)}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["end"]["date_time"], "2026-10-01T10:00:00-04:00")
        self.assertEqual(self.starts("2026-09-30T00:00:00Z", "2026-10-02T00:00:00Z"), ["2026-10-01T09:00:00-04:00"])

    def test_delete_one_instance_and_cancel_another(self):
        ev = self.series()
        self.assertEqual(self.server.delete("/v1/events/%s/instances/20261109T140000Z" % ev["id"],
                                            token=self.token).status, 204)
        r = self.server.patch("/v1/events/%s/instances/20261116T140000Z" % ev["id"], {"status": "cancelled"},
                              token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.starts("2026-11-01T00:00:00Z", "2026-11-25T00:00:00Z"),
                         ["2026-11-02T09:00:00-05:00", "2026-11-23T09:00:00-05:00"])
        got = self.server.get("/v1/events/" + ev["id"], token=self.token).json
        self.assertIn("EXDATE;TZID=America/New_York:20261109T090000", got["recurrence"])
        self.assertError(self.server.delete("/v1/events/%s/instances/20261110T140000Z" % ev["id"],
                                            token=self.token), 404)
        self.assertError(self.server.patch("/v1/events/%s/instances/garbage" % ev["id"], {"summary": "x"},
                                           token=self.token), 404)

    def test_this_and_following(self):
        ev = self.series()
        r = self.server.patch("/v1/events/%s/instances/20261116T140000Z?scope=following" % ev["id"],
                              {"summary": "Sync v2", "start": timed("2026-11-16T11:00:00", NY),
                               "end": timed("2026-11-16T12:00:00", NY)}, token=self.token)
        self.assertEqual(r.status, 200, r)
        new = r.json
        self.assertNotEqual(new["id"], ev["id"])
        items = self.listing("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")["items"]
        self.assertEqual([(i["summary"], i["start"]["date_time"]) for i in items],
                         [("Sync", "2026-11-02T09:00:00-05:00"), ("Sync", "2026-11-09T09:00:00-05:00"),
                          ("Sync v2", "2026-11-16T11:00:00-05:00"), ("Sync v2", "2026-11-23T11:00:00-05:00"),
                          ("Sync v2", "2026-11-30T11:00:00-05:00")])
        old = self.server.get("/v1/events/" + ev["id"], token=self.token).json
        self.assertIn("UNTIL=", old["recurrence"][0])
        # Deleting "this and following" ends the new series after one more.
        self.assertEqual(self.server.delete("/v1/events/%s/instances/20261130T160000Z?scope=following" % new["id"],
                                            token=self.token).status, 204)
        self.assertEqual(len(self.listing("2026-11-01T00:00:00Z", "2027-02-01T00:00:00Z")["items"]), 4)

    def test_following_keeps_count(self):
        ev = self.weekly("2026-11-02T09:00:00", "2026-11-02T10:00:00", NY, "RRULE:FREQ=WEEKLY;COUNT=5")
        r = self.server.patch("/v1/events/%s/instances/20261116T140000Z?scope=following" % ev["id"],
                              {"summary": "Later"}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertIn("COUNT=3", r.json["recurrence"][0])
        self.assertEqual(len(self.listing("2026-10-01T00:00:00Z", "2027-03-01T00:00:00Z")["items"]), 5)


class TestInvitations(CalendarTest):
    def test_attendee_view_rsvp_and_strangers(self):
        bob, bob_token = self.server.new_user()
        eve, eve_token = self.server.new_user()
        ev = self.weekly("2026-11-03T14:00:00", "2026-11-03T15:00:00", NY, "RRULE:FREQ=WEEKLY;COUNT=3",
                         summary="Planning", attendees=[{"email": bob["email"].upper()}])
        self.assertEqual([a["email"] for a in ev["attendees"]], [bob["email"]])
        self.assertEqual(ev["attendees"][0]["response_status"], "needs_action")

        items = self.listing("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", token=bob_token)["items"]
        self.assertEqual(len(items), 3)
        me = [a for a in items[0]["attendees"] if a.get("self")]
        self.assertEqual(me[0]["response_status"], "needs_action")

        r = self.server.post("/v1/events/%s/rsvp" % ev["id"], {"status": "accepted"}, token=bob_token)
        self.assertEqual(r.status, 200, r)
        org = self.server.get("/v1/events/" + ev["id"], token=self.token).json
        self.assertEqual(org["attendees"][0]["response_status"], "accepted")
        # The attendee cannot change the event itself.
        self.assertError(self.server.patch("/v1/events/" + ev["id"], {"summary": "Mine now"}, token=bob_token), 403)
        self.assertError(self.server.delete("/v1/events/" + ev["id"], token=bob_token), 403)
        # A stranger gets 404 everywhere.
        for method, path, body in [
            ("GET", "/v1/events/" + ev["id"], None),
            ("PATCH", "/v1/events/" + ev["id"], {"summary": "x"}),
            ("DELETE", "/v1/events/" + ev["id"], None),
            ("GET", "/v1/events/%s/instances?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z" % ev["id"], None),
            ("PATCH", "/v1/events/%s/instances/20261103T190000Z" % ev["id"], {"summary": "x"}),
            ("DELETE", "/v1/events/%s/instances/20261103T190000Z" % ev["id"], None),
            ("POST", "/v1/events/%s/rsvp" % ev["id"], {"status": "accepted"}),
        ]:
            with self.subTest(method=method, path=path):
                self.assertError(self.server.request(method, path, body=body, token=eve_token), 404)
        self.assertEqual(self.listing("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", token=eve_token)["items"], [])
        self.assertEqual(self.server.get("/v1/events/" + ev["id"], token=self.token).json["summary"], "Planning")
        # Uninvited: gone from bob's view.
        self.assertEqual(self.server.patch("/v1/events/" + ev["id"], {"attendees": []}, token=self.token).status, 200)
        self.assertError(self.server.get("/v1/events/" + ev["id"], token=bob_token), 404)

    def test_listing_follows_the_invited_event_through_time(self):
        """A listing reads an attendee's invitations by where they end
        (attendee_spans): the copy must follow every change of the event."""
        bob, bob_token = self.server.new_user()
        nov = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
        bob_in = [{"email": bob["email"]}]
        old = self.create(summary="Old meeting", start=timed("2020-03-03T10:00:00", NY),
                          end=timed("2020-03-03T11:00:00", NY), attendees=bob_in)
        self.assertEqual(self.starts("2020-03-01T00:00:00Z", "2020-04-01T00:00:00Z", token=bob_token),
                         ["2020-03-03T10:00:00-05:00"])
        self.assertEqual(self.starts(*nov, token=bob_token), [])
        # Moved into November: it is there for the attendee.
        r = self.server.patch("/v1/events/" + old["id"], {"start": timed("2026-11-10T10:00:00", NY),
                                                          "end": timed("2026-11-10T11:00:00", NY)}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.starts(*nov, token=bob_token), ["2026-11-10T10:00:00-05:00"])
        self.assertEqual(self.starts("2020-03-01T00:00:00Z", "2020-04-01T00:00:00Z", token=bob_token), [])
        # A series of 2020 with one instance moved into November; and a
        # series that never ends, invited to later.
        series = self.weekly("2020-01-06T09:00:00", "2020-01-06T09:30:00", NY, "RRULE:FREQ=WEEKLY;COUNT=4",
                             summary="Old series", attendees=bob_in)
        r = self.server.patch("/v1/events/%s/instances/20200113T140000Z" % series["id"],
                              {"start": timed("2026-11-12T09:00:00", NY), "end": timed("2026-11-12T09:30:00", NY)},
                              token=self.token)
        self.assertEqual(r.status, 200, r)
        forever = self.weekly("2019-05-01T08:00:00", "2019-05-01T08:15:00", NY, "RRULE:FREQ=MONTHLY;BYMONTHDAY=1",
                              summary="Forever")
        self.assertEqual(len(self.starts(*nov, token=bob_token)), 2)
        r = self.server.patch("/v1/events/" + forever["id"], {"attendees": bob_in}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.starts(*nov, token=bob_token),
                         ["2026-11-01T08:00:00-05:00", "2026-11-10T10:00:00-05:00", "2026-11-12T09:00:00-05:00"])
        # Ended before November now: gone from it; uninvited: gone.
        r = self.server.patch("/v1/events/" + forever["id"],
                              {"recurrence": ["RRULE:FREQ=MONTHLY;BYMONTHDAY=1;UNTIL=20261002T000000Z"]},
                              token=self.token)
        self.assertEqual(r.status, 200, r)
        r = self.server.patch("/v1/events/" + old["id"], {"attendees": []}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.starts(*nov, token=bob_token), ["2026-11-12T09:00:00-05:00"])
        self.assertEqual(self.starts(*nov), ["2026-11-10T10:00:00-05:00", "2026-11-12T09:00:00-05:00"])

    def test_unknown_attendee_is_refused(self):
        r = self.server.post("/v1/events", {"summary": "x", "start": timed("2026-11-03T14:00:00", NY),
                                            "end": timed("2026-11-03T15:00:00", NY),
                                            "attendees": [{"email": "nobody-here@example.com"}]}, token=self.token)
        self.assertError(r, 400, field="attendees[0]")


class TestZeroLength(CalendarTest):
    """An event that ends as it starts (issue 24.2): a deadline, a start
    signal. It is an instant: listed when from <= start < to, never busy."""

    def test_store_list_and_freebusy(self):
        ev = self.create(summary="Deadline", start=timed("2026-11-03T17:00:00", NY),
                         end=timed("2026-11-03T17:00:00", NY))
        self.assertEqual(ev["start"], ev["end"])
        at = "2026-11-03T22:00:00Z"
        self.assertEqual(self.starts(at, "2026-11-03T22:00:01Z"), ["2026-11-03T17:00:00-05:00"])
        self.assertEqual(self.starts("2026-11-03T00:00:00Z", "2026-11-04T00:00:00Z"), ["2026-11-03T17:00:00-05:00"])
        self.assertEqual(self.starts("2026-11-03T21:00:00Z", at), [])   # to is exclusive
        self.assertEqual(self.starts("2026-11-03T22:00:01Z", "2026-11-04T00:00:00Z"), [])
        # A zero-length series, and one of its instances moved.
        series = self.weekly("2026-11-02T09:00:00", "2026-11-02T09:00:00", NY, "RRULE:FREQ=DAILY;COUNT=3",
                             summary="Check-in")
        r = self.server.patch("/v1/events/%s/instances/20261103T140000Z" % series["id"],
                              {"start": timed("2026-11-03T12:00:00", NY), "end": timed("2026-11-03T12:00:00", NY)},
                              token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.starts("2026-11-03T17:00:00Z", "2026-11-03T17:00:01Z"), ["2026-11-03T12:00:00-05:00"])
        self.assertEqual(len(self.starts("2026-11-01T00:00:00Z", "2026-11-06T00:00:00Z")), 4)
        # Instants take no time: free/busy shows none of them.
        r = self.server.post("/v1/freebusy", {"users": [self.user["email"]], "from": "2026-11-01T00:00:00Z",
                                              "to": "2026-11-06T00:00:00Z"}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["users"][self.user["email"]]["busy"], [], r)
        # Still refused: an end before the start, and an all-day event of no days.
        self.create(expect=400, start=timed("2026-11-03T17:00:00", NY), end=timed("2026-11-03T16:59:59", NY))
        self.create(expect=400, start={"date": "2026-11-03"}, end={"date": "2026-11-03"})


class TestFreeBusy(CalendarTest):
    def test_busy_intervals(self):
        bob, bob_token = self.server.new_user()
        self.weekly("2026-11-02T09:00:00", "2026-11-02T10:00:00", NY, "RRULE:FREQ=DAILY;COUNT=3",
                    summary="Secret meeting", attendees=[{"email": bob["email"]}])
        self.create(summary="Overlap", start=timed("2026-11-02T09:30:00", NY), end=timed("2026-11-02T11:00:00", NY))
        declined = self.create(summary="Nope", start=timed("2026-11-03T13:00:00", NY),
                               end=timed("2026-11-03T14:00:00", NY), attendees=[{"email": bob["email"]}])
        self.server.post("/v1/events/%s/rsvp" % declined["id"], {"status": "declined"}, token=bob_token)
        body = {"users": [self.user["email"], bob["id"], "ghost@example.com"],
                "from": "2026-11-02T00:00:00Z", "to": "2026-11-05T00:00:00Z"}
        r = self.server.post("/v1/freebusy", body, token=bob_token)
        self.assertEqual(r.status, 200, r)
        self.assertNotIn("Secret", r.body)
        mine = r.json["users"][self.user["email"]]["busy"]
        self.assertEqual(mine, [{"start": "2026-11-02T14:00:00Z", "end": "2026-11-02T16:00:00Z"},
                                {"start": "2026-11-03T14:00:00Z", "end": "2026-11-03T15:00:00Z"},
                                {"start": "2026-11-03T18:00:00Z", "end": "2026-11-03T19:00:00Z"},
                                {"start": "2026-11-04T14:00:00Z", "end": "2026-11-04T15:00:00Z"}])
        bobs = r.json["users"][bob["id"]]["busy"]
        self.assertEqual([b["start"] for b in bobs],
                         ["2026-11-02T14:00:00Z", "2026-11-03T14:00:00Z", "2026-11-04T14:00:00Z"])
        self.assertEqual(r.json["users"]["ghost@example.com"]["error"], "not_found")


class TestListingRange(CalendarTest):
    """A listing finds its events by where each series ends (and where each
    moved instance ends), so the history before the range is never read:
    every event that overlaps the range must still be found that way."""

    def test_overlapping_events_are_found_past_events_are_not(self):
        for i in range(30):
            day = "%d-03-%02dT09:00:00" % (2016 + i % 5, 1 + i % 28)
            self.create(summary="Old %d" % i, start=timed(day, NY), end=timed(day.replace("T09", "T10"), NY))
        ended = self.weekly("2019-01-07T09:00:00", "2019-01-07T10:00:00", NY,
                            "RRULE:FREQ=WEEKLY;UNTIL=20200101T000000Z", summary="Ended")
        self.weekly("2015-06-01T08:00:00", "2015-06-01T08:30:00", NY, "RRULE:FREQ=WEEKLY;BYDAY=MO",
                    summary="Forever")
        self.create(summary="In range", start=timed("2026-11-10T12:00:00", NY), end=timed("2026-11-10T13:00:00", NY))
        self.create(summary="Spanning", start={"date": "2026-10-20"}, end={"date": "2026-11-04"})
        # An instance of the series that ended in 2019 moved into the range:
        # the series ends long before it, its moved instance in it.
        r = self.server.patch("/v1/events/%s/instances/20190114T140000Z" % ended["id"],
                              {"summary": "Moved", "start": timed("2026-11-12T09:00:00", NY),
                               "end": timed("2026-11-12T10:00:00", NY)}, token=self.token)
        self.assertEqual(r.status, 200, r)
        # Another user's series since 2014, to which this user is invited.
        other, other_token = self.server.new_user()
        self.weekly("2014-02-04T15:00:00", "2014-02-04T16:00:00", LONDON, "RRULE:FREQ=WEEKLY;BYDAY=TU",
                    token=other_token, summary="Invited", attendees=[{"email": self.user["email"]}])
        self.weekly("2014-02-04T15:00:00", "2014-02-04T16:00:00", LONDON, "RRULE:FREQ=WEEKLY;BYDAY=TU",
                    token=other_token, summary="Not mine")
        items = self.listing("2026-11-01T00:00:00Z", "2026-11-15T00:00:00Z")["items"]
        self.assertEqual(sorted({i["summary"] for i in items}),
                         ["Forever", "In range", "Invited", "Moved", "Spanning"])
        self.assertEqual(len(items), 2 + 1 + 2 + 1 + 1)  # Forever, In range, Invited x2, Moved, Spanning
        old = self.listing("2016-01-01T00:00:00Z", "2021-01-01T00:00:00Z", max_results=2500)["items"]
        self.assertEqual(len([i for i in old if i["summary"].startswith("Old ")]), 30)
        self.assertIn("Ended", {i["summary"] for i in old})


class TestCalendars(CalendarTest):
    def test_primary_secondary_and_ownership(self):
        cals = self.server.get("/v1/calendars", token=self.token).json["items"]
        self.assertEqual(len(cals), 1)
        self.assertTrue(cals[0]["primary"])
        r = self.server.post("/v1/calendars", {"summary": "Work", "time_zone": LONDON}, token=self.token)
        self.assertEqual(r.status, 201, r)
        work = r.json
        ev = self.create(calendar_id=work["id"], start={"date_time": "2026-11-05T09:00:00"},
                         end={"date_time": "2026-11-05T10:00:00"})
        self.assertEqual(ev["start"]["time_zone"], LONDON)
        only = self.listing("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", calendar_id=work["id"])["items"]
        self.assertEqual([i["id"] for i in only], [ev["id"]])
        other, other_token = self.server.new_user()
        self.assertError(self.server.get("/v1/calendars/" + work["id"], token=other_token), 404)
        self.assertError(self.server.delete("/v1/calendars/" + work["id"], token=other_token), 404)
        r = self.server.post("/v1/events", {"calendar_id": work["id"], "start": {"date": "2026-11-05"},
                                            "end": {"date": "2026-11-06"}}, token=other_token)
        self.assertError(r, 404, field="calendar_id")
        self.assertError(self.server.delete("/v1/calendars/" + cals[0]["id"], token=self.token), 403)
        self.assertEqual(self.server.delete("/v1/calendars/" + work["id"], token=self.token).status, 204)
        self.assertError(self.server.get("/v1/events/" + ev["id"], token=self.token), 404)

    def test_rename(self):
        work = self.server.post("/v1/calendars", {"summary": "Work", "time_zone": LONDON}, token=self.token).json
        path = "/v1/calendars/" + work["id"]
        r = self.server.patch(path, {"summary": "Day job"}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["summary"], r.json["time_zone"], r.json["id"]), ("Day job", LONDON, work["id"]))
        self.assertEqual(self.server.get(path, token=self.token).json["summary"], "Day job")
        # What a GET answered may be sent back with a change (the zone as it is).
        got = self.server.get(path, token=self.token).json
        r = self.server.patch(path, {"summary": "Work again", "time_zone": got["time_zone"]}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.server.patch(path, {}, token=self.token).json["summary"], "Work again")
        # Bad input names its field and changes nothing; others' calendars are not there.
        for body, field in [({"summary": ""}, "summary"), ({"summary": "x" * 1025}, "summary"),
                            ({"summary": "two\nlines"}, "summary"), ({"summary": 7}, "summary"),
                            ({"time_zone": "Asia/Tokyo"}, "time_zone"), ({"colour": "red"}, "colour")]:
            with self.subTest(body=body):
                self.assertError(self.server.patch(path, body, token=self.token), 400, field=field)
        self.assertError(self.server.request("PATCH", path, token=self.token, raw=b'{"summary": "x',
                                                    headers={"Content-Type": "application/json"}), 400)
        self.assertError(self.server.request("PATCH", path, token=self.token, raw=b'["summary"]',
                                                    headers={"Content-Type": "application/json"}), 400)
        other, other_token = self.server.new_user()
        self.assertError(self.server.patch(path, {"summary": "Mine"}, token=other_token), 404)
        self.assertError(self.server.patch("/v1/calendars/0000000000000001", {"summary": "x"}, token=self.token), 404)
        names = [c["summary"] for c in self.server.get("/v1/calendars", token=self.token).json["items"]]
        self.assertIn("Work again", names)
        self.assertEqual(self.server.get(path, token=self.token).json["time_zone"], LONDON)


class TestBadInput(CalendarTest):
    def count(self):
        return len(self.listing("2000-01-01T00:00:00Z", "2009-12-01T00:00:00Z")["items"]) + \
            len(self.listing("2026-01-01T00:00:00Z", "2035-12-01T00:00:00Z")["items"])

    def test_event_bodies(self):
        good = {"summary": "ok", "start": timed("2026-11-03T14:00:00", NY), "end": timed("2026-11-03T15:00:00", NY)}
        cases = [
            ("recurrence[0]", dict(good, recurrence=["RRULE:FREQ=MONTHLY;BYMONTHDAY=32"]), "BYMONTHDAY"),
            ("recurrence[0]", dict(good, recurrence=["RRULE:FREQ=DAILY;COUNT=2;UNTIL=20270101T000000Z"]), None),
            ("recurrence[2]", dict(good, recurrence=["RRULE:FREQ=DAILY", "RRULE:FREQ=WEEKLY", "RRULE:FREQ=YEARLY"]),
             "at most 2"),
            ("recurrence[0]", dict(good, recurrence=["FROBNICATE:1"]), None),
            ("recurrence[0]", dict(good, recurrence=["EXDATE:notadate"]), None),
            ("recurrence", dict(good, recurrence="RRULE:FREQ=DAILY"), None),
            ("end", dict(good, end=timed("2026-11-03T13:00:00", NY)), None),
            ("end", dict(good, end={"date": "2026-11-04"}), None),
            ("start.time_zone", dict(good, start=timed("2026-11-03T14:00:00", "Mars/Olympus_Mons")), None),
            ("start.time_zone", dict(good, start=timed("2026-11-03T14:00:00", "../../etc/passwd")), None),
            ("start.date_time", dict(good, start=timed("yesterday", NY)), None),
            ("start.date_time", dict(good, start=timed("2026-02-30T10:00:00", NY)), None),
            ("start", dict(good, start={"date": "2026-11-03", "date_time": "2026-11-03T10:00:00Z"}), None),
            ("start.when", dict(good, start={"when": "now"}), None),
            ("start", {k: v for k, v in good.items() if k != "start"}, None),
            ("description", dict(good, description="x" * 9000), None),
            ("summary", dict(good, summary=12), None),
            ("attendees", dict(good, attendees=[{"email": "a%d@example.com" % i} for i in range(10000)]), None),
            ("attendees[0]", dict(good, attendees=["bob"]), None),
            ("reminders[0].method", dict(good, reminders=[{"method": "pigeon", "minutes_before": 5}]), None),
            ("reminders[0].minutes_before", dict(good, reminders=[{"method": "push", "minutes_before": 50000}]), None),
            ("status", dict(good, status="maybe"), None),
            ("color", dict(good, color="red"), None),
            ("calendar_id", dict(good, calendar_id="ffffffffffffffff"), None),
        ]
        before = self.count()
        for field, body, word in cases:
            with self.subTest(field=field):
                r = self.server.post("/v1/events", body, token=self.token)
                self.assertIn(r.status, (400, 404), r)
                self.assertError(r, r.status, field=field)
                if word:
                    self.assertIn(word, r.json["error"]["message"])
        self.assertError(self.server.request("POST", "/v1/events", raw=b"{", token=self.token,
                                             headers={"Content-Type": "application/json"}), 400, field="body")
        self.assertError(self.server.request("POST", "/v1/events", raw=b"{}", token=self.token,
                                             headers={"Content-Type": "text/calendar"}), 415)
        self.assertEqual(self.count(), before)

    def test_patch_bad_input_changes_nothing(self):
        ev = self.create(start=timed("2026-11-03T14:00:00", NY), end=timed("2026-11-03T15:00:00", NY))
        for body in ({"end": timed("2026-11-03T13:00:00", NY)}, {"recurrence": ["RRULE:FREQ=YEARLY;BYWEEKNO=54"]},
                     {"summary": None, "bogus": 1}):
            self.assertEqual(self.server.patch("/v1/events/" + ev["id"], body, token=self.token).status, 400)
        after = self.server.get("/v1/events/" + ev["id"], token=self.token).json
        self.assertEqual(after["etag"], ev["etag"])

    def test_list_parameters(self):
        for q, field in [("to=2026-02-01T00:00:00Z", "from"), ("from=2026-01-01T00:00:00Z", "to"),
                         ("from=2026-01-01&to=2026-02-01T00:00:00Z", "from"),
                         ("from=2026-03-01T00:00:00Z&to=2026-02-01T00:00:00Z", "to"),
                         ("from=2000-01-01T00:00:00Z&to=2030-01-01T00:00:00Z", "to"),
                         ("from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z&max_results=0", "max_results"),
                         ("from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z&max_results=99999", "max_results")]:
            with self.subTest(q=q):
                self.assertError(self.server.get("/v1/events?" + q, token=self.token), 400, field=field)
        self.assertError(self.server.get("/v1/events?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z"), 401)

    def test_rsvp_and_freebusy_input(self):
        bob, bob_token = self.server.new_user()
        ev = self.create(start=timed("2026-11-03T14:00:00", NY), end=timed("2026-11-03T15:00:00", NY),
                         attendees=[{"email": bob["email"]}])
        self.assertError(self.server.post("/v1/events/%s/rsvp" % ev["id"], {"status": "sure"}, token=bob_token),
                         400, field="status")
        self.assertError(self.server.post("/v1/events/%s/rsvp" % ev["id"], {"status": "accepted"}, token=self.token),
                         403)
        for body, field in [({"users": [], "from": "2026-11-01T00:00:00Z", "to": "2026-11-02T00:00:00Z"}, "users"),
                            ({"users": ["a@b.co"] * 51, "from": "2026-11-01T00:00:00Z", "to": "2026-11-02T00:00:00Z"},
                             "users"),
                            ({"users": ["a@b.co"], "from": "2026-11-01", "to": "2026-11-02T00:00:00Z"}, "from"),
                            ({"users": ["a@b.co"], "from": "2026-11-01T00:00:00Z", "to": "2028-11-02T00:00:00Z"}, "to")]:
            self.assertError(self.server.post("/v1/freebusy", body, token=self.token), 400, field=field)


if __name__ == "__main__":
    main()
