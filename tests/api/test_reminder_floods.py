"""Reminder floods (issue 25, item 1): one account cannot make chime send
without limit.

- A series' reminders fire at most once per --reminder-min-interval
  (default 5 minutes): a sub-daily series keeps its instances, its
  reminders skip the ones that come sooner.
- Each user has a budget of deliveries per hour and per day
  (--deliveries-per-user-hour / -day, default 1000 / 10000): what exceeds
  it is recorded dropped_quota in the outbox, shown to the user
  (GET /v1/me/deliveries?state=dropped_quota) and to the admin, never sent.
  Reminders of events others organize (invitations) have a budget of
  their own, so a flood of invitations cannot crowd out the user's own.
- Stored inbox rows per user are capped (--inbox-max-per-user, default
  10000): the cleanup job prunes the oldest read ones.
- /metrics counts each by reason."""
import re
import time

from chime import BACKEND, main
from test_jobs import sql, wait_for
from test_reminders import FAST, ReminderTest, iso, ms_of, soon


def suppressed(server, reason):
    m = re.search(r'chime_reminders_suppressed_total\{reason="%s"\} (\d+)' % reason, server.get("/metrics").body)
    return int(m.group(1)) if m else None


class FloodTest(ReminderTest):
    """An admin for the class, a user for each test (ReminderTest's)."""

    def event(self, start, token=None, reminders=None, **kw):
        body = dict(summary=kw.pop("summary", "x"), start={"date_time": iso(start)},
                    end={"date_time": iso(start + kw.pop("seconds", 1))},
                    reminders=reminders or [{"method": "push", "minutes_before": 0}], **kw)
        r = self.server.post("/v1/events", body, token=token or self.token)
        self.assertEqual(r.status, 201, r)
        return r.json

    def inbox(self, token=None):
        r = self.server.get("/v1/notifications?limit=1000", token=token or self.token)
        self.assertEqual(r.status, 200, r)
        return r.json["items"]

    def dropped(self, token=None):
        r = self.server.get("/v1/me/deliveries?state=dropped_quota", token=token or self.token)
        self.assertEqual(r.status, 200, r)
        return r.json["items"]


class TestMinInterval(FloodTest):
    server_args = FAST + ["--reminder-min-interval", "3"]

    def test_secondly_series_fires_at_most_every_interval(self):
        start = soon(2)
        ev = self.event(start, recurrence=["RRULE:FREQ=SECONDLY"])
        time.sleep(start - time.time() + 8.5)
        items = self.inbox()
        starts = [ms_of(n["original_start"]) for n in items]
        self.assertGreaterEqual(len(items), 2, items)
        self.assertLessEqual(len(items), 4, items)
        self.assertTrue(all(b - a >= 3000 for a, b in zip(starts, starts[1:])), starts)
        self.assertEqual({n["event_id"] for n in items}, {ev["id"]})
        # The series itself is whole: a listing shows every second.
        r = self.server.get("/v1/events/%s/instances?from=%s&to=%s" % (ev["id"], iso(start), iso(start + 5)),
                            token=self.token)
        self.assertEqual(len(r.json["items"]), 5, r)
        self.assertGreaterEqual(suppressed(self.server, "min_interval"), 1)

    def test_an_edit_does_not_bring_the_next_one_sooner(self):
        start = soon(2)
        ev = self.event(start, recurrence=["RRULE:FREQ=SECONDLY"])
        self.assertTrue(wait_for(lambda: len(self.inbox()) == 1, timeout=10))
        for i in range(3):
            self.assertEqual(self.server.patch("/v1/events/" + ev["id"], {"summary": "e%d" % i},
                                               token=self.token).status, 200)
        time.sleep(1.5)
        self.assertEqual(len(self.inbox()), 1)


class TestMinIntervalDefault(FloodTest):
    """The default, five minutes: a secondly series reminds once in ten seconds."""
    server_args = FAST

    def test_default_interval(self):
        start = soon(2)
        self.event(start, recurrence=["RRULE:FREQ=SECONDLY"])
        time.sleep(start - time.time() + 10)
        self.assertEqual(len(self.inbox()), 1)


