"""What keeps CalDAV safe: hostile XML bodies (XXE, an external DTD,
billion laughs, undeclared entities, malformed, too big) refused with 400
or 413 and a DAV error, with nothing changed; another user's paths are
404 on every method, and their resources cannot be named from one's own
collection; app passwords (made, listed without the secret, revoked) are
the only way in over HTTP Basic -- never the account password -- and
failures are rate limited like sign-ins."""
import base64

from caldav_util import C, D, DavUser, basic, dav_error, multistatus, propfind, sync_body, vcal
from chime import ServerTest, main

XXE = ('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
       '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:displayname>&x;</D:displayname></D:prop></D:set>'
       '</D:propertyupdate>')
EXTERNAL_DTD = ('<?xml version="1.0"?><!DOCTYPE D:propertyupdate SYSTEM "http://127.0.0.1:9/x.dtd">'
                '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:displayname>dtd</D:displayname></D:prop>'
                '</D:set></D:propertyupdate>')
LAUGHS = ('<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
          '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">'
          '<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">]>'
          '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:displayname>&f;</D:displayname></D:prop></D:set>'
          '</D:propertyupdate>')
UNDEFINED = ('<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:displayname>&nope;</D:displayname></D:prop>'
             '</D:set></D:propertyupdate>')
MALFORMED = '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:displayname>x</D:prop></D:set>'
PREFIX = '<D:propertyupdate xmlns:D="DAV:"><D:set><X:prop><D:displayname>p</D:displayname></X:prop></D:set>' \
         '</D:propertyupdate>'
EVENT = vcal(["UID:e@test", "DTSTAMP:20260101T000000Z", "DTSTART:20261101T100000Z", "DTEND:20261101T110000Z",
              "SUMMARY:Private"])


