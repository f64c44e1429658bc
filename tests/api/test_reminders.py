"""Reminders end to end over real HTTP, in-app channel: events a few seconds
in the future (minutes_before 0), so each test waits only seconds. One-off
and periodic reminders, declined attendees, overrides that move an
instance, deleted events, restarts (clean and SIGKILL, before and after the
claim), the late policy, email/webhook hand-off to the channels, and the
admin dead-letter view. The DST case is in tests/unit/test-notify.c."""
import datetime
import signal
import subprocess
import time
import unittest

from chime import BACKEND, Server, ServerTest, fresh_db, main
from receivers import HttpReceiver
from test_jobs import sql, wait_for

FAST = ["--reminder-window", "1000", "--lease-heartbeat", "0.5", "--lease-ttl", "2", "--access-log", "off"]


def iso(t):
    """Whole-second UTC RFC 3339."""
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def ms_of(text):
    return int(datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
               .replace(tzinfo=datetime.timezone.utc).timestamp() * 1000 + 0.5)


def soon(seconds=3):
    """A whole second at least `seconds` from now."""
    return int(time.time()) + seconds + 1


class ReminderTest(ServerTest):
    # Series here repeat every two seconds; the default minimum interval
    # between a series' reminders (5 minutes, test_reminder_floods.py)
    # would skip all but the first.
    server_args = FAST + ["--reminder-min-interval", "1"]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.admin, cls.admin_token = cls.server.new_user()  # first user: admin

    def setUp(self):
        self.user, self.token = self.server.new_user()

    def event(self, start, token=None, seconds=60, reminders=None, **kw):
        body = dict(summary=kw.pop("summary", "Standup"), start={"date_time": iso(start)},
                    end={"date_time": iso(start + seconds)},
                    reminders=reminders if reminders is not None else [{"method": "push", "minutes_before": 0}])
        body.update(kw)
        r = self.server.post("/v1/events", body, token=token or self.token)
        self.assertEqual(r.status, 201, r)
        return r.json

    def inbox(self, token=None, after=None):
        path = "/v1/notifications" + ("?after=%s" % after if after is not None else "")
        r = self.server.get(path, token=token or self.token)
        self.assertEqual(r.status, 200, r)
        return r.json

    def wait_inbox(self, n, token=None, timeout=10):
        got = wait_for(lambda: len(self.inbox(token)["items"]) >= n and self.inbox(token), timeout=timeout)
        return got["items"] if got else self.inbox(token)["items"]

    def deliveries(self, state):
        r = self.server.get("/v1/admin/deliveries?state=" + state, token=self.admin_token)
        self.assertEqual(r.status, 200, r)
        return r.json["items"]


