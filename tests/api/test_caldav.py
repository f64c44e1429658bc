"""CalDAV with a real client (python3-caldav) against a real chime:
discovery, calendars made and renamed, events saved, loaded and deleted,
date searches with recurrences expanded by the server (overrides and
EXDATEs honoured), sync tokens (changes and deletions, across a restart,
unknown and expired ones), free/busy, invitations in the read-only
collection, conditional requests, and the JSON API and CalDAV seeing the
same data in both directions."""
import datetime
import time
import urllib.parse
from xml.etree import ElementTree as ET

import caldav
import icalendar
from caldav.elements import dav

from caldav_util import C, D, DavUser, dav_error, multistatus, propfind, sync_body, sync_token_of, vcal
from chime import Server, ServerTest, main

UTC = datetime.timezone.utc


def dt(*a):
    return datetime.datetime(*a, tzinfo=UTC)


def standup():
    """Daily at 09:00 Paris for 10 days from Nov 2; Nov 4 deleted (EXDATE),
    Nov 5 moved to 10:00 and retitled."""
    return vcal(["UID:standup@test", "DTSTAMP:20260101T000000Z", "DTSTART;TZID=Europe/Paris:20261102T090000",
                 "DTEND;TZID=Europe/Paris:20261102T091500", "RRULE:FREQ=DAILY;COUNT=10",
                 "EXDATE;TZID=Europe/Paris:20261104T090000", "SUMMARY:Standup"],
                ["UID:standup@test", "DTSTAMP:20260101T000000Z", "RECURRENCE-ID;TZID=Europe/Paris:20261105T090000",
                 "DTSTART;TZID=Europe/Paris:20261105T100000", "DTEND;TZID=Europe/Paris:20261105T101500",
                 "SUMMARY:Standup moved"])


def simple(uid, start, end, *extra):
    return vcal(["UID:" + uid, "DTSTAMP:20260101T000000Z", "DTSTART:" + start, "DTEND:" + end,
                 "SUMMARY:" + uid] + list(extra))


# Series around the week of Nov 1-8 2026, and whether a time-range query
# over that week must match them (any instance, overrides included).
SEARCH_SET = {
    "weekly@test": (vcal(["UID:weekly@test", "DTSTAMP:20260101T000000Z", "DTSTART;TZID=Europe/Paris:20250106T100000",
                          "DTEND;TZID=Europe/Paris:20250106T110000", "RRULE:FREQ=WEEKLY;BYDAY=MO",
                          "SUMMARY:Weekly since 2025"]), True),
    "exdated@test": (vcal(["UID:exdated@test", "DTSTAMP:20260101T000000Z", "DTSTART:20261020T120000Z",
                           "DTEND:20261020T130000Z", "RRULE:FREQ=WEEKLY;COUNT=3", "EXDATE:20261103T120000Z",
                           "SUMMARY:Only in-range instance deleted"]), False),
    "moved-in@test": (vcal(["UID:moved-in@test", "DTSTAMP:20260101T000000Z", "DTSTART:20261015T120000Z",
                            "DTEND:20261015T130000Z", "RRULE:FREQ=WEEKLY;COUNT=2", "SUMMARY:Moved in"],
                           ["UID:moved-in@test", "DTSTAMP:20260101T000000Z", "RECURRENCE-ID:20261022T120000Z",
                            "DTSTART:20261105T120000Z", "DTEND:20261105T130000Z", "SUMMARY:Moved in"]), True),
    "moved-out@test": (vcal(["UID:moved-out@test", "DTSTAMP:20260101T000000Z", "DTSTART:20261104T120000Z",
                             "DTEND:20261104T130000Z", "RRULE:FREQ=WEEKLY;COUNT=2", "SUMMARY:Moved out"],
                            ["UID:moved-out@test", "DTSTAMP:20260101T000000Z", "RECURRENCE-ID:20261104T120000Z",
                             "DTSTART:20261120T120000Z", "DTEND:20261120T130000Z", "SUMMARY:Moved out"]), False),
    "single@test": (simple("single@test", "20261106T150000Z", "20261106T160000Z"), True),
    "single-out@test": (simple("single-out@test", "20261210T150000Z", "20261210T160000Z"), False),
}


def components(text):
    cal = icalendar.Calendar.from_ical(text)
    return [c for c in cal.walk() if c.name == "VEVENT"]


class CalDAVClientTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.admin = DavUser(cls.server, name="Admin")  # the first user administers the server

    def setUp(self):
        self.ada = DavUser(self.server, name="Ada")
        self.client = self.ada.client()
        self.principal = self.client.principal()

    def new_calendar(self, name="Work"):
        return self.principal.make_calendar(name=name)

    def test_discovery(self):
        r = self.server.request("GET", "/.well-known/caldav")
        self.assertEqual(r.status, 301, r)
        self.assertEqual(r.header("location"), "/dav/")
        r = self.server.request("OPTIONS", "/dav/calendars/%s/" % self.ada.id)
        self.assertEqual(r.status, 200, r)
        self.assertEqual([x.strip() for x in r.header("dav").split(",")][:3], ["1", "3", "calendar-access"])
        # The client finds the principal and the home from the root URL.
        self.assertEqual(urllib.parse.urlparse(str(self.principal.url)).path, self.ada.principal)
        self.assertEqual(urllib.parse.urlparse(str(self.principal.calendar_home_set.url)).path, self.ada.home)
        self.assertIn("mailto:" + self.ada.email, [str(a) for a in self.principal.calendar_user_address_set()])
        names = {c.name for c in self.principal.calendars()}
        self.assertIn(self.ada.email, names)  # the primary calendar, named after its owner
        self.assertIn("Invitations", names)
        # From the well-known URL as well (the client follows the redirect).
        well = caldav.DAVClient(url="http://127.0.0.1:%d/.well-known/caldav" % self.server.port,
                                username=self.ada.email, password=self.ada.password)
        self.assertEqual(str(well.principal().url), str(self.principal.url))

    def test_calendar_properties(self):
        cal = self.new_calendar("Work")
        props = cal.get_properties([dav.DisplayName()])
        self.assertEqual(props[dav.DisplayName.tag], "Work")
        self.assertEqual(cal.get_supported_components(), ["VEVENT"])
        r = self.server.get("/v1/calendars", token=self.ada.token)
        self.assertIn("Work", [c["summary"] for c in r.json["items"]])
        cal.set_properties([dav.DisplayName("Renamed")])
        r = self.ada.dav("PROPPATCH", urllib.parse.urlparse(str(cal.url)).path,
                         '<D:propertyupdate xmlns:D="DAV:" xmlns:A="http://apple.com/ns/ical/"><D:set><D:prop>'
                         '<A:calendar-color>#FF8800</A:calendar-color></D:prop></D:set></D:propertyupdate>')
        self.assertEqual(r.status, 207, r)
        path = urllib.parse.urlparse(str(cal.url)).path
        ms = multistatus(self.ada.dav("PROPFIND", path, propfind(["D:displayname", "A:calendar-color",
                                                                   "CS:getctag", "D:sync-token"]), depth=0))
        props = ms[path]["props"]
        self.assertEqual(props[D + "displayname"].text, "Renamed")
        self.assertEqual(props["{http://apple.com/ns/ical/}calendar-color"].text, "#FF8800")
        self.assertEqual(props["{http://calendarserver.org/ns/}getctag"].text, props[D + "sync-token"].text)
        r = self.server.get("/v1/calendars", token=self.ada.token)
        self.assertIn("Renamed", [c["summary"] for c in r.json["items"]])
        # A protected property cannot be set, and then nothing is.
        r = self.ada.dav("PROPPATCH", path, '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:displayname>X'
                                            '</D:displayname><D:getetag>"x"</D:getetag></D:prop></D:set>'
                                            '</D:propertyupdate>')
        statuses = {el.find(D + "status").text.split()[1] for el in ET.fromstring(r.body).iter(D + "propstat")}
        self.assertEqual(statuses, {"403", "424"})
        self.assertIn("Renamed", [c["summary"] for c in self.server.get("/v1/calendars", token=self.ada.token)
                                  .json["items"]])
        cal.delete()
        self.assertNotIn("Renamed", [c["summary"] for c in self.server.get("/v1/calendars", token=self.ada.token)
                                     .json["items"]])

    def test_primary_calendar_cannot_be_deleted(self):
        home = [c for c in self.principal.calendars() if c.name == self.ada.email][0]
        r = self.ada.dav("DELETE", urllib.parse.urlparse(str(home.url)).path)
        self.assertEqual(r.status, 403, r)
        self.assertIn("need-privileges", dav_error(r))

    def test_save_load_delete(self):
        cal = self.new_calendar()
        ev = cal.save_event(standup())
        self.assertTrue(str(ev.url).endswith("/standup%40test.ics"), ev.url)
        loaded = cal.event_by_url(ev.url)
        vevents = components(loaded.data)
        master = [v for v in vevents if "RECURRENCE-ID" not in v][0]
        self.assertEqual(str(master["RRULE"].to_ical(), "ascii"), "FREQ=DAILY;COUNT=10")
        self.assertEqual(len([v for v in vevents if "RECURRENCE-ID" in v]), 1)
        self.assertNotIn("METHOD", loaded.data)  # RFC 4791 4.1
        # The JSON API sees the same series: 9 instances, the 5th moved.
        cal_id = self.json_calendar_id("Work")
        inst = self.ada.instances(cal_id)
        self.assertEqual(len(inst), 9)
        self.assertIn(("standup@test", "Standup moved", "2026-11-05T10:00:00+01:00", "2026-11-05T10:15:00+01:00",
                       "confirmed"), inst)
        self.assertNotIn("2026-11-04T09:00:00+01:00", [i[2] for i in inst])
        ev.delete()
        self.assertEqual(self.ada.dav("GET", urllib.parse.urlparse(str(ev.url)).path).status, 404)
        self.assertEqual(self.ada.instances(cal_id), [])

    def json_calendar_id(self, summary):
        r = self.server.get("/v1/calendars", token=self.ada.token)
        return [c["id"] for c in r.json["items"] if c["summary"] == summary][0]

    def test_date_search_matches_any_instance(self):
        cal = self.new_calendar()
        for text, _ in SEARCH_SET.values():
            cal.save_event(text)
        cal.save_event(standup())
        found = cal.search(start=dt(2026, 11, 1), end=dt(2026, 11, 8), event=True)
        uids = {str(components(o.data)[0]["UID"]) for o in found}
        want = {uid for uid, (_, hit) in SEARCH_SET.items() if hit} | {"standup@test"}
        self.assertEqual(uids, want)

    def query_uids(self, user, path, start="", end=""):
        """UIDs a calendar-query over VEVENTs with this time-range (an end
        left out is open) matches in the collection at path."""
        body = ('<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/>'
                '<C:calendar-data/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">'
                '<C:time-range%s%s/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>'
                % (' start="%s"' % start if start else "", ' end="%s"' % end if end else ""))
        ms = multistatus(user.dav("REPORT", path, body, depth=1))
        return {str(components(r["props"][C + "calendar-data"].text)[0]["UID"]) for r in ms.values()}

    def test_time_range_query_looks_only_at_its_collection_and_window(self):
        """A time-range query loads only the events that may reach into its
        window (by index, as the JSON listings do): still every match, in
        this collection only, open ends too, and in the invitations."""
        work, home = self.new_calendar("Work"), self.new_calendar("Home")
        for text, _ in SEARCH_SET.values():
            work.save_event(text)
        home.save_event(simple("home@test", "20261104T150000Z", "20261104T160000Z"))
        work_path = urllib.parse.urlparse(str(work.url)).path
        hits = {uid for uid, (_, hit) in SEARCH_SET.items() if hit}
        self.assertEqual(self.query_uids(self.ada, work_path, "20261101T000000Z", "20261108T000000Z"), hits)
        self.assertEqual(self.query_uids(self.ada, urllib.parse.urlparse(str(home.url)).path,
                                         "20261101T000000Z", "20261108T000000Z"), {"home@test"})
        self.assertEqual(self.query_uids(self.ada, work_path, start="20261201T000000Z"),
                         {"weekly@test", "single-out@test"})
        # An open start (it overflowed once, and the server died).
        self.assertEqual(self.query_uids(self.ada, work_path, end="20261016T000000Z"),
                         {"weekly@test", "moved-in@test"})
        # Invitations: Bob's collection holds a past meeting and one in the window.
        bob = DavUser(self.server, name="Bob")
        for uid, day in (("past-meet@test", "20200303"), ("meet@test", "20261105")):
            text = vcal(["UID:" + uid, "DTSTAMP:20260101T000000Z", "DTSTART:%sT100000Z" % day,
                         "DTEND:%sT110000Z" % day, "SUMMARY:" + uid, "ORGANIZER:mailto:" + self.ada.email,
                         "ATTENDEE;PARTSTAT=NEEDS-ACTION:mailto:" + bob.email])
            self.assertEqual(self.ada.put(work_path + uid + ".ics", text).status, 201)
        invited = bob.home + "invited/"
        self.assertEqual(self.query_uids(bob, invited, "20261101T000000Z", "20261108T000000Z"), {"meet@test"})
        self.assertEqual(self.query_uids(bob, invited, end="20210101T000000Z"), {"past-meet@test"})

    def test_server_expands_with_overrides_and_exdates(self):
        cal = self.new_calendar()
        cal.save_event(standup())
        path = urllib.parse.urlparse(str(cal.url)).path
        body = ('<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/>'
                '<C:calendar-data><C:expand start="20261103T000000Z" end="20261107T000000Z"/></C:calendar-data>'
                '</D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">'
                '<C:time-range start="20261103T000000Z" end="20261107T000000Z"/></C:comp-filter></C:comp-filter>'
                '</C:filter></C:calendar-query>')
        ms = multistatus(self.ada.dav("REPORT", path, body, depth=1))
        self.assertEqual(len(ms), 1)
        data = list(ms.values())[0]["props"][C + "calendar-data"].text
        for word in ("RRULE", "EXDATE", "RDATE", "VTIMEZONE"):
            self.assertNotIn(word, data)
        got = sorted((str(v["RECURRENCE-ID"].to_ical(), "ascii"), str(v["DTSTART"].to_ical(), "ascii"),
                      str(v["SUMMARY"])) for v in components(data))
        self.assertEqual(got, [("20261103T080000Z", "20261103T080000Z", "Standup"),
                               ("20261105T080000Z", "20261105T090000Z", "Standup moved"),
                               ("20261106T080000Z", "20261106T080000Z", "Standup")])
        # python-caldav's date search with expansion asks the same.
        found = cal.date_search(dt(2026, 11, 3), dt(2026, 11, 7), expand=True)
        self.assertEqual(len(found), 1)
        self.assertEqual(len(components(found[0].data)), 3)

    def test_multiget(self):
        cal = self.new_calendar()
        a = cal.save_event(simple("a@test", "20261101T100000Z", "20261101T110000Z"))
        b = cal.save_event(simple("b@test", "20261102T100000Z", "20261102T110000Z"))
        got = cal.calendar_multiget([a.url, b.url])
        self.assertEqual(sorted(str(components(e.data)[0]["UID"]) for e in got), ["a@test", "b@test"])
        path = urllib.parse.urlparse(str(cal.url)).path
        body = ('<C:calendar-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/>'
                '</D:prop><D:href>%sa%%40test.ics</D:href><D:href>%snope.ics</D:href>'
                '<D:href>/dav/calendars/%s/other/x.ics</D:href></C:calendar-multiget>' % (path, path, self.ada.id))
        ms = multistatus(self.ada.dav("REPORT", path, body, depth=1))
        self.assertIn(D + "getetag", ms[path + "a@test.ics"]["props"])
        self.assertEqual(ms[path + "nope.ics"]["status"], 404)
        self.assertEqual(ms["/dav/calendars/%s/other/x.ics" % self.ada.id]["status"], 404)

    def test_sync_tokens_report_changes_and_deletions(self):
        cal = self.new_calendar()
        keep = cal.save_event(simple("keep@test", "20261101T100000Z", "20261101T110000Z"))
        gone = cal.save_event(simple("gone@test", "20261102T100000Z", "20261102T110000Z"))
        objs = cal.objects_by_sync_token(load_objects=True)
        self.assertEqual(len(list(objs)), 2)
        # A change through the JSON API and a deletion through CalDAV.
        cal_id = self.json_calendar_id("Work")
        ev = [e for e in self.server.get("/v1/events?from=2026-11-01T00:00:00Z&to=2026-11-03T00:00:00Z&calendar_id="
                                         + cal_id, token=self.ada.token).json["items"] if e["ical_uid"] == "keep@test"][0]
        r = self.server.patch("/v1/events/" + ev["id"], {"summary": "Kept and changed"}, token=self.ada.token)
        self.assertEqual(r.status, 200, r)
        gone.delete()
        updated, deleted = objs.sync()
        self.assertEqual([str(o.url) for o in updated], [str(keep.url)])
        self.assertIn("Kept and changed", updated[0].data)
        self.assertEqual([str(o.url) for o in deleted], [str(gone.url)])
        # Nothing new: nothing reported, and the token stays.
        token = objs.sync_token
        self.assertEqual(objs.sync(), ([], []))
        self.assertEqual(objs.sync_token, token)
        # A token of another collection, or a made-up one: 403 valid-sync-token.
        path = urllib.parse.urlparse(str(cal.url)).path
        for bad in ("urn:x-chime:sync:c0000000000000001:1", "nonsense", token + "0"):
            r = self.ada.dav("REPORT", path, sync_body(bad))
            self.assertEqual(r.status, 403, r)
            self.assertIn("valid-sync-token", dav_error(r))

    def test_sync_with_limit_pages(self):
        cal = self.new_calendar()
        for i in range(5):
            cal.save_event(simple("p%d@test" % i, "20261101T10000%dZ" % i, "20261101T11000%dZ" % i))
        path = urllib.parse.urlparse(str(cal.url)).path
        seen, token = set(), ""
        for _ in range(10):
            r = self.ada.dav("REPORT", path, sync_body(token, limit=2))
            ms = multistatus(r)
            token = sync_token_of(r)
            members = {h for h, e in ms.items() if h != path}
            if not members:
                break
            self.assertLessEqual(len(members), 2)
            seen |= members
        self.assertEqual(len(seen), 5)

    def test_free_busy(self):
        cal = self.new_calendar()
        cal.save_event(standup())
        fb = cal.freebusy_request(dt(2026, 11, 2), dt(2026, 11, 5))
        periods = [line.split(":", 1)[1] for line in fb.data.splitlines() if line.startswith("FREEBUSY")]
        self.assertEqual(periods, ["20261102T080000Z/20261102T081500Z", "20261103T080000Z/20261103T081500Z"])

    def test_conditional_requests(self):
        cal = self.new_calendar()
        path = urllib.parse.urlparse(str(cal.url)).path + "cond.ics"
        text = simple("cond@test", "20261101T100000Z", "20261101T110000Z")
        self.assertEqual(self.ada.put(path, text, {"If-None-Match": "*"}).status, 201)
        r = self.ada.put(path, text, {"If-None-Match": "*"})
        self.assertEqual(r.status, 412, r)
        got = self.ada.dav("GET", path)
        etag = got.header("etag")
        self.assertTrue(etag.startswith('"') and etag.endswith('"'), etag)
        self.assertEqual(self.ada.dav("GET", path, headers={"If-None-Match": etag}).status, 304)
        changed = text.replace("SUMMARY:cond@test", "SUMMARY:changed")
        self.assertEqual(self.ada.put(path, changed, {"If-Match": '"stale"'}).status, 412)
        # Garbage and near misses of the ETag: 412, nothing written.
        stored, tag = etag.strip('"').rsplit("-", 1)
        for bad in ('"', '""', '"-"', etag[:-1], etag[1:], '"%s-"' % stored, '"%s-%s"' % (stored, tag.upper()),
                    '"%s-%s"' % (stored, "g" * 8), '"%s-%s0"' % (stored, tag), '"%s-%s"' % (stored, tag[:-1]),
                    '"%sx-%s"' % (stored, tag), '"%s"' % stored[:-1], "W/", ",,,", "x" * 5000):
            with self.subTest(if_match=bad[:40]):
                self.assertEqual(self.ada.put(path, changed, {"If-Match": bad}).status, 412)
                self.assertEqual(self.ada.dav("GET", path, headers={"If-None-Match": bad}).status, 200)
        self.assertEqual(self.ada.put(path, changed, {"If-Match": '"\x00"'}).status, 400)  # not a header value
        self.assertNotIn("changed", self.ada.dav("GET", path).body)
        # A write names the event's state: the ETag of the builds before the
        # zone tag (the stored part alone) still matches; a GET's cache does
        # not (its bytes carry the zone data).
        self.assertEqual(self.ada.dav("GET", path, headers={"If-None-Match": '"%s"' % stored}).status, 200)
        self.assertEqual(self.ada.put(path, changed, {"If-Match": etag}).status, 204)
        self.assertEqual(self.ada.dav("DELETE", path, headers={"If-Match": etag}).status, 412)
        self.assertEqual(self.ada.dav("DELETE", path, headers={"If-Match": self.ada.dav("GET", path)
                                                                  .header("etag")}).status, 204)
        self.assertEqual(self.ada.put(path, text, {"If-None-Match": "*"}).status, 201)
        bare = '"%s"' % self.ada.dav("GET", path).header("etag").strip('"').rsplit("-", 1)[0]
        self.assertEqual(self.ada.put(path, changed, {"If-Match": bare}).status, 204)
        self.assertEqual(self.ada.put(path, text, {"If-Match": bare}).status, 412)  # the event changed since

    def test_put_refusals_change_nothing(self):
        cal = self.new_calendar()
        base = urllib.parse.urlparse(str(cal.url)).path
        self.assertEqual(self.ada.put(base + "one.ics", simple("one@test", "20261101T100000Z",
                                                                "20261101T110000Z")).status, 201)
        cases = [
            (vcal(["UID:x@test", "DTSTART:20261101T100000Z", "DTEND:20261101T110000Z"],
                  ["UID:y@test", "DTSTART:20261101T100000Z", "DTEND:20261101T110000Z"]), 403,
             "valid-calendar-object-resource"),
            ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VTODO\r\nUID:t@test\r\nSUMMARY:task\r\nEND:VTODO\r\n"
             "END:VCALENDAR\r\n", 403, "supported-calendar-component"),
            ("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:b@test\r\nDTSTART:2026-11-01\r\nEND:VEVENT\r\n"
             "END:VCALENDAR\r\n", 403, "valid-calendar-data"),
            (simple("one@test", "20261101T100000Z", "20261101T110000Z"), 409, "no-uid-conflict"),
        ]
        before = self.ada.instances(self.json_calendar_id("Work"))
        for text, status, cond in cases:
            r = self.ada.put(base + "new.ics", text)
            self.assertEqual(r.status, status, r)
            self.assertIn(cond, dav_error(r))
        r = self.ada.put(base + "one.ics", simple("other-uid@test", "20261101T100000Z", "20261101T110000Z"))
        self.assertEqual(r.status, 409, r)
        r = self.ada.put(base + "x.ics", "not a calendar", {"Content-Type": "application/json"})
        self.assertEqual(r.status, 415, r)
        self.assertEqual(self.ada.instances(self.json_calendar_id("Work")), before)
        self.assertEqual(self.ada.dav("GET", base + "new.ics").status, 404)

    def test_a_name_holding_an_encoded_slash_is_one_resource(self):
        """A client may name a resource with %2F in it (a slash inside one
        path segment, RFC 3986): it is one resource under that name, listed
        with the slash encoded again, and no other path reaches it."""
        cal = self.new_calendar("Slash")
        base = urllib.parse.urlparse(str(cal.url)).path
        path = base + "a%2Fb.ics"
        r = self.ada.put(path, simple("slash@test", "20261101T100000Z", "20261101T110000Z"))
        self.assertEqual(r.status, 201, r)
        r = self.ada.dav("GET", path)
        self.assertEqual(r.status, 200, r)
        self.assertIn("UID:slash@test", r.body)
        self.assertEqual(self.ada.dav("GET", base + "a%2fb.ics").status, 200)
        self.assertEqual(self.ada.dav("GET", base + "a/b.ics").status, 404)
        r = self.ada.dav("PROPFIND", base, propfind(["D:getetag"]), depth=1)
        self.assertEqual(r.status, 207, r)
        hrefs = [h.text for h in ET.fromstring(r.body.encode()).iter("{DAV:}href")]
        self.assertIn(path, hrefs)
        self.assertEqual(self.ada.dav("DELETE", path).status, 204)
        self.assertEqual(self.ada.dav("GET", path).status, 404)

    def test_put_equals_import(self):
        """A PUT stores what the same text imported stores, and what GET
        returns stores the same again."""
        with open(__file__.replace("test_caldav.py", "../data/ical/thunderbird.ics"), "rb") as f:
            text = f.read().decode()
        put_cal = self.new_calendar("Put")
        imp_id, _ = self.ada.calendar("Imported", "UTC")
        r = self.server.request("POST", "/v1/calendars/%s/import" % imp_id, raw=text.encode(), token=self.ada.token,
                                headers={"Content-Type": "text/calendar"})
        self.assertEqual(r.status, 200, r)
        put_id = self.json_calendar_id("Put")
        base = urllib.parse.urlparse(str(put_cal.url)).path
        for i, piece in enumerate(split_by_uid(text)):
            self.assertIn(self.ada.put(base + "r%d.ics" % i, piece).status, (201, 204))
        imported = self.ada.instances(imp_id)
        self.assertTrue(imported)
        self.assertEqual(self.ada.instances(put_id), imported)
        # Round trip: what GET gives, PUT into a third calendar, is the same.
        again = self.new_calendar("Again")
        again_base = urllib.parse.urlparse(str(again.url)).path
        ms = multistatus(self.ada.dav("PROPFIND", base, propfind(["D:getetag"]), depth=1))
        for href in ms:
            if href != base:
                self.assertEqual(self.ada.put(again_base + href.rsplit("/", 1)[1],
                                              self.ada.dav("GET", href).body).status, 201)
        self.assertEqual(self.ada.instances(self.json_calendar_id("Again")), imported)

    def test_json_api_writes_show_in_caldav(self):
        cal_id, path = self.ada.calendar("Json", "America/New_York")
        r = self.server.post("/v1/events", {
            "calendar_id": cal_id, "summary": "Review",
            "start": {"date_time": "2026-11-02T14:00:00", "time_zone": "America/New_York"},
            "end": {"date_time": "2026-11-02T15:00:00", "time_zone": "America/New_York"},
            "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=6"],
            "reminders": [{"method": "push", "minutes_before": 10}]}, token=self.ada.token)
        self.assertEqual(r.status, 201, r)
        ev = r.json
        moved = self.server.patch("/v1/events/%s/instances/20261104T190000Z" % ev["id"], {
            "summary": "Review (moved)", "start": {"date_time": "2026-11-04T16:00:00", "time_zone": "America/New_York"},
            "end": {"date_time": "2026-11-04T17:00:00", "time_zone": "America/New_York"}}, token=self.ada.token)
        self.assertEqual(moved.status, 200, moved)
        self.assertEqual(self.server.delete("/v1/events/%s/instances/20261109T190000Z" % ev["id"],
                                            token=self.ada.token).status, 204)
        res = path + urllib.parse.quote(ev["ical_uid"]) + ".ics"
        got = self.ada.dav("GET", res)
        self.assertEqual(got.status, 200, got)
        vevents = components(got.body)
        master = [v for v in vevents if "RECURRENCE-ID" not in v][0]
        self.assertIn("FREQ=WEEKLY", str(master["RRULE"].to_ical(), "ascii"))
        self.assertEqual([str(x.to_ical(), "ascii") for x in master["EXDATE"].dts], ["20261109T140000"])
        override = [v for v in vevents if "RECURRENCE-ID" in v][0]
        self.assertEqual(str(override["RECURRENCE-ID"].to_ical(), "ascii"), "20261104T140000")
        self.assertEqual(str(override["DTSTART"].to_ical(), "ascii"), "20261104T160000")
        self.assertEqual(str(override["SUMMARY"]), "Review (moved)")
        self.assertIn("BEGIN:VALARM", got.body)
        # The same text put into another calendar lists the same instances.
        other_id, other_path = self.ada.calendar("Copy", "America/New_York")
        self.assertEqual(self.ada.put(other_path + "copy.ics", got.body).status, 201)
        strip = lambda rows: [row[1:] for row in rows]  # noqa: E731
        self.assertEqual(strip(self.ada.instances(other_id)), strip(self.ada.instances(cal_id)))

    def test_invitations_are_read_only_and_follow_answers(self):
        bob = DavUser(self.server, name="Bob")
        cal = self.new_calendar()
        base = urllib.parse.urlparse(str(cal.url)).path
        text = vcal(["UID:meet@test", "DTSTAMP:20260101T000000Z", "DTSTART:20261110T100000Z",
                     "DTEND:20261110T110000Z", "SUMMARY:Planning", "ORGANIZER:mailto:" + self.ada.email,
                     "ATTENDEE;PARTSTAT=NEEDS-ACTION:mailto:" + bob.email,
                     "ATTENDEE:mailto:stranger@example.com"])
        self.assertEqual(self.ada.put(base + "meet.ics", text).status, 201)
        invited = bob.home + "invited/"
        r = bob.dav("REPORT", invited, sync_body())
        ms = multistatus(r)
        token = sync_token_of(r)
        members = [h for h in ms if h != invited]
        self.assertEqual(len(members), 1)
        got = bob.dav("GET", members[0])
        self.assertIn("SUMMARY:Planning", got.body)
        self.assertIn("ATTENDEE;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:" + bob.email,
                      got.body.replace("\r\n ", ""))
        privs = multistatus(bob.dav("PROPFIND", invited, propfind(["D:current-user-privilege-set"]), depth=0))
        granted = {p.tag for p in privs[invited]["props"][D + "current-user-privilege-set"].iter()}
        self.assertNotIn(D + "write", granted)
        self.assertEqual(bob.put(members[0], text).status, 403)
        self.assertEqual(bob.dav("DELETE", members[0]).status, 403)
        # Bob answers in the JSON API: both copies change.
        ev = [e for e in self.server.get("/v1/events?from=2026-11-10T00:00:00Z&to=2026-11-11T00:00:00Z",
                                         token=bob.token).json["items"]][0]
        self.assertEqual(self.server.post("/v1/events/%s/rsvp" % ev["id"], {"status": "accepted"},
                                          token=bob.token).status, 200)
        r = bob.dav("REPORT", invited, sync_body(token))
        self.assertIn(members[0], multistatus(r))
        self.assertIn("PARTSTAT=ACCEPTED", self.ada.dav("GET", base + "meet.ics").body)
        # Taken off the list: the invitation goes from Bob's collection.
        self.assertEqual(self.ada.put(base + "meet.ics", text.replace("ATTENDEE;PARTSTAT=NEEDS-ACTION:mailto:"
                                                                      + bob.email + "\r\n", "")).status, 204)
        r = bob.dav("REPORT", invited, sync_body(sync_token_of(r)))
        self.assertEqual(multistatus(r)[members[0]]["status"], 404)

    def test_a_reminder_put_by_an_app_fires(self):
        """A VALARM in a PUT is a reminder like the JSON API's: it lands in
        the inbox at its time."""
        cal = self.new_calendar()
        start = datetime.datetime.now(UTC).replace(microsecond=0) + datetime.timedelta(seconds=66)
        stamp = lambda t: t.strftime("%Y%m%dT%H%M%SZ")  # noqa: E731
        text = vcal(["UID:alarm@test", "DTSTAMP:20260101T000000Z", "DTSTART:" + stamp(start),
                     "DTEND:" + stamp(start + datetime.timedelta(minutes=30)), "SUMMARY:Call the bank",
                     "BEGIN:VALARM", "ACTION:DISPLAY", "TRIGGER:-PT1M", "DESCRIPTION:Call", "END:VALARM"])
        self.assertEqual(self.ada.put(urllib.parse.urlparse(str(cal.url)).path + "alarm.ics", text).status, 201)
        deadline = time.time() + 40
        items = []
        while time.time() < deadline and not items:
            items = self.server.get("/v1/notifications", token=self.ada.token).json["items"]
            time.sleep(0.5)
        self.assertEqual([i["summary"] for i in items], ["Call the bank"])


