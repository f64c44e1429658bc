"""Control characters in text fields and identifiers (issue 25, item 5).

Text fields refuse every control character (C0, DEL, C1) except tab, and
newline where multi-line text makes sense (descriptions); identifiers
(ical_uid) refuse every control character. A refusal is a 400 naming the
field and changes nothing. Import stores by the same rule: a line break in a
one-line field (SUMMARY, LOCATION: producers write multi-line addresses)
becomes a space, a control in a UID refuses the file naming its line."""
import uuid

from chime import ServerTest, main
from test_ical import vcal, vevent

NY = "America/New_York"
GOOD = {"summary": "ok", "start": {"date_time": "2026-11-03T14:00:00", "time_zone": NY},
        "end": {"date_time": "2026-11-03T15:00:00", "time_zone": NY}}


class TestControls(ServerTest):
    def setUp(self):
        self.user, self.token = self.server.new_user()

    def count(self):
        r = self.server.get("/v1/events?from=2026-01-01T00:00:00Z&to=2027-01-01T00:00:00Z", token=self.token)
        self.assertEqual(r.status, 200, r)
        return len(r.json["items"])

    def test_create_refuses_controls_naming_the_field(self):
        cases = [
            ("summary", "a\rb"), ("summary", "a\nb"), ("summary", "bell\x07"), ("summary", "esc\x1b[31m"),
            ("summary", "del\x7f"), ("summary", "nel\u0085"), ("location", "a\nb"), ("location", "x\x0b"),
            ("description", "crlf\r\nline"), ("description", "nul-ish\x01"), ("description", "c1\u009b"),
            ("ical_uid", "uid\r\nX-INJECTED:1"), ("ical_uid", "tab\tuid"), ("ical_uid", "lf\nuid"),
            ("ical_uid", "c1\u0085uid"),
        ]
        before = self.count()
        for field, value in cases:
            with self.subTest(field=field, value=value):
                r = self.server.post("/v1/events", dict(GOOD, **{field: value}), token=self.token)
                self.assertError(r, 400, field=field, code="invalid_value")
                self.assertIn("control", r.json["error"]["message"])
        self.assertEqual(self.count(), before)

    def test_allowed_whitespace(self):
        r = self.server.post("/v1/events", dict(GOOD, summary="tab\there", location="Room\t4",
                                                description="line one\nline two\n\ttabbed"), token=self.token)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["description"], "line one\nline two\n\ttabbed")
        self.assertEqual(r.json["summary"], "tab\there")

    def test_patch_refuses_and_changes_nothing(self):
        ev = self.server.post("/v1/events", GOOD, token=self.token).json
        for body, field in [({"ical_uid": "a\r\nb"}, "ical_uid"), ({"summary": "x\x00y"}, "summary"),
                            ({"summary": "x\x08y"}, "summary"), ({"location": "\x1f"}, "location")]:
            with self.subTest(body=body):
                self.assertError(self.server.patch("/v1/events/" + ev["id"], body, token=self.token), 400,
                                 field=field)
        after = self.server.get("/v1/events/" + ev["id"], token=self.token).json
        self.assertEqual(after["etag"], ev["etag"])
        self.assertEqual(after["ical_uid"], ev["ical_uid"])

    def test_instance_override_refuses_controls(self):
        ev = self.server.post("/v1/events", dict(GOOD, recurrence=["RRULE:FREQ=DAILY;COUNT=3"]),
                              token=self.token).json
        path = "/v1/events/%s/instances/20261104T190000Z" % ev["id"]
        self.assertError(self.server.patch(path, {"summary": "moved\r"}, token=self.token), 400, field="summary")
        self.assertError(self.server.patch(path, {"description": "x\x1b"}, token=self.token), 400,
                         field="description")
        r = self.server.patch(path, {"description": "two\nlines"}, token=self.token)
        self.assertEqual(r.status, 200, r)

    def test_calendar_and_user_names(self):
        r = self.server.post("/v1/calendars", {"summary": "Work\r\n"}, token=self.token)
        self.assertError(r, 400, field="summary")
        r = self.server.post("/v1/users", {"email": "c%s@example.com" % uuid.uuid4().hex[:8], "name": "Eve\x1b[2J",
                                           "password": "correct horse battery"})
        self.assertError(r, 400, field="name")

    def test_chat_title_message_and_client_id(self):
        other, _ = self.server.new_user()
        r = self.server.post("/v1/conversations", {"type": "group", "title": "Team\x1b[5m", "members": [other["id"]]},
                             token=self.token)
        self.assertError(r, 400, field="title")
        r = self.server.post("/v1/conversations", {"type": "direct", "user": other["id"]}, token=self.token)
        self.assertIn(r.status, (200, 201), r)
        path = "/v1/conversations/%s/messages" % r.json["id"]
        for body, field in [({"client_msg_id": "a", "text": "ding\x07"}, "text"),
                            ({"client_msg_id": "b\n", "text": "hi"}, "client_msg_id")]:
            self.assertError(self.server.post(path, body, token=self.token), 400, field=field)
        r = self.server.post(path, {"client_msg_id": "c", "text": "two\nlines\tok"}, token=self.token)
        self.assertEqual(r.status, 201, r)


