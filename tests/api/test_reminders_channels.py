"""Reminders delivered end to end through the real channels: email to a real
SMTP receiver, a signed webhook to a real HTTP receiver (both on loopback,
started here), and a receiver that fails three times before it succeeds,
which must see one logical delivery (one delivery id) and nothing more;
sends held back by a full channel and by a slow receiver keep their rows
(no second node sends them again)."""
import base64
import hashlib
import hmac
import json
import time
import unittest
from datetime import datetime, timezone

from chime import Server, ServerTest, main
from receivers import HttpReceiver, SmtpReceiver

SMTP = SmtpReceiver().start()
HOOKS = HttpReceiver().start()
FAST = ["--reminder-window", "1000", "--lease-heartbeat", "0.5", "--lease-ttl", "2", "--access-log", "off",
        "--delivery-backoff", "200", "--smtp-url", "smtp://127.0.0.1:%d" % SMTP.port,
        "--webhook-allow-private", "1"]


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def soon(seconds=3):
    return int(time.time()) + seconds + 1


def wait_for(fn, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    return fn()


class TestChannels(ServerTest):
    server_args = FAST

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.admin, cls.admin_token = cls.server.new_user()

    def setUp(self):
        self.user, self.token = self.server.new_user()

    def event(self, start, method, summary="Standup"):
        r = self.server.post("/v1/events", {"summary": summary, "start": {"date_time": iso(start)},
                                            "end": {"date_time": iso(start + 60)},
                                            "reminders": [{"method": method, "minutes_before": 0}]},
                             token=self.token)
        self.assertEqual(r.status, 201, r)
        return r.json

    def deliveries(self, state):
        r = self.server.get("/v1/admin/deliveries?state=" + state, token=self.admin_token)
        self.assertEqual(r.status, 200, r)
        return [d for d in r.json["items"] if d["user_id"] == self.user["id"]]

    def hook(self, path, secret="s3cret-hook-key"):
        r = self.server.post("/v1/me/webhooks", {"url": "http://127.0.0.1:%d%s" % (HOOKS.port, path),
                                                 "secret": secret}, token=self.token)
        self.assertEqual(r.status, 201, r)
        self.hook_id = r.json["id"]
        return secret

    def test_email_arrives(self):
        start = soon()
        self.event(start, "email", summary="Dentist <3 & co")
        rcpt = "<%s>" % self.user["email"]
        mail = wait_for(lambda: [m for m in SMTP.messages if rcpt in m["rcpt_to"]])
        self.assertEqual(len(mail), 1, mail)
        data = mail[0]["data"]
        self.assertIn("Subject: Reminder: Dentist <3 & co", data)
        self.assertIn("text/plain", data)
        self.assertIn("text/html", data)
        self.assertIn("X-Chime-Delivery:", data)
        html = [base64.b64decode(part.split("\r\n\r\n", 1)[1].split("\r\n--")[0])
                for part in data.split("--=_chime")[1:] if "text/html" in part]
        self.assertIn(b"Dentist &lt;3 &amp; co", html[0])
        done = wait_for(lambda: [d for d in self.deliveries("done") if d["channel"] == "email"])
        self.assertEqual(done[0]["attempts"], 1)
        self.assertGreaterEqual(time.time(), start)  # not before its time

    def test_signed_webhook(self):
        secret = self.hook("/ok/" + self.user["id"])
        start = soon()
        ev = self.event(start, "webhook", summary="Deploy")
        got = wait_for(lambda: [r for r in HOOKS.requests if r["path"] == "/ok/" + self.user["id"]])
        self.assertEqual(len(got), 1, got)
        req = got[0]
        body = json.loads(req["body"])
        self.assertEqual(set(body) - {"late"}, {"delivery_id", "event_id", "summary", "original_start", "due",
                                                 "fired", "user_id", "method"})
        self.assertEqual(body["event_id"], ev["id"])
        self.assertEqual(body["user_id"], self.user["id"])
        self.assertEqual(body["method"], "webhook")
        self.assertEqual(body["summary"], "Deploy")
        self.assertRegex(body["fired"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        h = req["headers"]
        self.assertEqual(h["x-chime-delivery"], body["delivery_id"])
        mac = hmac.new(secret.encode(), (h["x-chime-timestamp"] + "." + req["body"]).encode(), hashlib.sha256)
        self.assertEqual(h["x-chime-signature"], "sha256=" + mac.hexdigest())
        # The outbox row says what the payload said: when it was sent, late or not.
        done = wait_for(lambda: [d for d in self.deliveries("done") if d["delivery_id"] == body["delivery_id"]])
        self.assertEqual(done[0]["fired"], body["fired"])
        self.assertEqual(done[0]["late"], bool(body.get("late", False)))

    def test_webhook_body_carries_any_summary(self):
        # Quotes, a backslash, a tab (the one control a summary may hold),
        # and non-ASCII text: the body is JSON that gives the summary back
        # as it was written.
        key = "/ok/esc/" + self.user["id"]
        self.hook(key)
        start = soon()
        summaries = ['Say "hi" \\ to\tthe team', "Réunion — ☕ 会议"]
        for text in summaries:
            self.event(start, "webhook", summary=text)
        got = wait_for(lambda: len([r for r in HOOKS.requests if r["path"] == key]) == 2 and
                       [r for r in HOOKS.requests if r["path"] == key])
        self.assertEqual(sorted(json.loads(r["body"])["summary"] for r in got), sorted(summaries))

    def test_failing_receiver_gets_one_logical_delivery(self):
        key = "/fail/3/" + self.user["id"]
        self.hook(key)
        self.event(soon(), "webhook")
        done = wait_for(lambda: [d for d in self.deliveries("done") if d["channel"] == "webhook"], timeout=30)
        self.assertTrue(done, self.deliveries("pending"))
        self.assertEqual(done[0]["attempts"], 4)
        got = [r for r in HOOKS.requests if r["path"] == key]
        self.assertEqual(len(got), 4)
        self.assertEqual({r["headers"]["x-chime-delivery"] for r in got}, {done[0]["delivery_id"]})
        time.sleep(1.5)  # nothing more arrives after success
        self.assertEqual(len([r for r in HOOKS.requests if r["path"] == key]), 4)

    def test_each_endpoint_of_its_own_user_once(self):
        # Two users' webhook reminders fall due in the same instant, so one
        # claim takes them together: every endpoint of each user gets one
        # delivery of its own, and nobody gets another user's.
        a = self.user["id"]
        self.hook("/multi/%s/1" % a)
        self.hook("/multi/%s/2" % a)
        start = soon()
        self.event(start, "webhook", summary="A's")
        self.user, self.token = self.server.new_user()
        b = self.user["id"]
        self.hook("/multi/%s/1" % b)
        self.event(start, "webhook", summary="B's")

        def got(user):
            return [r for r in HOOKS.requests if r["path"].startswith("/multi/%s/" % user)]
        wait_for(lambda: len(got(a)) == 2 and len(got(b)) == 1)
        time.sleep(1)  # nothing more arrives
        self.assertEqual(sorted(r["path"] for r in got(a)), ["/multi/%s/1" % a, "/multi/%s/2" % a])
        self.assertEqual([r["path"] for r in got(b)], ["/multi/%s/1" % b])
        bodies = [json.loads(r["body"]) for r in got(a) + got(b)]
        self.assertEqual([x["user_id"] for x in bodies], [a, a, b])
        self.assertEqual([x["summary"] for x in bodies], ["A's", "A's", "B's"])
        self.assertEqual(len({x["delivery_id"] for x in bodies}), 3)

    def test_endpoint_deleted_after_claim_cancels(self):
        key = "/gone/" + self.user["id"]
        self.hook(key)
        start = soon(2)
        self.event(start, "webhook")
        time.sleep(max(0, start - 0.5 - time.time()))  # claimed into the timer by now
        r = self.server.delete("/v1/me/webhooks/" + self.hook_id, token=self.token)
        self.assertEqual(r.status, 204, r)
        cancelled = wait_for(lambda: [d for d in self.deliveries("cancelled") if d["channel"] == "webhook"])
        self.assertEqual(len(cancelled), 1, self.deliveries("pending"))
        self.assertEqual([r for r in HOOKS.requests if r["path"] == key], [])


class TestSendBackpressure(ServerTest):
    # Two sends at a time against a slow receiver, while 24 webhooks fall
    # due in the same second: the rest wait their turn in the timer rather
    # than being refused and retried, so each arrives once, first time.
    server_args = FAST + ["--send-max-in-flight", "2"]

    def test_sends_beyond_capacity_wait_their_turn(self):
        admin, admin_token = self.server.new_user()
        user, token = self.server.new_user()
        key = "/slow/50"
        r = self.server.post("/v1/me/webhooks", {"url": "http://127.0.0.1:%d%s" % (HOOKS.port, key),
                                                 "secret": "s3cret-hook-key"}, token=token)
        self.assertEqual(r.status, 201, r)
        start = soon()
        for i in range(24):
            r = self.server.post("/v1/events", {"summary": "e%d" % i, "start": {"date_time": iso(start)},
                                                "end": {"date_time": iso(start + 60)},
                                                "reminders": [{"method": "webhook", "minutes_before": 0}]},
                                 token=token)
            self.assertEqual(r.status, 201, r)

        def done():
            r = self.server.get("/v1/admin/deliveries?state=done", token=admin_token)
            return [d for d in r.json["items"] if d["user_id"] == user["id"]]
        got = wait_for(lambda: len(done()) == 24 and done(), timeout=30)
        self.assertEqual(len(got), 24, done())
        self.assertEqual({d["attempts"] for d in got}, {1})
        bodies = [json.loads(r["body"]) for r in HOOKS.requests if r["path"] == key]
        self.assertEqual(sorted(b["summary"] for b in bodies), sorted("e%d" % i for i in range(24)))


def hooked_user(test, server, path):
    """An admin's token, and a new user (and token) with a webhook to path
    on the shared receiver."""
    admin, admin_token = server.new_user()
    user, token = server.new_user()
    r = server.post("/v1/me/webhooks", {"url": "http://127.0.0.1:%d%s" % (HOOKS.port, path),
                                        "secret": "s3cret-hook-key"}, token=token)
    test.assertEqual(r.status, 201, r)
    return admin_token, user, token


def webhook_events(test, server, token, start, summaries):
    """One event per summary at start, each with a webhook reminder at it."""
    for summary in summaries:
        r = server.post("/v1/events", {"summary": summary, "start": {"date_time": iso(start)},
                                       "end": {"date_time": iso(start + 60)},
                                       "reminders": [{"method": "webhook", "minutes_before": 0}]}, token=token)
        test.assertEqual(r.status, 201, r)


def user_deliveries(server, admin_token, user, state):
    """The user's outbox rows in one state, from the admin view."""
    r = server.get("/v1/admin/deliveries?state=" + state, token=admin_token)
    return [d for d in r.json["items"] if d["user_id"] == user["id"]]


def user_hooks(user):
    """The requests the shared receiver got for the user."""
    return [r for r in HOOKS.requests if json.loads(r["body"] or "{}").get("user_id") == user["id"]]


class TwoNodeTest(ServerTest):
    """A second node (cls.other) on the same database, with the same args."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.other = Server(db=cls.server.db, args=cls.server_args).start()

    @classmethod
    def tearDownClass(cls):
        try:
            assert cls.other.stop() == 0, cls.other.log()[-3000:]
        finally:
            super().tearDownClass()


class TestSlowSendKeepsItsRow(TwoNodeTest):
    # A claim makes its row this node's until 3 s past due; a send still
    # out then (a receiver taking 6 s) must push that back, or another
    # node's outbox poll takes the row over and sends it again. Two nodes
    # share the database; the receiver must get one request, and while it
    # is out the row must be held well past the claim's 3 s.
    server_args = FAST + ["--webhook-timeout", "15000"]

    def test_slow_send_is_not_taken_over(self):
        admin_token, user, token = hooked_user(self, self.server, "/slow/6000")
        start = soon()
        webhook_events(self, self.server, token, start, ["slow-" + user["id"]])

        def mine(state):
            return user_deliveries(self.server, admin_token, user, state)
        time.sleep(max(0, start + 4.5 - time.time()))
        pending = mine("pending")
        self.assertEqual(len(pending), 1, (pending, mine("done")))
        held = datetime.strptime(pending[0]["next_attempt"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=timezone.utc).timestamp()
        self.assertGreater(held, start + 30, pending)
        done = wait_for(lambda: mine("done"), timeout=20)
        self.assertEqual([d["attempts"] for d in done], [1])
        time.sleep(1)
        self.assertEqual(len(user_hooks(user)), 1, user_hooks(user))


class TestBacklogKeepsItsRows(TwoNodeTest):
    # One send at a time to a receiver taking 0.7 s, and eight webhooks due
    # in the same second: the last ones wait in the timer well past the
    # claim's 3 s hold. The node must push their holds back while they
    # wait, or an outbox poll -- here the second node's -- takes the rows
    # over and sends them again. Each must arrive once, first time.
    server_args = FAST + ["--send-max-in-flight", "1"]

    def test_waiting_rows_are_not_taken_over(self):
        admin_token, user, token = hooked_user(self, self.server, "/slow/700")
        webhook_events(self, self.server, token, soon(), ["b%d" % i for i in range(8)])

        def done():
            return user_deliveries(self.server, admin_token, user, "done")
        self.assertEqual(len(wait_for(lambda: len(done()) == 8 and done(), timeout=30)), 8, done())
        self.assertEqual({d["attempts"] for d in done()}, {1})
        time.sleep(1)
        ids = [r["headers"]["x-chime-delivery"] for r in user_hooks(user)]
        self.assertEqual(len(ids), 8, ids)
        self.assertEqual(len(set(ids)), 8, ids)
        for s in (self.server, self.other):
            self.assertNotIn("took over", s.log())


class TestLateClaimKeepsItsRows(unittest.TestCase):
    # Eight webhooks fall due while the only node is down; it comes back 4 s
    # later with a second node. Claimed late, their rows must be held from
    # the claim, not from their due time (3 s past it is already gone), or
    # any outbox poll takes them over at once and sends them again.
    def test_rows_claimed_late_are_held_from_the_claim(self):
        args = FAST + ["--send-max-in-flight", "1"]
        a = Server(args=args).start()
        b = None
        try:
            admin_token, user, token = hooked_user(self, a, "/slow/300")
            start = soon()
            webhook_events(self, a, token, start, ["l%d" % i for i in range(8)])
            self.assertEqual(a.stop(), 0)
            time.sleep(max(0, start + 4 - time.time()))
            a.start()
            b = Server(db=a.db, args=args).start()

            def done():
                return user_deliveries(a, admin_token, user, "done")
            self.assertEqual(len(wait_for(lambda: len(done()) == 8 and done(), timeout=30)), 8, done())
            self.assertEqual({d["attempts"] for d in done()}, {1})
            time.sleep(1)
            ids = [r["headers"]["x-chime-delivery"] for r in user_hooks(user)]
            self.assertEqual(sorted(ids), sorted(set(ids)), ids)
            self.assertEqual(len(ids), 8, ids)
            for s in (a, b):
                self.assertNotIn("took over", s.log())
        finally:
            for s in (b, a):
                if s is not None:
                    self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    main()