def split_by_uid(text):
    """One VCALENDAR per UID of a file (its VTIMEZONEs copied into each)."""
    cal = icalendar.Calendar.from_ical(text)
    zones = [c for c in cal.subcomponents if c.name == "VTIMEZONE"]
    by_uid = {}
    for c in cal.subcomponents:
        if c.name == "VEVENT":
            by_uid.setdefault(str(c["UID"]), []).append(c)
    out = []
    for uid, events in by_uid.items():
        one = icalendar.Calendar()
        one.add("VERSION", "2.0")
        one.add("PRODID", "-//chime tests//EN")
        for z in zones + events:
            one.add_component(z)
        out.append(one.to_ical().decode())
    return out


class CalDAVSyncAcrossRestartTest(ServerTest):
    def test_tokens_survive_a_restart_and_expire_after_pruning(self):
        admin = DavUser(self.server, name="Admin")
        cal_id, path = admin.calendar()
        self.assertEqual(admin.put(path + "a.ics", simple("a@test", "20261101T100000Z", "20261101T110000Z")).status,
                         201)
        self.assertEqual(admin.put(path + "b.ics", simple("b@test", "20261101T100000Z", "20261101T110000Z")).status,
                         201)
        token = sync_token_of(admin.dav("REPORT", path, sync_body()))
        self.assertEqual(admin.dav("DELETE", path + "b.ics").status, 204)
        self.assertEqual(self.server.stop(), 0)
        type(self).server = Server(db=self.server.db, args=["--caldav-sync-ttl", "0"]).start()
        admin.server = self.server
        r = admin.dav("REPORT", path, sync_body(token))
        ms = multistatus(r)
        self.assertEqual(ms[path + "b.ics"]["status"], 404)  # the deletion, after the restart
        self.assertNotIn(path + "a.ics", ms)
        # Pruned tombstones: the old token has expired; the new one holds.
        newer = sync_token_of(r)
        run = self.server.post("/v1/admin/jobs/caldav-tombstones/run", token=admin.token)
        self.assertEqual(run.status, 202, run)
        deadline = time.time() + 20
        while time.time() < deadline and admin.dav("REPORT", path, sync_body(token)).status != 403:
            time.sleep(0.2)
        r = admin.dav("REPORT", path, sync_body(token))
        self.assertEqual(r.status, 403, r)
        self.assertIn("valid-sync-token", dav_error(r))
        self.assertEqual(admin.dav("REPORT", path, sync_body(newer)).status, 207)
        full = multistatus(admin.dav("REPORT", path, sync_body("")))
        self.assertEqual(set(full) - {path}, {path + "a.ics"})
        self.assertEqual(cal_id, path.rstrip("/").rsplit("/", 1)[1])


