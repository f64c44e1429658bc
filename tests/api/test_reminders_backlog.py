"""A backlog goes out oldest first across the whole node, whatever each
shard's load. While the server is down, a busy organizer's reminders
(events with 200 attendees: ~2,000 due a second) and a quiet organizer's
(one a second) fall due, in two different shards. After the restart, no
reminder goes out ahead of one of the other shard that fell due more than
two seconds before it: the quiet shard's are not all sent first, and the
busy shard's are not starved behind them (a node that took a fixed number
of rows a shard per pass did the one and, when it stayed behind, the
other: its busiest shards' rows came out a minute late at 1M/min).
Everything is delivered, once."""
import datetime
import os
import time
import unittest

from chime import Server, fresh_db
from test_jobs import sql, wait_for

ARGS = ["--reminder-window", "1000", "--access-log", "off", "--threads", "1"]
ATTENDEES, BUSY_EVENTS, QUIET_EVENTS, SPREAD = 200, 80, 8, 8  # seconds
SLACK_MS = 2000


def iso(t):
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def one(db, query):
    return int(sql(db, query)[0][0])


def event(s, token, summary, start, attendees):
    r = s.post("/v1/events", {"summary": summary, "start": {"date_time": iso(start)},
                              "end": {"date_time": iso(start + 60)},
                              "attendees": [{"email": e} for e in attendees],
                              "reminders": [{"method": "push", "minutes_before": 0}]}, token=token)
    assert r.status == 201, r
    return r.json


class BacklogTest(unittest.TestCase):
    def setUp(self):
        self.db = fresh_db()
        self.server = Server(db=self.db, args=ARGS).start()

    def tearDown(self):
        if self.server.proc is not None:
            self.server.stop()

    def test_oldest_first_across_shards(self):
        s = self.server
        _, busy = s.new_user()
        emails = [s.signup()["email"] for _ in range(ATTENDEES)]
        first_due = int(time.time()) + 40
        event(s, busy, "busy 0", first_due, emails)
        shard = "SELECT DISTINCT shard FROM reminders WHERE event_id IN (SELECT id FROM events WHERE summary = '%s')"
        for _ in range(5):  # an organizer of another shard (shards are hashed from the user id)
            _, quiet = s.new_user()
            ev = event(s, quiet, "quiet 0", first_due, [])
            # (reminder rows are written by the scanner, moments later)
            shards = wait_for(lambda: sql(self.db, shard % "busy 0") and sql(self.db, shard % "quiet 0") and
                              (one(self.db, shard % "busy 0"), one(self.db, shard % "quiet 0")))
            self.assertTrue(shards)
            if shards[0] != shards[1]:
                break
            self.assertEqual(s.delete("/v1/events/" + ev["id"], token=quiet).status, 204)
        for i in range(1, BUSY_EVENTS):
            event(s, busy, "busy %d" % i, first_due + i * SPREAD // BUSY_EVENTS, emails)
        for i in range(1, QUIET_EVENTS):
            event(s, quiet, "quiet %d" % i, first_due + i * SPREAD // QUIET_EVENTS, [])
        self.assertLess(time.time(), first_due - 2, "setup took too long for the chosen due time")
        total = BUSY_EVENTS * (ATTENDEES + 1) + QUIET_EVENTS
        self.assertTrue(wait_for(lambda: one(self.db, "SELECT count(*) FROM reminders") == total))
        self.assertEqual(s.stop(), 0)
        self.assertEqual(one(self.db, "SELECT count(DISTINCT shard) FROM reminders"), 2)
        time.sleep(max(0, first_due + SPREAD + 1 - time.time()))  # all of it due while down

        s = self.server = Server(db=self.db, args=ARGS).start()
        done = wait_for(lambda: one(self.db, "SELECT count(*) FROM notifications") >= total, timeout=90, step=0.5)
        self.assertTrue(done, "delivered %d of %d" % (one(self.db, "SELECT count(*) FROM notifications"), total))
        self.assertEqual(one(self.db, "SELECT count(DISTINCT delivery_id) FROM notifications"), total)
        # The inbox's seq is the order of delivery. For every pair from the
        # two shards: the one due more than SLACK_MS earlier went out first.
        rows = [(int(r[0]), int(r[1]), int(r[2]) == 1) for r in sql(
            self.db, "SELECT n.seq, n.due_ms, CASE WHEN e.summary LIKE 'quiet %' THEN 1 ELSE 0 END "
                     "FROM notifications n JOIN events e ON e.id = n.event_id")]
        quiet_rows = [r for r in rows if r[2]]
        busy_rows = [r for r in rows if not r[2]]
        self.assertEqual(len(quiet_rows), QUIET_EVENTS)
        ahead = [(q[1] - b[1], "quiet" if q[0] < b[0] else "busy") for q in quiet_rows for b in busy_rows
                 if (q[0] < b[0] and q[1] - b[1] > SLACK_MS) or (b[0] < q[0] and b[1] - q[1] > SLACK_MS)]
        if os.environ.get("KEEP_DB"):
            print(self.db)
        self.assertEqual(ahead[:5], [], "%d deliveries went out ahead of ones due over %d ms before them "
                                        "(due apart, which shard first)" % (len(ahead), SLACK_MS))


if __name__ == "__main__":
    unittest.main(verbosity=2)