class CalDAVGuardTest(ServerTest):
    server_args = ("--signin-limit", "3", "--signin-ip-limit", "1000")

    def setUp(self):
        self.ada = DavUser(self.server, name="Ada")
        self.cal_id, self.path = self.ada.calendar("Original")

    def state(self):
        """What a refused body must not have changed."""
        cals = sorted(c["summary"] for c in self.server.get("/v1/calendars", token=self.ada.token).json["items"])
        return cals, self.ada.instances(self.cal_id)

    def test_hostile_bodies_are_refused_and_change_nothing(self):
        self.assertEqual(self.ada.put(self.path + "e.ics", EVENT).status, 201)
        before = self.state()
        hostile = [XXE, EXTERNAL_DTD, LAUGHS, UNDEFINED, MALFORMED, PREFIX]
        for body in hostile:
            for method, path in (("PROPPATCH", self.path), ("MKCALENDAR", self.ada.home + "evil/"),
                                 ("PROPFIND", self.path), ("REPORT", self.path)):
                r = self.ada.dav(method, path, body, depth=1)
                self.assertEqual(r.status, 400, (method, body[:60], r))
                self.assertTrue(r.header("content-type").startswith("application/xml"), r.headers)
                dav_error(r)  # a DAV:error body
                self.assertNotIn("root:", r.body)
        self.assertEqual(self.state(), before)
        self.assertEqual(self.ada.dav("PROPFIND", self.ada.home + "evil/", depth=0).status, 404)

    def test_body_size_limits(self):
        before = self.state()
        big = '<D:propfind xmlns:D="DAV:"><D:prop>' + "<D:getetag/>" * 30000 + "</D:prop></D:propfind>"
        r = self.ada.dav("PROPFIND", self.path, big, depth=0)
        self.assertEqual(r.status, 413, r)
        many = '<D:propfind xmlns:D="DAV:"><D:prop>' + "<D:getetag/>" * 100 + "</D:prop></D:propfind>"
        self.assertEqual(self.ada.dav("PROPFIND", self.path, many, depth=0).status, 403)
        self.assertEqual(self.state(), before)

    def test_unsupported_reports_and_filters(self):
        r = self.ada.dav("REPORT", self.path, '<D:expand-property xmlns:D="DAV:"/>')
        self.assertEqual(r.status, 403, r)
        self.assertIn("supported-report", dav_error(r))
        r = self.ada.dav("REPORT", self.path,
                         '<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><C:filter>'
                         '<C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"><C:prop-filter name="X">'
                         '<C:param-filter name="Y"/></C:prop-filter></C:comp-filter></C:comp-filter></C:filter>'
                         '</C:calendar-query>')
        self.assertEqual(r.status, 403, r)
        self.assertIn("supported-filter", dav_error(r))

    def test_other_users_paths_are_not_there(self):
        bob = DavUser(self.server, name="Bob")
        bob_cal, bob_path = bob.calendar("Bob's")
        self.assertEqual(bob.put(bob_path + "e.ics", EVENT).status, 201)
        before = bob.instances(bob_cal)
        checks = [("PROPFIND", bob.principal, propfind(["D:displayname"])),
                  ("PROPFIND", bob.home, propfind(["D:displayname"])),
                  ("PROPFIND", bob_path, propfind(["D:displayname"])),
                  ("PROPFIND", bob.home + "invited/", propfind(["D:displayname"])),
                  ("REPORT", bob_path, sync_body()),
                  ("PROPPATCH", bob_path, '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:displayname>x'
                                          '</D:displayname></D:prop></D:set></D:propertyupdate>'),
                  ("GET", bob_path + "e.ics", None),
                  ("DELETE", bob_path + "e.ics", None),
                  ("DELETE", bob_path, None),
                  ("MKCALENDAR", bob.home + "new/", None)]
        for method, path, body in checks:
            r = self.ada.dav(method, path, body, depth=1)
            self.assertEqual(r.status, 404, (method, path, r))
        r = self.ada.put(bob_path + "e.ics", EVENT.replace("Private", "Defaced"))
        self.assertEqual(r.status, 404, r)
        # Bob's calendar, named through Ada's own path (its id as a segment).
        alias = self.ada.home + bob_cal + "/"
        self.assertEqual(self.ada.dav("PROPFIND", alias, depth=0).status, 404)
        self.assertEqual(self.ada.put(alias + "e.ics", EVENT).status, 404)
        # Encoded slashes (routed as sent, each segment decoded alone) reach
        # nothing across segments: Bob's calendar through Ada's, or up. (A
        # path one segment short is a collection's: 405 for GET and PUT.)
        for path in (self.ada.home + "..%2F" + bob.id + "%2F" + bob_cal + "/e.ics",
                     self.ada.home + bob_cal + "%2Fe.ics", bob_path.rstrip("/") + "%2Fe.ics",
                     self.path + "..%2F..%2F" + bob.id + "%2F" + bob_cal + "%2Fe.ics"):
            for method in ("GET", "DELETE"):
                r = self.ada.dav(method, path)
                self.assertIn(r.status, (404, 405), (method, path, r))
                self.assertNotIn("Private", r.body)
            if not path.startswith(self.path):
                self.assertIn(self.ada.put(path, EVENT.replace("Private", "Defaced")).status, (404, 405), path)
        # Garbage around an encoded slash: a bad escape or a NUL is no name.
        for tail in ("a%2F%zz.ics", "a%2F%00.ics", "a%2F%", "a%2F%2", "x%2F" * 2000):
            for r in (self.ada.dav("GET", self.path + tail), self.ada.dav("DELETE", self.path + tail),
                      self.ada.put(self.path + tail, EVENT.replace("Private", "Garbage"))):
                self.assertIn(r.status, (400, 404, 414, 431), (tail[:40], r))
                self.assertNotIn("Private", r.body)
        # In Ada's own calendar that last one is just a name of hers.
        path = self.path + "..%2F..%2F" + bob.id + "%2F" + bob_cal + "%2Fe.ics"
        self.assertEqual(self.ada.put(path, EVENT.replace("Private", "Hers")).status, 201)
        self.assertIn("Hers", self.ada.dav("GET", path).body)
        # Bob's resource named in a multiget of Ada's own collection.
        r = self.ada.dav("REPORT", self.path,
                         '<C:calendar-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop>'
                         '<C:calendar-data/></D:prop><D:href>%se.ics</D:href></C:calendar-multiget>' % bob_path)
        ms = multistatus(r)
        self.assertEqual(ms[bob_path + "e.ics"]["status"], 404)
        self.assertNotIn("Private", r.body)
        self.assertEqual(bob.instances(bob_cal), before)

    def test_app_passwords(self):
        s = self.server
        made = s.post("/v1/me/app-passwords", {"label": "iPhone"}, token=self.ada.token)
        self.assertEqual(made.status, 201, made)
        self.assertEqual(set(made.json), {"id", "label", "password", "created"})
        self.assertRegex(made.json["password"], r"^[a-z2-9]{5}(-[a-z2-9]{5}){4}$")
        listed = s.get("/v1/me/app-passwords", token=self.ada.token)
        self.assertEqual(listed.status, 200, listed)
        self.assertIn({"id": made.json["id"], "label": "iPhone", "created": made.json["created"]},
                      listed.json["items"])
        self.assertNotIn(made.json["password"], listed.body)
        phone = basic(self.ada.email, made.json["password"])
        self.assertEqual(self.ada.dav("PROPFIND", self.ada.home, depth=0, auth=phone).status, 207)
        # Typed without dashes and in capitals, it still works.
        loose = basic(self.ada.email.upper(), made.json["password"].replace("-", "").upper())
        self.assertEqual(self.ada.dav("PROPFIND", self.ada.home, depth=0, auth=loose).status, 207)
        # Another user cannot see or revoke it; its owner can.
        bob = DavUser(s, name="Bob")
        self.assertEqual(s.delete("/v1/me/app-passwords/" + made.json["id"], token=bob.token).status, 404)
        self.assertEqual(s.delete("/v1/me/app-passwords/" + made.json["id"], token=self.ada.token).status, 204)
        self.assertEqual(s.delete("/v1/me/app-passwords/" + made.json["id"], token=self.ada.token).status, 404)
        r = self.ada.dav("PROPFIND", self.ada.home, depth=0, auth=phone)
        self.assertEqual(r.status, 401, r)
        self.assertTrue(r.header("www-authenticate").startswith("Basic "), r.headers)
        self.assertNotIn(made.json["id"], s.get("/v1/me/app-passwords", token=self.ada.token).body)
        # Bad inputs.
        self.assertError(s.post("/v1/me/app-passwords", {}, token=self.ada.token), 400, field="label")
        self.assertError(s.post("/v1/me/app-passwords", {"label": "x" * 101}, token=self.ada.token), 400)
        self.assertError(s.post("/v1/me/app-passwords", {"label": "x", "extra": 1}, token=self.ada.token), 400)
        self.assertError(s.post("/v1/me/app-passwords", {"label": "x"}), 401)
        self.assertError(s.get("/v1/me/app-passwords"), 401)

    def test_account_password_and_garbage_are_refused(self):
        for auth in (basic(self.ada.email, "correct horse battery"), "Basic !!!", "Basic " +
                     base64.b64encode(b"no-colon").decode(), "Bearer " + self.ada.token, None):
            headers = {"Depth": "0"}
            if auth:
                headers["Authorization"] = auth
            r = self.server.request("PROPFIND", self.ada.home, headers=headers)
            self.assertEqual(r.status, 401, (auth, r))
            self.assertTrue(r.header("www-authenticate").startswith("Basic realm="), r.headers)

    def test_failures_are_rate_limited(self):
        victim = DavUser(self.server, name="Victim")
        wrong = basic(victim.email, "aaaaa-bbbbb-ccccc-ddddd-eeeee")
        codes = [victim.dav("PROPFIND", victim.home, depth=0, auth=wrong).status for _ in range(4)]
        self.assertEqual(codes[:3], [401, 401, 401])
        self.assertEqual(codes[3], 429)
        r = victim.dav("PROPFIND", victim.home, depth=0)  # even the right one, while locked
        self.assertEqual(r.status, 429, r)
        self.assertTrue(int(r.header("retry-after")) > 0)
        # The web sign-in has limits of its own: CalDAV failures do not lock it.
        self.assertEqual(self.server.post("/v1/sessions", {"email": victim.email,
                                                           "password": "correct horse battery"}).status, 201)


if __name__ == "__main__":
    main()