def zoneinfo(version, berlin_from, extra=""):
    """A zoneinfo directory like the system's (links to its files), whose
    tzdata.zi names `version` (then holds `extra`) and whose Europe/Berlin
    is the system's zone `berlin_from`: a tzdata release that changed
    Berlin's rules."""
    import os
    import tempfile
    from chime import TMP
    sysdir = "/usr/share/zoneinfo"
    top = tempfile.mkdtemp(prefix="zoneinfo-", dir=TMP)
    for name in os.listdir(sysdir):
        if name not in ("tzdata.zi", "Europe"):
            os.symlink(os.path.join(sysdir, name), os.path.join(top, name))
    os.mkdir(os.path.join(top, "Europe"))
    for name in os.listdir(os.path.join(sysdir, "Europe")):
        if name != "Berlin":
            os.symlink(os.path.join(sysdir, "Europe", name), os.path.join(top, "Europe", name))
    with open(os.path.join(sysdir, berlin_from), "rb") as src, open(os.path.join(top, "Europe", "Berlin"), "wb") as dst:
        dst.write(src.read())
    with open(os.path.join(top, "tzdata.zi"), "w") as f:
        f.write("# version %s\n%s" % (version, extra))
    return top


class CalDAVZoneDataTest(ServerTest):
    """A resource's bytes hold its zone's VTIMEZONE, written from the zone
    data: a new tzdata release that changes them changes the strong ETag,
    the collection's CTag and sync token (old tokens: 403, the client
    syncs again), so no client keeps old bytes under a current ETag. The
    same data across a restart keeps every ETag and token."""

    def restart(self, tzdir):
        self.assertEqual(self.server.stop(), 0)
        type(self).server = Server(db=self.server.db, env={"TZDIR": tzdir}).start()
        if hasattr(self, "user"):
            self.user.server = self.server

    def test_a_new_release_changes_etags_and_tokens(self):
        old, new = zoneinfo("2001a", "Europe/Berlin"), zoneinfo("2002b", "America/New_York")
        self.restart(old)
        self.user = DavUser(self.server, name="Zones")
        cal_id, path = self.user.calendar(zone="Europe/Berlin")
        ev = vcal(["UID:tz@test", "DTSTAMP:20260101T000000Z", "DTSTART;TZID=Europe/Berlin:20261102T090000",
                   "DTEND;TZID=Europe/Berlin:20261102T100000", "RRULE:FREQ=WEEKLY", "SUMMARY:Weekly"])
        self.assertEqual(self.user.put(path + "tz.ics", ev).status, 201)
        first = self.user.dav("GET", path + "tz.ics")
        etag, token = first.header("ETag"), sync_token_of(self.user.dav("REPORT", path, sync_body()))
        self.assertIn("TZOFFSETTO:+0100", first.body)
        ctag = multistatus(self.user.dav("PROPFIND", path, propfind(["CS:getctag"]), depth=0))[path]["props"]
        # The same data after a restart: the same bytes, ETag and token.
        self.restart(old)
        again = self.user.dav("GET", path + "tz.ics")
        self.assertEqual((again.body, again.header("ETag")), (first.body, etag))
        self.assertEqual(multistatus(self.user.dav("REPORT", path, sync_body(token))), {})
        self.assertEqual(self.user.dav("GET", path + "tz.ics", headers={"If-None-Match": etag}).status, 304)
        # A release that moved Berlin's rules: new bytes, new ETag.
        self.restart(new)
        now = self.user.dav("GET", path + "tz.ics")
        self.assertEqual(now.status, 200, now)
        self.assertIn("TZOFFSETTO:-0500", now.body)
        self.assertNotEqual(now.body, first.body)
        self.assertNotEqual(now.header("ETag"), etag)
        self.assertEqual(self.user.dav("GET", path + "tz.ics", headers={"If-None-Match": etag}).status, 200)
        self.assertEqual(self.user.dav("GET", path + "tz.ics",
                                       headers={"If-None-Match": now.header("ETag")}).status, 304)
        # The old token is refused, so a syncing client starts again and
        # is given the new ETag; the CTag moved too.
        r = self.user.dav("REPORT", path, sync_body(token))
        self.assertEqual(r.status, 403, r)
        self.assertIn("valid-sync-token", dav_error(r))
        full = multistatus(self.user.dav("REPORT", path, sync_body("")))
        got = full[path + "tz.ics"]["props"][D + "getetag"].text
        self.assertEqual(got, now.header("ETag"))
        newctag = multistatus(self.user.dav("PROPFIND", path, propfind(["CS:getctag"]), depth=0))[path]["props"]
        self.assertNotEqual(newctag["{http://calendarserver.org/ns/}getctag"].text,
                            ctag["{http://calendarserver.org/ns/}getctag"].text)
        # A write names the event's state: the ETag a client had from before
        # the new zone data still matches (the event is unchanged), and no
        # longer once the event changed.
        moved = ev.replace("SUMMARY:Weekly", "SUMMARY:Weekly, edited")
        self.assertEqual(self.user.put(path + "tz.ics", moved, headers={"If-Match": etag}).status, 204)
        r = self.user.put(path + "tz.ics", ev, headers={"If-Match": etag})
        self.assertEqual(r.status, 412, r)
        r = self.user.put(path + "tz.ics", ev, headers={"If-Match": now.header("ETag")})
        self.assertEqual(r.status, 412, r)
        fresh = self.user.dav("GET", path + "tz.ics").header("ETag")
        self.assertEqual(self.user.put(path + "tz.ics", ev, headers={"If-Match": fresh}).status, 204)

    def test_a_patched_release_of_the_same_name_and_an_empty_tzdir(self):
        """The tag is the whole tzdata.zi's: a distribution's patch under
        the same release name changes it too. An empty TZDIR is the
        system's zone data, as for the C library."""
        self.restart(zoneinfo("2003c", "Europe/Berlin"))
        self.user = DavUser(self.server, name="Zones")
        cal_id, path = self.user.calendar(zone="Europe/Berlin")
        ev = vcal(["UID:p@test", "DTSTAMP:20260101T000000Z", "DTSTART;TZID=Europe/Berlin:20261102T090000",
                   "DTEND;TZID=Europe/Berlin:20261102T100000", "SUMMARY:Once"])
        self.assertEqual(self.user.put(path + "p.ics", ev).status, 201)
        etag = self.user.dav("GET", path + "p.ics").header("ETag")
        self.restart(zoneinfo("2003c", "Europe/Berlin", extra="# a distribution's patch\n"))
        self.assertNotEqual(self.user.dav("GET", path + "p.ics").header("ETag"), etag)
        self.restart("")
        r = self.user.dav("GET", path + "p.ics")
        self.assertEqual(r.status, 200, r)
        self.assertIn("TZOFFSETTO:+0200", r.body)  # the system's Berlin: summer time


if __name__ == "__main__":
    main()
