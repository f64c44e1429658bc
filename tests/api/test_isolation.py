"""No user can see or change another's data: a stranger (signed in, not
invited, not a member, not the admin) calls every route that takes an id
with the ids of another user's calendar, events, instances, webhooks, app
passwords, inbox rows, conversations, messages, posts and comments, and
gets 404 (403 for the admin's routes) every time; afterwards the owner's
data is exactly as it was. One sweep per system, on both databases."""
import urllib.parse

from chime import ServerTest, main
from test_jobs import wait_for
from test_reminders import FAST, iso, soon


def timed(local, zone="Europe/Paris"):
    return {"date_time": local, "time_zone": zone}


class TestStrangers(ServerTest):
    server_args = FAST

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server.new_user()  # the first user administers the server
        (cls.a, cls.ta), (cls.b, cls.tb), (cls.c, cls.tc) = (cls.server.new_user() for _ in range(3))

    def request(self, method, path, body=None, token=None, raw=None, headers=None):
        return self.server.request(method, path, body=body, token=token or self.tb, raw=raw, headers=headers)

    def assertRefused(self, calls, status=404):
        for call in calls:
            method, path = call[0], call[1]
            body = call[2] if len(call) > 2 else None
            with self.subTest(method=method, path=path):
                if isinstance(body, bytes):
                    r = self.request(method, path, raw=body, headers={"Content-Type": "text/calendar"})
                else:
                    r = self.request(method, path, body)
                self.assertEqual(r.status, status, r)
                self.assertIsInstance(r.json, dict, r)
                self.assertIn("error", r.json, r)

    def snapshot(self, paths, token):
        out = {}
        for p in paths:
            r = self.server.get(p, token=token)
            self.assertEqual(r.status, 200, (p, r))
            out[p] = r.body
        return out

    def test_calendars_and_events(self):
        cal = self.server.post("/v1/calendars", {"summary": "Private", "time_zone": "Europe/Paris"},
                               token=self.ta).json["id"]
        ev = self.server.post("/v1/events", {"calendar_id": cal, "summary": "Secret", "start": timed(
            "2026-12-01T09:00:00"), "end": timed("2026-12-01T09:30:00"), "recurrence": ["RRULE:FREQ=DAILY;COUNT=5"],
            "attendees": [{"email": self.c["email"]}]}, token=self.ta)
        self.assertEqual(ev.status, 201, ev)
        ev = ev.json["id"]
        self.assertEqual(self.server.post("/v1/calendars/%s/feed" % cal, token=self.ta).status, 201)
        orig = "20261202T080000Z"
        window = urllib.parse.urlencode({"from": "2026-11-01T00:00:00Z", "to": "2027-01-01T00:00:00Z"})
        owner_view = ["/v1/calendars/%s" % cal, "/v1/events/%s" % ev, "/v1/events/%s/instances?%s" % (ev, window),
                      "/v1/events?%s&calendar_id=%s" % (window, cal), "/v1/calendars/%s/export.ics" % cal]
        invited_view = ["/v1/events/%s" % ev, "/v1/events/%s_%s" % (ev, orig)]
        before = self.snapshot(owner_view, self.ta)
        before_c = self.snapshot(invited_view, self.tc)
        ics = b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:x@t\r\nDTSTAMP:20260101T000000Z\r\n" \
              b"DTSTART:20261201T100000Z\r\nDTEND:20261201T110000Z\r\nSUMMARY:Planted\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        self.assertRefused([
            ("GET", "/v1/calendars/%s" % cal), ("DELETE", "/v1/calendars/%s" % cal),
            ("GET", "/v1/calendars/%s/export.ics" % cal), ("POST", "/v1/calendars/%s/import" % cal, ics),
            ("POST", "/v1/calendars/%s/feed" % cal), ("DELETE", "/v1/calendars/%s/feed" % cal),
            ("GET", "/v1/events?%s&calendar_id=%s" % (window, cal)),
            ("POST", "/v1/events", {"calendar_id": cal, "summary": "Planted", "start": timed("2026-12-03T09:00:00"),
                                    "end": timed("2026-12-03T10:00:00")}),
            ("GET", "/v1/events/%s" % ev), ("PATCH", "/v1/events/%s" % ev, {"summary": "Taken"}),
            ("DELETE", "/v1/events/%s" % ev), ("GET", "/v1/events/%s_%s" % (ev, orig)),
            ("GET", "/v1/events/%s/instances?%s" % (ev, window)),
            ("PATCH", "/v1/events/%s/instances/%s" % (ev, orig), {"summary": "Taken"}),
            ("PATCH", "/v1/events/%s/instances/%s?scope=following" % (ev, orig), {"summary": "Taken"}),
            ("DELETE", "/v1/events/%s/instances/%s" % (ev, orig)),
            ("DELETE", "/v1/events/%s/instances/%s?scope=following" % (ev, orig)),
            ("POST", "/v1/events/%s/rsvp" % ev, {"status": "accepted"}),
        ])
        # The invitee may see the event, and still not change it.
        for method, path, body in [("PATCH", "/v1/events/%s" % ev, {"summary": "Taken"}),
                                   ("DELETE", "/v1/events/%s" % ev, None),
                                   ("PATCH", "/v1/events/%s/instances/%s" % (ev, orig), {"summary": "Taken"}),
                                   ("DELETE", "/v1/events/%s/instances/%s" % (ev, orig), None),
                                   ("GET", "/v1/calendars/%s/export.ics" % cal, None)]:
            with self.subTest(invitee=method, path=path):
                r = self.server.request(method, path, body=body, token=self.tc)
                self.assertIn(r.status, (403, 404), r)
        self.assertEqual(self.snapshot(owner_view, self.ta), before)
        self.assertEqual(self.snapshot(invited_view, self.tc), before_c)
        listing = self.server.get("/v1/events?" + window, token=self.tb).json["items"]
        self.assertEqual(listing, [])

    def test_webhooks_app_passwords_and_the_inbox(self):
        hook = self.server.post("/v1/me/webhooks", {"url": "https://example.com/hook", "secret": "s3cret-s3cret"},
                                token=self.ta)
        self.assertEqual(hook.status, 201, hook)
        app = self.server.post("/v1/me/app-passwords", {"label": "phone"}, token=self.ta)
        self.assertEqual(app.status, 201, app)
        start = soon(2)
        r = self.server.post("/v1/events", {"summary": "Ping", "start": {"date_time": iso(start)},
                                            "end": {"date_time": iso(start + 60)},
                                            "reminders": [{"method": "push", "minutes_before": 0}]}, token=self.ta)
        self.assertEqual(r.status, 201, r)
        items = wait_for(lambda: self.server.get("/v1/notifications", token=self.ta).json["items"], timeout=15)
        self.assertTrue(items)
        note = items[0]["id"]
        view = ["/v1/me/webhooks", "/v1/me/app-passwords", "/v1/notifications"]
        before = self.snapshot(view, self.ta)
        self.assertRefused([
            ("DELETE", "/v1/me/webhooks/%s" % hook.json["id"]), ("POST", "/v1/me/webhooks/%s/test" % hook.json["id"]),
            ("DELETE", "/v1/me/app-passwords/%s" % app.json["id"]), ("POST", "/v1/notifications/%s/read" % note),
        ])
        self.assertEqual(self.server.get("/v1/me/webhooks", token=self.tb).json["items"], [])
        self.assertEqual(self.server.get("/v1/me/app-passwords", token=self.tb).json["items"], [])
        self.assertEqual(self.server.get("/v1/notifications", token=self.tb).json["items"], [])
        # A stranger's read-everything marks nothing of the owner's.
        cursor = self.server.get("/v1/notifications", token=self.ta).json["next"]
        self.request("POST", "/v1/notifications/read", {"up_to": cursor})
        self.assertEqual(self.snapshot(view, self.ta), before)

    def test_conversations(self):
        direct = self.server.post("/v1/conversations", {"type": "direct", "user": self.c["id"]}, token=self.ta).json
        group = self.server.post("/v1/conversations", {"type": "group", "title": "Us", "members": [self.c["id"]]},
                                 token=self.ta).json
        for conv in (direct, group):
            r = self.server.post("/v1/conversations/%s/messages" % conv["id"], {"client_msg_id": "m1", "text": "hi"},
                                 token=self.ta)
            self.assertEqual(r.status, 201, r)
        view = ["/v1/conversations", "/v1/conversations/%s" % direct["id"], "/v1/conversations/%s" % group["id"],
                "/v1/conversations/%s/messages" % direct["id"], "/v1/conversations/%s/messages" % group["id"],
                "/v1/sync?since=0", "/v1/unread"]
        before, before_c = self.snapshot(view, self.ta), self.snapshot(view, self.tc)
        calls = []
        for conv in (direct, group):
            p = "/v1/conversations/%s" % conv["id"]
            calls += [("GET", p), ("GET", p + "/messages"), ("GET", p + "/messages?after_seq=0"),
                      ("POST", p + "/messages", {"client_msg_id": "x", "text": "planted"}),
                      ("POST", p + "/read", {"up_to": 1}), ("POST", p + "/members", {"users": [self.b["id"]]}),
                      ("DELETE", p + "/members/%s" % self.c["id"]), ("DELETE", p + "/members/%s" % self.b["id"])]
        calls.append(("GET", "/v1/users/%s/presence" % self.a["id"]))
        self.assertRefused(calls)
        # A member who is not the group's admin adds and removes no one else.
        r = self.server.post("/v1/conversations/%s/members" % group["id"], {"users": [self.b["id"]]}, token=self.tc)
        self.assertIn(r.status, (403, 404), r)
        r = self.server.delete("/v1/conversations/%s/members/%s" % (group["id"], self.a["id"]), token=self.tc)
        self.assertIn(r.status, (403, 404), r)
        self.assertEqual(self.snapshot(view, self.ta), before)
        self.assertEqual(self.snapshot(view, self.tc), before_c)
        self.assertEqual(self.server.get("/v1/conversations", token=self.tb).json["items"], [])
        self.assertEqual(self.server.get("/v1/sync?since=0", token=self.tb).json["changes"], [])

    def test_posts_and_comments(self):
        post = self.server.post("/v1/posts", {"text": "mine"}, token=self.ta).json
        comment = self.server.post("/v1/posts/%s/comments" % post["id"], {"text": "also mine"}, token=self.ta).json
        view = ["/v1/posts/%s" % post["id"], "/v1/posts/%s/comments" % post["id"], "/v1/users/%s/posts" % self.a["id"]]
        before = self.snapshot(view, self.ta)
        self.assertRefused([("DELETE", "/v1/posts/%s" % post["id"]),
                            ("DELETE", "/v1/posts/%s/comments/%s" % (post["id"], comment["id"]))])
        self.assertEqual(self.snapshot(view, self.ta), before)

    def test_the_admins_routes(self):
        self.assertRefused([("GET", "/v1/admin/nodes"), ("GET", "/v1/admin/leases"), ("GET", "/v1/admin/jobs"),
                            ("POST", "/v1/admin/jobs/cleanup/run"), ("GET", "/v1/admin/deliveries?state=done"),
                            ("GET", "/v1/admin/stats")], status=403)


if __name__ == "__main__":
    main()