class TestFiring(ReminderTest):
    def test_one_off_fires_on_time_once(self):
        start = soon()
        ev = self.event(start, summary="Dentist")
        self.assertEqual(self.inbox()["items"], [])
        items = self.wait_inbox(1)
        self.assertEqual(len(items), 1, items)
        n = items[0]
        self.assertEqual(n["event_id"], ev["id"])
        self.assertEqual(n["summary"], "Dentist")
        self.assertEqual(n["method"], "push")
        self.assertEqual(ms_of(n["due"]), start * 1000)
        self.assertEqual(ms_of(n["original_start"]), start * 1000)
        lateness = ms_of(n["fired"]) - start * 1000
        self.assertGreaterEqual(lateness, 0)
        self.assertLess(lateness, 500, n)  # fired from the timer, not the next poll
        self.assertFalse(n["late"])
        self.assertRegex(n["delivery_id"], r"^[0-9a-f]{32}$")
        # Nothing more comes; the cursor pages past it.
        time.sleep(1.5)
        self.assertEqual(len(self.inbox()["items"]), 1)
        page = self.inbox()
        self.assertEqual(self.inbox(after=page["next"])["items"], [])
        self.assertEqual(self.inbox(after=page["next"])["next"], page["next"])
        # Read marks: one, and 404 for someone else's.
        other, other_token = self.server.new_user()
        self.assertEqual(self.server.post("/v1/notifications/%s/read" % n["id"], token=other_token).status, 404)
        self.assertEqual(self.server.post("/v1/notifications/%s/read" % n["id"], token=self.token).status, 204)
        self.assertTrue(self.inbox()["items"][0]["read"])
        self.assertEqual(self.inbox(other_token)["items"], [])

    def test_zero_length_event_fires(self):
        # An instant (end == start, issue 24.2), single and recurring.
        start = soon()
        self.event(start, seconds=0, summary="Deadline",
                   reminders=[{"method": "push", "minutes_before": 0}])
        self.event(start + 1, seconds=0, summary="Tick", recurrence=["RRULE:FREQ=SECONDLY;INTERVAL=2;COUNT=2"],
                   reminders=[{"method": "push", "minutes_before": 0}])
        items = self.wait_inbox(3)
        self.assertEqual(sorted((i["summary"], ms_of(i["due"])) for i in items),
                         [("Deadline", start * 1000), ("Tick", (start + 1) * 1000), ("Tick", (start + 3) * 1000)])

    def test_periodic_series_advances_and_finishes(self):
        start = soon()
        self.event(start, seconds=1, recurrence=["RRULE:FREQ=SECONDLY;INTERVAL=2;COUNT=3"])
        items = self.wait_inbox(3, timeout=12)
        self.assertEqual([ms_of(i["original_start"]) for i in items], [start * 1000 + k * 2000 for k in range(3)])
        self.assertEqual(len({i["delivery_id"] for i in items}), 3)
        for i in items:
            self.assertLess(ms_of(i["fired"]) - ms_of(i["due"]), 500, i)
        time.sleep(2.5)
        self.assertEqual(len(self.inbox()["items"]), 3)  # the finished series stops

    def test_minutes_before_and_cursor_paging(self):
        start = soon() + 60
        self.event(start, reminders=[{"method": "push", "minutes_before": 1}])
        items = self.wait_inbox(1, timeout=10)
        self.assertEqual(ms_of(items[0]["due"]), (start - 60) * 1000)
        self.assertEqual(ms_of(items[0]["original_start"]), start * 1000)
        r = self.server.post("/v1/notifications/read", {"up_to": self.inbox()["next"]}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["marked"], 1)

    def test_past_reminders_do_not_fire(self):
        self.event(int(time.time()) - 30)
        time.sleep(2)
        self.assertEqual(self.inbox()["items"], [])

    def test_bad_queries(self):
        for bad in ("abc", "-1", "1-", "1-2-3", "x-1", "1-x", "9" * 19, "1" * 60):
            self.assertError(self.server.get("/v1/notifications?after=" + bad, token=self.token), 400, "after",
                             "invalid_value")
        for bad in ("-1", "1-", "1-2-3", ""):
            self.assertError(self.server.post("/v1/notifications/read", {"up_to": bad}, token=self.token),
                             400, "up_to", "invalid_value")
        self.assertError(self.server.get("/v1/notifications?limit=0", token=self.token), 400, "limit", "invalid_value")
        self.assertError(self.server.get("/v1/notifications"), 401)
        self.assertError(self.server.post("/v1/notifications/read", {"up_to": 5}, token=self.token), 400, "up_to")
        self.assertError(self.server.post("/v1/notifications/xyz/read", token=self.token), 404)