class TestHourBudget(FloodTest):
    server_args = FAST + ["--deliveries-per-user-hour", "3"]

    def test_beyond_the_budget_is_recorded_not_sent(self):
        start = soon(2)
        for i in range(5):
            self.event(start, summary="e%d" % i)
        other, other_token = self.server.new_user()
        self.event(start, token=other_token)
        self.assertTrue(wait_for(lambda: len(self.dropped()) == 2, timeout=15), self.dropped())
        self.assertTrue(wait_for(lambda: len(self.inbox()) == 3, timeout=10))
        time.sleep(1)
        self.assertEqual(len(self.inbox()), 3)
        mine = self.dropped()
        self.assertEqual({d["state"] for d in mine}, {"dropped_quota"})
        self.assertTrue(all("hour" in d["last_error"] for d in mine), mine)
        self.assertEqual({d["channel"] for d in mine}, {"inapp"})
        self.assertNotIn("user_id", mine[0])
        # Nobody else sees them; the admin sees them all.
        self.assertEqual(self.dropped(other_token), [])
        self.assertEqual(len(self.inbox(other_token)), 1)
        r = self.server.get("/v1/admin/deliveries?state=dropped_quota", token=self.admin_token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sorted(d["delivery_id"] for d in r.json["items"] if d["user_id"] == self.user["id"]),
                         sorted(d["delivery_id"] for d in mine))
        self.assertEqual(self.server.get("/v1/admin/deliveries?state=dropped_quota", token=self.token).status, 403)
        self.assertGreaterEqual(suppressed(self.server, "hour_quota"), 2)

    def test_bad_state(self):
        for q in ("", "?state=nope", "?state=done"):
            r = self.server.get("/v1/me/deliveries" + q, token=self.token)
            self.assertError(r, 400, field="state")
        self.assertEqual(self.server.get("/v1/me/deliveries?state=dropped_quota").status, 401)


class TestDayBudget(FloodTest):
    server_args = FAST + ["--deliveries-per-user-day", "2"]

    def test_day_budget(self):
        start = soon(2)
        for i in range(4):
            self.event(start, summary="d%d" % i)
        self.assertTrue(wait_for(lambda: len(self.dropped()) == 2, timeout=15), self.dropped())
        self.assertTrue(wait_for(lambda: len(self.inbox()) == 2, timeout=10))
        time.sleep(1)
        self.assertEqual(len(self.inbox()), 2)
        self.assertTrue(all("day" in d["last_error"] for d in self.dropped()))
        self.assertGreaterEqual(suppressed(self.server, "day_quota"), 2)


def vcal_many(n, start, attendee=None):
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(start))
    end = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(start + 60))
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN"]
    for i in range(n):
        lines += ["BEGIN:VEVENT", "UID:flood-%d@test" % i, "DTSTAMP:20260101T000000Z", "DTSTART:" + stamp,
                  "DTEND:" + end, "SUMMARY:f%d" % i] + (["ATTENDEE:mailto:" + attendee] if attendee else []) + [
                  "BEGIN:VALARM", "ACTION:DISPLAY", "TRIGGER:PT0S", "END:VALARM", "END:VEVENT"]
    lines.append("END:VCALENDAR")
    return ("\r\n".join(lines) + "\r\n").encode()


