"""The web app's files served by chime itself: content types, ETag and 304,
gzip when asked, the security headers, index.html for the app's routes,
nothing outside the web root, the API's 404s untouched; --web-root; and the
recurrence engine's English through GET /v1/recurrence/explain."""
import gzip
import http.client
import os
import shutil
import tempfile
import unittest

from chime import ROOT, TMP, Server, ServerTest, main


def raw(server, path, headers=None, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


class StaticTest(ServerTest):
    def test_index_and_app_routes(self):
        with open(os.path.join(ROOT, "web/index.html"), "rb") as f:
            index = f.read()
        for path in ("/", "/calendar", "/chat/0123abcd", "/feed/", "/hot?x=1"):
            status, h, body = raw(self.server, path)
            self.assertEqual(status, 200, path)
            self.assertEqual(body, index, path)
            self.assertEqual(h["content-type"], "text/html; charset=utf-8")
            csp = h["content-security-policy"]
            self.assertIn("script-src 'self'", csp)
            self.assertNotIn("unsafe-inline", csp)
            self.assertIn("frame-ancestors 'none'", csp)
            self.assertEqual(h["x-content-type-options"], "nosniff")
            self.assertEqual(h["cache-control"], "no-cache")
            self.assertTrue(h["etag"].startswith('"'))

    def test_paths_shared_with_caldav(self):
        # The CalDAV routes on "/" take PROPFIND and OPTIONS, not GET: GET
        # is the page's (this was a 405 once, the page unreachable at "/").
        status, h, _ = raw(self.server, "/", method="HEAD")
        self.assertEqual((status, h["content-type"]), (200, "text/html; charset=utf-8"))
        self.assertEqual(raw(self.server, "/", method="PROPFIND")[0], 401)  # CalDAV's, signed in with Basic
        # A CalDAV path that is not the page's keeps its 405 and Allow.
        status, h, body = raw(self.server, "/dav")
        self.assertEqual(status, 405, body)
        self.assertIn("PROPFIND", h["allow"])
        self.assertIn(b"method_not_allowed", body)
        self.assertEqual(raw(self.server, "/dav", method="POST")[0], 405)

    def test_types_etag_gzip(self):
        with open(os.path.join(ROOT, "web/js/app.js"), "rb") as f:
            js = f.read()
        status, h, body = raw(self.server, "/js/app.js")
        self.assertEqual((status, body), (200, js))
        self.assertEqual(h["content-type"], "text/javascript; charset=utf-8")
        self.assertNotIn("content-encoding", h)
        etag = h["etag"]
        status, h2, body = raw(self.server, "/js/app.js", {"If-None-Match": etag})
        self.assertEqual((status, body), (304, b""))
        self.assertEqual(h2["etag"], etag)
        status, _, _ = raw(self.server, "/js/app.js", {"If-None-Match": '"other"'})
        self.assertEqual(status, 200)
        # gzip when accepted, with its own ETag; not when q=0.
        status, hz, body = raw(self.server, "/js/app.js", {"Accept-Encoding": "gzip, br"})
        self.assertEqual(status, 200)
        self.assertEqual(hz["content-encoding"], "gzip")
        self.assertEqual(hz["vary"], "Accept-Encoding")
        self.assertNotEqual(hz["etag"], etag)
        self.assertEqual(gzip.decompress(body), js)
        status, h3, _ = raw(self.server, "/js/app.js", {"Accept-Encoding": "gzip", "If-None-Match": hz["etag"]})
        self.assertEqual(status, 304)
        status, h4, body = raw(self.server, "/js/app.js", {"Accept-Encoding": "gzip;q=0"})
        self.assertNotIn("content-encoding", h4)
        self.assertEqual(body, js)
        status, h5, body = raw(self.server, "/css/app.css", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.assertEqual(h5["content-type"], "text/css; charset=utf-8")
        self.assertGreater(int(h5["content-length"]), 100)

    def test_nothing_outside(self):
        for path in ("/../README.md", "/js/../../Makefile", "/%2e%2e/Makefile", "/js%2f..%2f..%2fMakefile",
                     "/.git/config", "/nope.js", "/js/app.js/", "/index.html%00.js", "//etc/passwd",
                     "/v1/nothing", "/v1/nothing.js", "/nope", "/calendarx"):
            status, h, body = raw(self.server, path)
            self.assertEqual(status, 404, path)
            self.assertIn(b'"not_found"', body, path)
        # The API keeps its own answers.
        r = self.server.get("/v1/me")
        self.assertError(r, 401)
        r = self.server.post("/calendar", {})
        self.assertError(r, 404)
        self.assertEqual(self.server.get("/healthz").json, {"status": "ok"})

    def test_explain(self):
        _, tok = self.server.new_user()
        q = "/v1/recurrence/explain?rrule=%s&start=%s"
        r = self.server.get(q % ("FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR;COUNT=10", "2026-10-26T09:00:00"), token=tok)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["rrule"], "FREQ=WEEKLY;COUNT=10;INTERVAL=2;BYDAY=MO,FR")
        self.assertIn("every 2 weeks on Monday and Friday", r.json["text"])
        self.assertIn("10 times", r.json["text"])
        r = self.server.get(q % ("RRULE:FREQ=MONTHLY", "2026-10-26"), token=tok)
        self.assertEqual(r.status, 200, r)
        self.assertIn("26th", r.json["text"])
        r = self.server.get("/v1/recurrence/explain?rrule=FREQ%3DYEARLY%3BBYMONTH%3D6%3BBYDAY%3D3SU", token=tok)
        self.assertEqual(r.status, 200, r)
        self.assertIn("third Sunday of June", r.json["text"])
        self.assertError(self.server.get(q % ("FREQ=DAILY;BYMONTHDAY=32", "2026-10-26"), token=tok), 422,
                         field="rrule", code="invalid_rrule")
        self.assertError(self.server.get("/v1/recurrence/explain", token=tok), 422, field="rrule")
        self.assertError(self.server.get(q % ("FREQ=DAILY", "yesterday"), token=tok), 400, field="start")
        self.assertError(self.server.get(q % ("FREQ=DAILY", "2026-13-01"), token=tok), 400, field="start")
        self.assertError(self.server.get(q % ("FREQ=DAILY", "2026-10-26")), 401)
        self.assertError(self.server.get("/v1/recurrence/explain?rrule=" + "A" * 5000, token=tok), 400,
                         field="rrule")


class WebRootTest(unittest.TestCase):
    def test_web_root_option_and_off(self):
        d = tempfile.mkdtemp(prefix="chime-webroot-", dir=TMP)
        with open(os.path.join(d, "index.html"), "w") as f:
            f.write("<!doctype html><p>other root")
        os.mkdir(os.path.join(d, "sub"))
        with open(os.path.join(d, "sub", "a.txt"), "w") as f:
            f.write("hello")
        os.symlink("/etc/hostname", os.path.join(d, "host.txt"))
        s = Server(args=["--web-root", d]).start()
        try:
            # /v1/me says who administers the server (the web app's admin page).
            _, first = s.new_user()
            _, second = s.new_user()
            self.assertIs(s.get("/v1/me", token=first).json["admin"], True)
            self.assertIs(s.get("/v1/me", token=second).json["admin"], False)
            status, _, body = raw(s, "/chat/42")
            self.assertEqual(body, b"<!doctype html><p>other root")
            status, h, body = raw(s, "/sub/a.txt")
            self.assertEqual((status, body, h["content-type"]), (200, b"hello", "text/plain; charset=utf-8"))
            self.assertEqual(raw(s, "/host.txt")[0], 404)  # symlinks are not served
        finally:
            self.assertEqual(s.stop(), 0)
        s = Server(args=["--web-root", "off"]).start()
        try:
            # Without the page, "/" is the CalDAV root's alone (PROPFIND, OPTIONS).
            status, h, _ = raw(s, "/")
            self.assertEqual(status, 405)
            self.assertIn("PROPFIND", h["allow"])
            self.assertEqual(raw(s, "/calendar")[0], 404)
            self.assertEqual(s.get("/healthz").status, 200)
        finally:
            self.assertEqual(s.stop(), 0)
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
