"""Webhook registration over real HTTP, on both backends: create, list and
delete a user's own endpoints; the secret is stored for signing and never
returned; bad input gets a 4xx naming the field; nobody reaches another
user's endpoints; at most 10 per user; the channel options parse. Test
sends (POST .../test) go to a real receiver on loopback: signed, failures
and redirects reported, private addresses refused unless the server runs
with --webhook-allow-private."""
import hashlib
import hmac
import json
import os
import sqlite3
import subprocess
import time
import uuid

from chime import BACKEND, BIN, Server, ServerTest, fresh_db, main
from receivers import HttpReceiver


def db_rows(server, sql, *args):
    """Runs the query the reminder scheduler uses, directly on the database."""
    if server.db.startswith("sqlite:"):
        conn = sqlite3.connect(server.db[len("sqlite:"):])
        try:
            return conn.execute(sql.replace("$1", "?"), args).fetchall()
        finally:
            conn.close()
    text = sql
    for i, a in enumerate(args, 1):
        text = text.replace("$%d" % i, str(int(a)))
    out = subprocess.run(["psql", server.db, "-At", "-F", "\t", "-c", text], check=True,
                         capture_output=True, text=True).stdout
    return [tuple(line.split("\t")) for line in out.splitlines() if line]


class TestWebhooks(ServerTest):
    def test_create_list_delete(self):
        u, tok = self.server.new_user()
        secret = "whsec-" + uuid.uuid4().hex
        r = self.server.post("/v1/me/webhooks", {"url": "https://hooks.example.com/chime?x=1", "secret": secret},
                             token=tok)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(set(r.json), {"id", "url", "created"})
        self.assertRegex(r.json["id"], r"^[0-9a-f]{16}$")
        self.assertEqual(r.json["url"], "https://hooks.example.com/chime?x=1")
        self.assertRegex(r.json["created"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertNotIn(secret, r.body)
        hook = r.json

        r2 = self.server.post("/v1/me/webhooks", {"url": "http://other.example.com/", "secret": "12345678"},
                              token=tok)
        self.assertEqual(r2.status, 201, r2)

        lst = self.server.get("/v1/me/webhooks", token=tok)
        self.assertEqual(lst.status, 200, lst)
        # Oldest first; two made in the same millisecond may come in either order.
        self.assertEqual(sorted(h["id"] for h in lst.json["items"]), sorted([hook["id"], r2.json["id"]]))
        self.assertEqual([h for h in lst.json["items"] if h["id"] == hook["id"]], [hook])
        self.assertNotIn(secret, lst.body)
        self.assertNotIn("secret", lst.body)

        # What the reminder scheduler reads: the secret as given, to sign with.
        rows = db_rows(self.server, "SELECT id, url, secret FROM webhooks WHERE user_id = $1 ORDER BY created_ms",
                       int(u["id"], 16))
        self.assertEqual(len(rows), 2)
        self.assertEqual(int(rows[0][0]), int(hook["id"], 16))
        self.assertEqual(rows[0][1], hook["url"])
        self.assertEqual(rows[0][2], secret)

        self.assertEqual(self.server.delete("/v1/me/webhooks/" + hook["id"], token=tok).status, 204)
        self.assertError(self.server.delete("/v1/me/webhooks/" + hook["id"], token=tok), 404)
        lst = self.server.get("/v1/me/webhooks", token=tok)
        self.assertEqual([h["id"] for h in lst.json["items"]], [r2.json["id"]])

    def test_private_urls_are_checked_at_send_time(self):
        # Registration checks the URL's shape only; whether its address is
        # private is decided after DNS resolution when a delivery is sent.
        _, tok = self.server.new_user()
        for url in ("http://127.0.0.1:9/hook", "http://localhost/hook", "http://[::1]:8080/"):
            r = self.server.post("/v1/me/webhooks", {"url": url, "secret": "s3cret-123"}, token=tok)
            self.assertEqual(r.status, 201, (url, r))

    def test_bad_input(self):
        _, tok = self.server.new_user()
        good = {"url": "https://example.com/hook", "secret": "0123456789"}
        cases = [
            ({"secret": "0123456789"}, "url"),
            ({"url": "https://example.com/hook"}, "secret"),
            (dict(good, url="ftp://example.com/"), "url"),
            (dict(good, url="example.com/hook"), "url"),
            (dict(good, url="https://user:pw@example.com/"), "url"),
            (dict(good, url="https:///nohost"), "url"),
            (dict(good, url="https://example.com/a b"), "url"),
            (dict(good, url="https://example.com/\r\nX-Evil: 1"), "url"),
            (dict(good, url="https://example.com:99999/"), "url"),
            (dict(good, url="https://example.com/" + "a" * 2030), "url"),
            (dict(good, url=42), "url"),
            (dict(good, url=""), "url"),
            (dict(good, secret="1234567"), "secret"),
            (dict(good, secret="x" * 257), "secret"),
            (dict(good, secret=12345678), "secret"),
            (dict(good, extra=1), "extra"),
        ]
        for body, field in cases:
            r = self.server.post("/v1/me/webhooks", body, token=tok)
            self.assertError(r, 400, field=field)
        r = self.server.post("/v1/me/webhooks", raw=b"{not json", token=tok,
                             headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 400, r)
        # Boundaries that are fine: 8- and 256-byte secrets, a 2048-byte URL.
        for body in (dict(good, secret="x" * 8), dict(good, secret="y" * 256),
                     dict(good, url="https://example.com/" + "a" * (2048 - 20))):
            self.assertEqual(self.server.post("/v1/me/webhooks", body, token=tok).status, 201)
        self.assertEqual(len(self.server.get("/v1/me/webhooks", token=tok).json["items"]), 3)

    def test_needs_sign_in(self):
        self.assertError(self.server.get("/v1/me/webhooks"), 401)
        self.assertError(self.server.post("/v1/me/webhooks", {"url": "https://e.com/", "secret": "12345678"}), 401)
        self.assertError(self.server.delete("/v1/me/webhooks/0123456789abcdef"), 401)

    def test_other_users_endpoints_are_invisible(self):
        _, alice = self.server.new_user()
        _, bob = self.server.new_user()
        r = self.server.post("/v1/me/webhooks", {"url": "https://alice.example.com/", "secret": "alice-secret"},
                             token=alice)
        self.assertEqual(r.status, 201)
        hid = r.json["id"]
        self.assertEqual(self.server.get("/v1/me/webhooks", token=bob).json["items"], [])
        self.assertError(self.server.delete("/v1/me/webhooks/" + hid, token=bob), 404)
        self.assertError(self.server.delete("/v1/me/webhooks/not-an-id", token=bob), 404)
        self.assertEqual(len(self.server.get("/v1/me/webhooks", token=alice).json["items"]), 1)

    def test_at_most_ten(self):
        _, tok = self.server.new_user()
        ids = []
        for i in range(10):
            r = self.server.post("/v1/me/webhooks", {"url": "https://e.com/%d" % i, "secret": "secret-%d" % i},
                                 token=tok)
            self.assertEqual(r.status, 201, r)
            ids.append(r.json["id"])
        self.assertError(self.server.post("/v1/me/webhooks", {"url": "https://e.com/x", "secret": "12345678"},
                                          token=tok), 409, code="limit_reached")
        self.assertEqual(len(self.server.get("/v1/me/webhooks", token=tok).json["items"]), 10)
        # Another user is not affected; deleting one makes room again.
        _, other = self.server.new_user()
        self.assertEqual(self.server.post("/v1/me/webhooks", {"url": "https://e.com/", "secret": "12345678"},
                                          token=other).status, 201)
        self.assertEqual(self.server.delete("/v1/me/webhooks/" + ids[3], token=tok).status, 204)
        self.assertEqual(self.server.post("/v1/me/webhooks", {"url": "https://e.com/y", "secret": "12345678"},
                                          token=tok).status, 201)


class TestDelivery(ServerTest):
    server_args = ("--webhook-allow-private", "1", "--webhook-timeout", "1000")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.rx = HttpReceiver().start()

    @classmethod
    def tearDownClass(cls):
        cls.rx.stop()
        super().tearDownClass()

    def register(self, tok, path, secret="ping-secret-1", host="127.0.0.1"):
        r = self.server.post("/v1/me/webhooks", {"url": "http://%s:%d%s" % (host, self.rx.port, path),
                                                 "secret": secret}, token=tok)
        self.assertEqual(r.status, 201, r)
        return r.json["id"]

    def test_ping_is_signed(self):
        u, tok = self.server.new_user()
        secret = "whsec_" + uuid.uuid4().hex
        hid = self.register(tok, "/ok", secret)
        before = len(self.rx.requests)
        r = self.server.post("/v1/me/webhooks/%s/test" % hid, token=tok)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["delivered"], True, r)
        self.assertEqual(r.json["status"], 200)
        self.assertIsNone(r.json["error"])
        reqs = self.rx.log.wait(before + 1)
        got = [q for q in reqs if q["headers"].get("x-chime-delivery") == r.json["delivery"]]
        self.assertEqual(len(got), 1)
        q = got[0]
        self.assertEqual(q["method"], "POST")
        self.assertEqual(q["headers"]["content-type"], "application/json")
        body = json.loads(q["body"])
        self.assertEqual(body["type"], "ping")
        self.assertEqual(body["webhook"], hid)
        ts = q["headers"]["x-chime-timestamp"]
        self.assertLess(abs(int(ts) - time.time()), 30)
        # What a receiver does: HMAC-SHA256 over "timestamp.body" with the secret.
        want = hmac.new(secret.encode(), (ts + "." + q["body"]).encode(), hashlib.sha256).hexdigest()
        self.assertEqual(q["headers"]["x-chime-signature"], "sha256=" + want)
        wrong = hmac.new(b"not-the-secret", (ts + "." + q["body"]).encode(), hashlib.sha256).hexdigest()
        self.assertNotEqual(q["headers"]["x-chime-signature"], "sha256=" + wrong)

    def test_failure_then_success(self):
        _, tok = self.server.new_user()
        hid = self.register(tok, "/fail/1/%s" % uuid.uuid4().hex)
        r = self.server.post("/v1/me/webhooks/%s/test" % hid, token=tok)
        self.assertEqual((r.json["delivered"], r.json["status"]), (False, 500), r)
        self.assertIn("500", r.json["error"])
        r = self.server.post("/v1/me/webhooks/%s/test" % hid, token=tok)
        self.assertEqual((r.json["delivered"], r.json["status"]), (True, 200), r)

    def test_timeout_and_redirect_are_failures(self):
        _, tok = self.server.new_user()
        slow = self.register(tok, "/slow/3000")
        t0 = time.time()
        r = self.server.post("/v1/me/webhooks/%s/test" % slow, token=tok)
        self.assertFalse(r.json["delivered"], r)
        self.assertIn("timed out", r.json["error"])
        self.assertLess(time.time() - t0, 2.5)
        redirect = self.register(tok, "/redirect")
        before = len([q for q in self.rx.requests if q["path"] == "/ok"])
        r = self.server.post("/v1/me/webhooks/%s/test" % redirect, token=tok)
        self.assertEqual((r.json["delivered"], r.json["status"]), (False, 302), r)
        time.sleep(0.2)
        self.assertEqual(len([q for q in self.rx.requests if q["path"] == "/ok"]), before)

    def test_one_test_send_at_a_time(self):
        # A test send holds a worker while it waits; a second one meanwhile
        # is turned away rather than taking another worker.
        import threading
        _, tok = self.server.new_user()
        slow = self.register(tok, "/slow/700")
        first = {}
        th = threading.Thread(target=lambda: first.update(
            r=self.server.post("/v1/me/webhooks/%s/test" % slow, token=tok)))
        th.start()
        time.sleep(0.3)
        r = self.server.post("/v1/me/webhooks/%s/test" % slow, token=tok)
        th.join()
        self.assertError(r, 429, code="busy")
        self.assertEqual(r.header("Retry-After"), "1")
        self.assertTrue(first["r"].json["delivered"], first["r"])
        self.assertEqual(self.server.get("/v1/me", token=tok).status, 200)

    def test_allowed_private_names(self):
        _, tok = self.server.new_user()
        hid = self.register(tok, "/ok", host="localhost")
        r = self.server.post("/v1/me/webhooks/%s/test" % hid, token=tok)
        self.assertTrue(r.json["delivered"], r)

    def test_only_own_webhooks(self):
        _, alice = self.server.new_user()
        _, bob = self.server.new_user()
        hid = self.register(alice, "/ok")
        self.assertError(self.server.post("/v1/me/webhooks/%s/test" % hid, token=bob), 404)
        self.assertError(self.server.post("/v1/me/webhooks/zz/test", token=bob), 404)
        self.assertError(self.server.post("/v1/me/webhooks/%s/test" % hid), 401)


class TestPrivateRefused(ServerTest):
    """The default server: webhooks may not reach loopback, however named."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.rx = HttpReceiver().start()

    @classmethod
    def tearDownClass(cls):
        cls.rx.stop()
        super().tearDownClass()

    def test_loopback_refused(self):
        _, tok = self.server.new_user()
        for host in ("127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "2130706433", "0.0.0.0"):
            url = "http://%s:%d/ok" % (host, self.rx.port)
            r = self.server.post("/v1/me/webhooks", {"url": url, "secret": "12345678"}, token=tok)
            self.assertEqual(r.status, 201, r)
            t = self.server.post("/v1/me/webhooks/%s/test" % r.json["id"], token=tok)
            self.assertEqual(t.status, 200, t)
            self.assertFalse(t.json["delivered"], (host, t))
            self.assertIn("private", t.json["error"], (host, t))
            self.assertIsNone(t.json["status"])
            self.assertEqual(self.server.delete("/v1/me/webhooks/" + r.json["id"], token=tok).status, 204)
        self.assertEqual(self.rx.requests, [])


class TestChannelOptions(ServerTest):
    server_args = ("--smtp-url", "smtp://127.0.0.1:2525", "--smtp-from", "chime <reminders@chime.test>",
                   "--webhook-allow-private", "1", "--webhook-timeout", "1500")

    def test_started_with_channel_options(self):
        self.assertEqual(self.server.get("/healthz").status, 200)
        self.assertIn("private networks", self.server.log())

    def test_bad_options_name_the_option(self):
        for args, name in ((["--webhook-allow-private", "2"], "webhook-allow-private"),
                           (["--webhook-timeout", "5"], "webhook-timeout"),
                           (["--smtp-from", "a\r\nBcc: x@y"], "smtp"),
                           (["--smtp-url", "http://127.0.0.1:25"], "smtp-url")):
            p = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--db", fresh_db()] + args,
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertIn(name, p.stderr, (args, p.stderr))


if __name__ == "__main__":
    main()