class TestBudgetDefault(FloodTest):
    """The default hourly budget: 1005 reminders due at once for one user,
    1000 delivered, 5 recorded dropped_quota."""
    server_args = FAST

    def test_default_hour_budget(self):
        cal = self.server.post("/v1/calendars", {"summary": "flood"}, token=self.token).json["id"]
        start = soon(6)
        r = self.server.request("POST", "/v1/calendars/%s/import" % cal, raw=vcal_many(1005, start),
                                token=self.token, headers={"Content-Type": "text/calendar"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["imported"], 1005)
        self.assertTrue(wait_for(lambda: len(self.dropped()) == 5, timeout=40), len(self.dropped()))
        self.assertTrue(wait_for(lambda: len(self.inbox()) == 1000, timeout=20))


class TestDayBudgetDefault(FloodTest):
    """The default daily budget, 10000: the user's count for today stands
    at 9998 (written straight into the budget row, as 9998 earlier
    deliveries would have left it); of three more reminders two go out."""
    server_args = FAST

    def test_default_day_budget(self):
        start = soon(3)
        now_ms = start * 1000
        uid = int(self.user["id"], 16)
        sql(self.server.db, "INSERT INTO delivery_budget (user_id, invited, hour_ms, hour_n, day_ms, day_n, asked, "
            "kept) VALUES (%d, 0, %d, 0, %d, 9998, 0, 0)" % (uid, now_ms - now_ms % 3600000, now_ms - now_ms % 86400000))
        for i in range(3):
            self.event(start, summary="d%d" % i)
        self.assertTrue(wait_for(lambda: len(self.dropped()) == 1, timeout=15), self.dropped())
        self.assertTrue(wait_for(lambda: len(self.inbox()) == 2, timeout=10))
        self.assertIn("day", self.dropped()[0]["last_error"])


class TestInvitationBudget(FloodTest):
    """Someone invites the user to five events whose reminders are due a
    second before the user's own. With one budget of 3 the invitations took
    it all and the user's own reminder was dropped; the invitations have a
    budget of their own, so theirs are what is dropped."""
    server_args = FAST + ["--deliveries-per-user-hour", "3"]

    def test_invitations_cannot_spend_the_users_own_budget(self):
        other, other_token = self.server.new_user()
        start = soon(4)
        for i in range(5):
            self.event(start, token=other_token, summary="inv%d" % i, attendees=[{"email": self.user["email"]}])
        self.event(start + 1, summary="mine")
        self.assertTrue(wait_for(lambda: len(self.inbox()) == 4 and len(self.dropped()) == 2, timeout=20),
                        (self.inbox(), self.dropped()))
        self.assertEqual(sorted(n["summary"] for n in self.inbox() if not n["summary"].startswith("inv")), ["mine"])
        for d in self.dropped():
            self.assertIn("invitations", d["last_error"])
        # The organizer's own five are its own budget's business: 3 and 2.
        self.assertTrue(wait_for(lambda: len(self.dropped(other_token)) == 2, timeout=10))
        self.assertNotIn("invitations", self.dropped(other_token)[0]["last_error"])


class TestInvitationBudgetDefault(FloodTest):
    """With the default budget (1000 an hour): 1001 invitations due at once
    leave the user's own reminder, due just after, its full budget."""
    server_args = FAST

    def test_default_invitation_budget(self):
        other, other_token = self.server.new_user()
        cal = self.server.post("/v1/calendars", {"summary": "flood"}, token=other_token).json["id"]
        start = soon(10)
        r = self.server.request("POST", "/v1/calendars/%s/import" % cal,
                                raw=vcal_many(1001, start, attendee=self.user["email"]),
                                token=other_token, headers={"Content-Type": "text/calendar"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["imported"], 1001)
        self.event(start + 1, summary="mine")
        self.assertTrue(wait_for(lambda: len(self.dropped()) == 1, timeout=40), len(self.dropped()))
        self.assertTrue(wait_for(lambda: len(self.inbox_all()) == 1001, timeout=20))
        self.assertIn("mine", [n["summary"] for n in self.inbox_all()])
        self.assertIn("invitations", self.dropped()[0]["last_error"])

    def inbox_all(self):
        """Every page of the inbox (a page holds at most 1000)."""
        items, after = [], ""
        while True:
            r = self.server.get("/v1/notifications?limit=1000" + ("&after=" + after if after else ""),
                                token=self.token)
            self.assertEqual(r.status, 200, r)
            items += r.json["items"]
            if not r.json["items"] or not r.json.get("next"):
                return items
            after = r.json["next"]


class TestBudgetRowsPruned(FloodTest):
    """notify.cleanup deletes budget rows of days gone, each of a user's
    two on its own: a stale row for invitations goes, the current row for
    the user's own events stays."""
    server_args = FAST

    def test_cleanup_prunes_budget_rows_of_days_gone(self):
        uid = int(self.user["id"], 16)
        now_ms = int(time.time() * 1000)
        day = now_ms - now_ms % 86400000
        sql(self.server.db, "INSERT INTO delivery_budget (user_id, invited, hour_ms, hour_n, day_ms, day_n, asked, "
            "kept) VALUES (%d, 0, %d, 1, %d, 1, 1, 1), (%d, 1, 0, 5, %d, 5, 5, 5)" % (
                uid, now_ms - now_ms % 3600000, day, uid, day - 2 * 86400000))
        r = self.server.post("/v1/admin/jobs/notify.cleanup/run", token=self.admin_token)
        self.assertEqual(r.status, 202, r)
        left = lambda: sorted(int(x[0]) for x in sql(self.server.db, "SELECT invited FROM delivery_budget "
                                                                   "WHERE user_id = %d" % uid))
        self.assertTrue(wait_for(lambda: left() == [0], timeout=15), left())


class TestInboxCap(FloodTest):
    server_args = FAST + ["--inbox-max-per-user", "3"]

    def test_cleanup_prunes_oldest_read_rows(self):
        start = soon(2)
        for i in range(6):
            self.event(start + i % 2, summary="n%d" % i)
        self.assertTrue(wait_for(lambda: len(self.inbox()) == 6, timeout=15))
        items = self.inbox()
        # Read the first four; the two unread stay whatever the cap.
        self.assertEqual(self.server.post("/v1/notifications/read", {"up_to": self.server.get(
            "/v1/notifications?limit=4", token=self.token).json["next"]}, token=self.token).status, 200)
        other, other_token = self.server.new_user()
        self.event(soon(1), token=other_token)
        self.assertTrue(wait_for(lambda: len(self.inbox(other_token)) == 1, timeout=10))
        self.server.post("/v1/notifications/read", {"up_to": self.server.get(
            "/v1/notifications", token=other_token).json["next"]}, token=other_token)
        before = suppressed(self.server, "inbox_cap") or 0
        r = self.server.post("/v1/admin/jobs/notify.cleanup/run", token=self.admin_token)
        self.assertEqual(r.status, 202, r)
        self.assertTrue(wait_for(lambda: len(self.inbox()) == 3, timeout=15), self.inbox())
        self.assertEqual([n["id"] for n in self.inbox()], [n["id"] for n in items[3:]])
        self.assertEqual(len(self.inbox(other_token)), 1)
        self.assertEqual(suppressed(self.server, "inbox_cap") - before, 3)


class TestInboxCapDefault(FloodTest):
    """The default cap, 10000 rows: rows written straight into the
    database stand for months of reminders."""
    server_args = FAST

    def test_default_cap(self):
        uid = int(self.user["id"], 16)
        sql(self.server.db, "INSERT INTO notifications (user_id, delivery_id, event_id, summary, original_start_ms, "
            "due_ms, fired_ms, late, method, read, created_ms) SELECT %d, 'bulk' || k, 1, 's', k, k, k, 0, 'push', "
            "CASE WHEN k < 10003 THEN 1 ELSE 0 END, k FROM (%s) t" % (uid, (
                "SELECT generate_series(0, 10009) AS k" if BACKEND == "pg" else
                "WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM c WHERE k < 10009) SELECT k FROM c")))
        r = self.server.post("/v1/admin/jobs/notify.cleanup/run", token=self.admin_token)
        self.assertEqual(r.status, 202, r)
        count = lambda: int(sql(self.server.db, "SELECT count(*) FROM notifications WHERE user_id = %d" % uid)[0][0])
        self.assertTrue(wait_for(lambda: count() == 10000, timeout=30), count())
        unread = int(sql(self.server.db, "SELECT count(*) FROM notifications WHERE user_id = %d AND read = 0"
                         % uid)[0][0])
        self.assertEqual(unread, 7)


class TestDeliveriesKept(FloodTest):
    """Finished deliveries go after --deliveries-keep-days (default 30):
    a delivery made here is aged by hand; pending ones and younger ones
    stay, and so does the inbox row."""
    server_args = FAST

    def test_default_keeps_thirty_days(self):
        self.event(soon(1))
        self.assertTrue(wait_for(lambda: len(self.inbox()) == 1, timeout=10))
        uid, day = int(self.user["id"], 16), 86400000
        now = int(time.time() * 1000)
        rows = sql(self.server.db, "SELECT id FROM deliveries WHERE user_id = %d AND state = 'done'" % uid)
        self.assertEqual(len(rows), 1)
        sql(self.server.db, "UPDATE deliveries SET updated_ms = %d WHERE id = '%s'" % (now - 31 * day, rows[0][0]))
        for name, state, age in (("young", "dead", 29), ("waiting", "pending", 400), ("old-dropped", "dropped_quota", 31)):
            sql(self.server.db, "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, endpoint_id, "
                "summary, occurrence_ms, due_ms, late, state, attempts, next_attempt_ms, created_ms, updated_ms) "
                "VALUES ('%s', 1, 1, %d, 'webhook', 0, 's', 0, 0, 0, '%s', 0, %d, 0, %d)"
                % (name, uid, state, now + 365 * day, now - age * day))
        r = self.server.post("/v1/admin/jobs/notify.cleanup/run", token=self.admin_token)
        self.assertEqual(r.status, 202, r)
        left = lambda: sorted(str(x[0]) for x in sql(self.server.db, "SELECT id FROM deliveries WHERE user_id = %d"
                                                     % uid))
        self.assertTrue(wait_for(lambda: left() == ["waiting", "young"], timeout=15), left())
        self.assertEqual(len(self.inbox()), 1)


if __name__ == "__main__":
    main()