class TestImportControls(ServerTest):
    def setUp(self):
        self.user, self.token = self.server.new_user()
        r = self.server.post("/v1/calendars", {"summary": "Imported", "time_zone": NY}, token=self.token)
        self.cal = r.json["id"]

    def do_import(self, body, expect=200):
        r = self.server.request("POST", "/v1/calendars/%s/import" % self.cal, raw=body, token=self.token,
                                headers={"Content-Type": "text/calendar"})
        self.assertEqual(r.status, expect, r)
        return r

    def events(self):
        r = self.server.get("/v1/events?from=2026-01-01T00:00:00Z&to=2027-01-01T00:00:00Z&calendar_id=" + self.cal,
                            token=self.token)
        return r.json["items"]

    def test_line_breaks_in_one_line_fields_become_spaces(self):
        body = vcal(*vevent("multi@test", "DTSTART:20260105T090000Z", "DTEND:20260105T100000Z",
                            "LOCATION:Apple Park\\n1 Apple Park Way\\nCupertino",
                            "DESCRIPTION:first\\nsecond")).replace(b"SUMMARY:Event", b"SUMMARY:Two\\nlines")
        self.do_import(body)
        [ev] = self.events()
        self.assertEqual(ev["summary"], "Two lines")
        self.assertEqual(ev["location"], "Apple Park 1 Apple Park Way Cupertino")
        self.assertEqual(ev["description"], "first\nsecond")

    def test_control_in_uid_refuses_the_file(self):
        body = vcal(*vevent("ok@test", "DTSTART:20260105T090000Z", "DTEND:20260105T100000Z"),
                    *vevent("bad\\nuid@test", "DTSTART:20260106T090000Z", "DTEND:20260106T100000Z"))
        r = self.do_import(body, expect=422)
        self.assertError(r, 422, code="invalid_ical")
        self.assertEqual(r.json["error"]["line"], 12, r)
        self.assertIn("UID", r.json["error"]["message"])
        self.assertEqual(self.events(), [])

    def test_c1_control_in_summary_refuses_the_file(self):
        body = vcal(*vevent("c1@test", "DTSTART:20260105T090000Z", "DTEND:20260105T100000Z")).replace(
            b"SUMMARY:Event", "SUMMARY:bad\u0085".encode())
        r = self.do_import(body, expect=422)
        self.assertEqual(r.json["error"]["line"], 9, r)
        self.assertIn("SUMMARY", r.json["error"]["message"])
        self.assertEqual(self.events(), [])

    def test_own_export_reimports_as_update(self):
        body = vcal(*vevent("round@test", "DTSTART:20260105T090000Z", "DTEND:20260105T100000Z",
                            "DESCRIPTION:a\\nb"))
        self.do_import(body)
        export = self.server.get("/v1/calendars/%s/export.ics" % self.cal, token=self.token).body.encode()
        r = self.do_import(export)
        self.assertEqual((r.json["imported"], r.json["updated"]), (0, 1), r)
        self.assertEqual(len(self.events()), 1)


if __name__ == "__main__":
    main()