class TestInboxCursor(ReminderTest):
    @unittest.skipUnless(BACKEND == "pg", "SQLite has one writer: its commits come in seq order")
    def test_cursor_never_passes_a_row_still_being_written(self):
        # A slow delivering transaction (another node's, say) takes its seq
        # first and commits last. A cursor handed out meanwhile must not
        # lie past its row, or the client would never see it.
        uid = int(sql(self.server.db, "SELECT id FROM users WHERE email_lower = '%s'"
                      % self.user["email"].lower())[0][0])
        row = ("INSERT INTO notifications (user_id, delivery_id, event_id, summary, original_start_ms, due_ms, "
               "fired_ms, method, created_ms) VALUES (%d, '%%s', 1, 's', 0, 0, 0, 'push', 0);" % uid)
        slow = subprocess.Popen(["psql", self.server.db, "-qAt", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            slow.stdin.write("BEGIN;\n" + row % "slow" + "\n\\echo written\n")
            slow.stdin.flush()
            self.assertEqual(slow.stdout.readline().strip(), "written")
            sql(self.server.db, row % "fast")
            first = self.inbox()
            slow.stdin.write("COMMIT;\n")
            slow.stdin.close()
            self.assertEqual(slow.wait(timeout=10), 0)
        finally:
            if slow.poll() is None:
                slow.kill()
                slow.wait()
            slow.stdout.close()
        # Other transactions (the engine's claims, heartbeats) may hold the
        # inbox back a moment more: a client polls on from its cursor.
        seen, cursor = [i["delivery_id"] for i in first["items"]], first["next"]
        deadline = time.time() + 10
        while len(seen) < 2 and time.time() < deadline:
            rest = self.inbox(after=cursor)
            seen += [i["delivery_id"] for i in rest["items"]]
            cursor = rest["next"]
            time.sleep(0.05)
        rest = {"next": cursor}
        self.assertEqual(seen, ["slow", "fast"])  # both, once each, in commit-safe order
        self.assertEqual(self.inbox(after=rest["next"])["items"], [])
        r = self.server.post("/v1/notifications/read", {"up_to": rest["next"]}, token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["marked"], 2)


class TestRecipients(ReminderTest):
    def test_declined_attendee_gets_nothing_others_get_theirs(self):
        bob, bob_token = self.server.new_user()
        carol, carol_token = self.server.new_user()
        start = soon(4)
        ev = self.event(start, attendees=[{"email": bob["email"]}, {"email": carol["email"]}])
        r = self.server.post("/v1/events/%s/rsvp" % ev["id"], {"status": "declined"}, token=bob_token)
        self.assertEqual(r.status, 200, r)
        # Carol sets her own reminders: 0 minutes by push, nothing else.
        r = self.server.post("/v1/events/%s/rsvp" % ev["id"],
                             {"status": "accepted", "reminders": [{"method": "push", "minutes_before": 0}]},
                             token=carol_token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(self.wait_inbox(1)), 1)
        self.assertEqual(len(self.wait_inbox(1, token=carol_token)), 1)
        time.sleep(1)
        self.assertEqual(self.inbox(bob_token)["items"], [])
        ids = {self.inbox()["items"][0]["delivery_id"], self.inbox(carol_token)["items"][0]["delivery_id"]}
        self.assertEqual(len(ids), 2)  # one per recipient

    def test_null_reminders_follow_the_event_again(self):
        """An attendee's own list (here: none at all), then "reminders":
        null -- back to the event's reminders, which fire for it."""
        carol, carol_token = self.server.new_user()
        start = soon(3)
        ev = self.event(start, attendees=[{"email": carol["email"]}])
        url = "/v1/events/%s/rsvp" % ev["id"]
        r = self.server.post(url, {"status": "accepted", "reminders": []}, token=carol_token)
        self.assertEqual(r.status, 200, r)
        me = [a for a in r.json["attendees"] if a.get("self")][0]
        self.assertEqual(me["reminders"], [])
        r = self.server.post(url, {"status": "accepted", "reminders": None}, token=carol_token)
        self.assertEqual(r.status, 200, r)
        me = [a for a in r.json["attendees"] if a.get("self")][0]
        self.assertNotIn("reminders", me)
        self.assertEqual(len(self.wait_inbox(1, token=carol_token)), 1)

    def test_declining_after_the_claim_still_cancels(self):
        bob, bob_token = self.server.new_user()
        start = soon(1)
        ev = self.event(start, attendees=[{"email": bob["email"]}])
        # Inside the claim window (1 s): the delivery row may exist already.
        time.sleep(max(0, start - 0.6 - time.time()))
        self.server.post("/v1/events/%s/rsvp" % ev["id"], {"status": "declined"}, token=bob_token)
        self.assertEqual(len(self.wait_inbox(1)), 1)
        time.sleep(1)
        self.assertEqual(self.inbox(bob_token)["items"], [])


class TestChanges(ReminderTest):
    def test_override_moves_the_reminder(self):
        start = soon()
        ev = self.event(start, recurrence=["RRULE:FREQ=DAILY;COUNT=3"])
        key = datetime.datetime.fromtimestamp(start, datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        moved = start + 3
        r = self.server.patch("/v1/events/%s/instances/%s" % (ev["id"], key),
                              {"start": {"date_time": iso(moved)}, "end": {"date_time": iso(moved + 60)}},
                              token=self.token)
        self.assertEqual(r.status, 200, r)
        time.sleep(max(0, start + 1 - time.time()))
        self.assertEqual(self.inbox()["items"], [])  # not at the original time
        items = self.wait_inbox(1)
        self.assertEqual(len(items), 1)
        self.assertEqual(ms_of(items[0]["due"]), moved * 1000)
        self.assertEqual(ms_of(items[0]["original_start"]), start * 1000)
        self.assertLess(ms_of(items[0]["fired"]) - moved * 1000, 500)

    def test_cancelled_instance_is_skipped(self):
        start = soon()
        ev = self.event(start, seconds=1, recurrence=["RRULE:FREQ=SECONDLY;INTERVAL=2;COUNT=2"])
        key = datetime.datetime.fromtimestamp(start, datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        r = self.server.patch("/v1/events/%s/instances/%s" % (ev["id"], key), {"status": "cancelled"},
                              token=self.token)
        self.assertEqual(r.status, 200, r)
        items = self.wait_inbox(1)
        self.assertEqual([ms_of(i["original_start"]) for i in items], [(start + 2) * 1000])

    def test_deleted_event_cancels_pending(self):
        start = soon()
        ev = self.event(start)
        self.assertEqual(self.server.delete("/v1/events/" + ev["id"], token=self.token).status, 204)
        time.sleep(max(0, start + 1.5 - time.time()))
        self.assertEqual(self.inbox()["items"], [])

    def test_deleted_after_claim_is_cancelled_not_delivered(self):
        start = soon(1)
        ev = self.event(start)
        time.sleep(max(0, start - 0.5 - time.time()))  # claimed into the timer by now
        self.assertEqual(self.server.delete("/v1/events/" + ev["id"], token=self.token).status, 204)
        time.sleep(1.5)
        self.assertEqual(self.inbox()["items"], [])

    def test_edit_moves_reminder_later(self):
        start = soon()
        ev = self.event(start)
        later = start + 2
        r = self.server.patch("/v1/events/" + ev["id"], {"start": {"date_time": iso(later)},
                                                         "end": {"date_time": iso(later + 60)}}, token=self.token)
        self.assertEqual(r.status, 200, r)
        items = self.wait_inbox(1)
        self.assertEqual(ms_of(items[0]["due"]), later * 1000)
        time.sleep(1)
        self.assertEqual(len(self.inbox()["items"]), 1)


class TestChannels(ReminderTest):
    def test_email_without_smtp_is_dead_lettered_at_once(self):
        # This server has no --smtp-url: an email reminder cannot be sent,
        # and says so in the dead letters instead of retrying for hours.
        # (Delivery through a real SMTP receiver: test_reminders_channels.py.)
        self.event(soon(), reminders=[{"method": "email", "minutes_before": 0}])
        dead = wait_for(lambda: [d for d in self.deliveries("dead") if d["channel"] == "email"
                                 and d["user_id"] == self.user["id"]], timeout=10)
        self.assertTrue(dead)
        self.assertEqual(dead[0]["attempts"], 1)
        self.assertIn("not configured", dead[0]["last_error"])
        self.assertEqual(self.inbox()["items"], [])  # email only, not in-app

    def test_admin_only(self):
        self.assertError(self.server.get("/v1/admin/deliveries?state=dead", token=self.token), 403)
        self.assertError(self.server.get("/v1/admin/deliveries?state=nope", token=self.admin_token), 400, "state")
        self.assertEqual([d for d in self.deliveries("dead") if d["user_id"] == self.user["id"]], [])


class TestRestarts(unittest.TestCase):
    """Each test owns its server, so it can kill it."""

    def setUp(self):
        self.db = fresh_db()
        self.server = None

    def tearDown(self):
        if self.server and self.server.proc is not None:
            self.server.stop(signal.SIGKILL)

    def start(self, *extra):
        self.server = Server(db=self.db, args=FAST + list(extra)).start()
        return self.server

    def inbox(self, token):
        return self.server.get("/v1/notifications", token=token).json["items"]

    def setup_user(self):
        s = self.start()
        _, token = s.new_user()
        return s, token

    def post_event(self, s, token, start):
        r = s.post("/v1/events", {"summary": "x", "start": {"date_time": iso(start)},
                                  "end": {"date_time": iso(start + 60)},
                                  "reminders": [{"method": "push", "minutes_before": 0}]}, token=token)
        assert r.status == 201, r

    def test_killed_before_due_fires_after_restart(self):
        s, token = self.setup_user()
        start = soon(2)
        self.post_event(s, token, start)
        s.stop(signal.SIGKILL)
        time.sleep(max(0, start + 1 - time.time()))
        s = self.start()
        items = wait_for(lambda: self.inbox(token), timeout=10)
        self.assertEqual(len(items), 1)
        self.assertFalse(items[0]["late"])  # within the grace
        time.sleep(1)
        self.assertEqual(len(self.inbox(token)), 1)
        # Due when claimed: delivered by the claim itself, one attempt, and
        # the outbox row says so with the inbox row's id and fire time.
        rows = sql(self.db, "SELECT d.state, d.attempts, d.fired_ms, n.fired_ms FROM deliveries d "
                            "JOIN notifications n ON n.delivery_id = d.id")
        self.assertEqual([(str(r[0]), int(r[1])) for r in rows], [("done", 1)])
        self.assertEqual(int(rows[0][2]), int(rows[0][3]))

    def test_killed_after_claim_redelivers_once(self):
        s, token = self.setup_user()
        start = soon(1)
        self.post_event(s, token, start)
        time.sleep(max(0, start - 0.3 - time.time()))  # claimed, still held in memory
        s.stop(signal.SIGKILL)
        claimed = sql(self.db, "SELECT state FROM deliveries")
        s = self.start()
        items = wait_for(lambda: self.inbox(token), timeout=15)
        self.assertEqual(len(items), 1, (claimed, items))
        time.sleep(1)
        self.assertEqual(len(self.inbox(token)), 1)

    def test_clean_restart_loses_nothing(self):
        s, token = self.setup_user()
        start = soon(2)
        self.post_event(s, token, start)
        self.post_event(s, token, start + 2)
        self.assertEqual(s.stop(), 0)
        s = self.start()
        items = wait_for(lambda: len(self.inbox(token)) == 2 and self.inbox(token), timeout=12)
        self.assertTrue(items)

    def test_late_policy_skip_records_missed(self):
        s, token = self.setup_user()
        admin_token = token  # the first user is the admin
        start = soon(1)
        self.post_event(s, token, start)
        s.stop(signal.SIGKILL)
        time.sleep(max(0, start + 2 - time.time()))
        s = self.start("--reminder-grace", "500", "--reminder-late-policy", "skip")
        missed = wait_for(lambda: s.get("/v1/admin/deliveries?state=missed", token=admin_token).json["items"],
                          timeout=10)
        self.assertTrue(missed)
        self.assertTrue(missed[0]["late"])
        self.assertEqual(self.inbox(token), [])

    def test_late_policy_skip_misses_a_claimed_webhook(self):
        # Claimed, then the node died: the row another pass takes over is
        # late by then, and under the skip policy missed, not sent.
        hooks = HttpReceiver().start()
        self.addCleanup(hooks.stop)
        s = self.start("--webhook-allow-private", "1")
        _, token = s.new_user()
        r = s.post("/v1/me/webhooks", {"url": "http://127.0.0.1:%d/h" % hooks.port, "secret": "s3cret-hook-key"},
                   token=token)
        self.assertEqual(r.status, 201, r)
        start = soon(1)
        r = s.post("/v1/events", {"summary": "x", "start": {"date_time": iso(start)},
                                  "end": {"date_time": iso(start + 60)},
                                  "reminders": [{"method": "webhook", "minutes_before": 0}]}, token=token)
        self.assertEqual(r.status, 201, r)
        time.sleep(max(0, start - 0.3 - time.time()))  # claimed, still held in memory
        s.stop(signal.SIGKILL)
        held = sql(self.db, "SELECT state FROM deliveries WHERE channel = 'webhook'")
        self.assertEqual([str(r[0]) for r in held], ["pending"])
        time.sleep(max(0, start + 2 - time.time()))
        self.start("--webhook-allow-private", "1", "--reminder-grace", "500", "--reminder-late-policy", "skip")
        done = wait_for(lambda: [(str(r[0]), int(r[1])) for r in
                                 sql(self.db, "SELECT state, late FROM deliveries WHERE channel = 'webhook'")
                                 if str(r[0]) != "pending"], timeout=15)
        self.assertEqual(done, [("missed", 1)])
        self.assertEqual(hooks.requests, [])

    def test_late_policy_deliver_marks_late(self):
        s, token = self.setup_user()
        start = soon(1)
        self.post_event(s, token, start)
        s.stop(signal.SIGKILL)
        time.sleep(max(0, start + 2 - time.time()))
        s = self.start("--reminder-grace", "500")
        items = wait_for(lambda: self.inbox(token), timeout=10)
        self.assertEqual(len(items), 1)
        self.assertTrue(items[0]["late"])


if __name__ == "__main__":
    main()
